// The bookkeeping every mode's proxier does around its own rule writing: when a full sync is
// due (asked for, after a failure, or upstream's hourly FullSyncPeriod), what the Node says
// (labels for topology; podCIDRs for the NodeCIDR local-traffic detector), and what follows a
// successful sync (network programming latency, the no-local-endpoints gauges, the last-sync
// timestamp, service health, the conntrack reconciler).

import type { ProxyConfig } from "../config/types.ts";
import type { NodeInfo } from "../k8s/node-info.ts";
import type { Logger } from "../log/logger.ts";
import { type Clock, realClock } from "../util/clock.ts";
import type { IPFamily } from "../util/net/family.ts";
import { runStepsPaced, TimeSlice } from "../util/time-slice.ts";
import { type ConntrackCleaner, ConntrackReconciler, desiringUDPState } from "./conntrack-cleanup.ts";
import { type LocalTrafficDetector, localDetectorFromConfig } from "./local-detect.ts";
import { familyMetrics, type Metrics } from "./metrics/metrics.ts";
import { FULL_SYNC_PERIOD_MS, type SyncInput } from "./proxier.ts";
import { reportServiceHealth, type ServiceHealthSink } from "./service-health-sink.ts";
import type { ServiceKey } from "./types.ts";

/** How often a conntrack reconcile pass runs when no change asked for one (upstream's syncPeriod). */
export const RECONCILE_PERIOD_MS = 30_000;

export interface SyncBookkeepingDeps {
  readonly family: IPFamily;
  readonly config: ProxyConfig;
  readonly metrics: Metrics;
  readonly log: Logger;
  /** A fixed detector; by default derived from config (NodeCIDR: from the Node's podCIDRs). */
  readonly localDetector?: LocalTrafficDetector;
  readonly healthCheck?: ServiceHealthSink;
  readonly conntrack?: ConntrackCleaner;
  /** Wall-clock milliseconds, for network programming latency. */
  readonly wallClock?: () => number;
  /** Times the conntrack reconciler; the real clock when absent. */
  readonly clock?: Clock;
}

/** Services whose traffic policy found no local endpoint, per policy (a gauge each). */
export interface NoLocalEndpoints {
  readonly internal: number;
  readonly external: number;
}

function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => a[k] === b[k]);
}

export class SyncBookkeeping {
  private fullSyncRequested = true;
  private lastFullSync = Number.NEGATIVE_INFINITY;
  private labels: Readonly<Record<string, string>> = {};
  private localDetector: LocalTrafficDetector;

  private readonly deps: SyncBookkeepingDeps;
  private reconciler: ConntrackReconciler | undefined;
  private lastReconcile = Number.NEGATIVE_INFINITY;

  constructor(deps: SyncBookkeepingDeps) {
    // Idempotent when the mode already handed its proxier a family view.
    this.deps = { ...deps, metrics: familyMetrics(deps.metrics, deps.family) };
    this.localDetector = deps.localDetector ?? this.configDetector(undefined);
  }

  /** The Node's labels as last observed (topology hints). */
  get nodeLabels(): Readonly<Record<string, string>> {
    return this.labels;
  }

  get detector(): LocalTrafficDetector {
    return this.localDetector;
  }

  /** The next sync must be a full one. */
  requestFullSync(): void {
    this.fullSyncRequested = true;
  }

  /** A full sync was asked for (or the last sync failed), whatever the period says. */
  get fullSyncNeeded(): boolean {
    return this.fullSyncRequested;
  }

  /** Upstream's FullSyncPeriod has passed since the last full sync. */
  periodicFullSyncDue(now: number): boolean {
    return now - this.lastFullSync >= FULL_SYNC_PERIOD_MS;
  }

  /** A sync's writes went through: what was asked for is done. */
  synced(fullSync: boolean, now: number): void {
    this.fullSyncRequested = false;
    if (fullSync) this.lastFullSync = now;
  }

  /**
   * Takes in the Node; true when its labels or (NodeCIDR, no fixed detector) its podCIDRs
   * changed what "local" or topology means, which rewrites every service.
   */
  observeNode(node: NodeInfo | undefined): boolean {
    let changed = false;
    const labels = node?.labels ?? {};
    if (!sameLabels(labels, this.labels)) {
      this.labels = { ...labels };
      changed = true;
    }
    if (this.deps.localDetector || this.deps.config.detectLocalMode !== "NodeCIDR") return changed;
    const next = this.configDetector(node);
    if (JSON.stringify(next) !== JSON.stringify(this.localDetector)) {
      this.localDetector = next;
      changed = true;
    }
    return changed;
  }

  /**
   * After a successful sync: latency of the changes it programmed, the gauges, service health,
   * then a conntrack reconcile pass, started in the background. `unserved`: Services the sync
   * left out of the kernel, whose health checks then report no local endpoint.
   */
  async afterSuccess(
    input: SyncInput,
    noLocal: NoLocalEndpoints,
    unserved?: ReadonlySet<ServiceKey>,
  ): Promise<void> {
    const { metrics: m, log } = this.deps;
    const wallNow = (this.deps.wallClock ?? Date.now)();
    for (const [service, times] of input.endpointsUpdate.lastChangeTriggerTimes) {
      for (const t of times) {
        const latency = Math.max(0, wallNow - t.getTime()) / 1000;
        m.networkProgrammingLatency.observe(latency);
        log.v(4).info("Network programming", { endpoint: service, elapsed: latency });
      }
    }
    m.syncProxyRulesNoLocalEndpointsTotal.set({ traffic_policy: "internal" }, noLocal.internal);
    m.syncProxyRulesNoLocalEndpointsTotal.set({ traffic_policy: "external" }, noLocal.external);
    m.syncProxyRulesLastTimestamp.set(wallNow / 1000);
    await reportServiceHealth(this.deps.healthCheck, input, log, unserved);
    const conntrack = this.deps.conntrack;
    if (conntrack && this.reconcileDue(input)) {
      this.lastReconcile = (this.deps.clock ?? realClock).now();
      this.reconciler ??= new ConntrackReconciler(conntrack, {
        metrics: m,
        log,
        clock: this.deps.clock ?? realClock,
      });
      // The desired state is made here, paced, while the sync holds the maps still; the pass
      // is started, not awaited: the flows of a big table are listed after the sync returns.
      const desired = await runStepsPaced(
        desiringUDPState(
          input.services,
          input.endpoints,
          this.deps.family,
          input.serviceUpdate.deletedUDPClusterIPs,
        ),
        new TimeSlice(),
      );
      this.reconciler.request({ family: this.deps.family, desired });
    }
  }

  /**
   * A reconcile pass lists the whole UDP table (about a second of the tool's time at 100,000
   * flows), so it follows the syncs that changed a Service or its endpoints, and otherwise runs
   * at most every RECONCILE_PERIOD_MS, which catches what a missed event left behind.
   */
  private reconcileDue(input: SyncInput): boolean {
    if (input.serviceUpdate.updatedServices.size > 0 || input.endpointsUpdate.updatedServices.size > 0)
      return true;
    return (this.deps.clock ?? realClock).now() - this.lastReconcile >= RECONCILE_PERIOD_MS;
  }

  /** A sync's latency in the histograms (all syncs, and full or partial) and upstream's log line. */
  observeDuration(seconds: number, fullSync: boolean): void {
    const m = this.deps.metrics;
    m.syncProxyRulesLatency.observe(seconds);
    (fullSync ? m.syncFullProxyRulesLatency : m.syncPartialProxyRulesLatency).observe(seconds);
    this.deps.log.v(2).info("SyncProxyRules complete", { elapsed: `${seconds}s` });
  }

  private configDetector(node: NodeInfo | undefined): LocalTrafficDetector {
    return localDetectorFromConfig(this.deps.config, node?.podCIDRs ?? [], this.deps.family, this.deps.log);
  }
}
