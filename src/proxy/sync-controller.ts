// Turns cluster events into coalesced syncs. Changes go to the trackers; nothing is synced
// until both Services and EndpointSlices have been listed in full (upstream's servicesSynced
// && endpointSlicesSynced), so a restart never programs a partial view and drops traffic.

import type { EffectiveFeatureGates } from "../config/feature-gates.ts";
import { type EventRecorder, nullRecorder } from "../k8s/events.ts";
import { type NodeInfo, nodeInfo } from "../k8s/node-info.ts";
import type { EndpointSliceObject, NodeObject, ServiceCIDRObject, ServiceObject } from "../k8s/objects.ts";
import type { ClusterEventHandler } from "../k8s/source.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import type { Clock } from "../util/clock.ts";
import { runStepsPaced, TimeSlice } from "../util/time-slice.ts";
import type { TrackerMetrics } from "./change-metrics.ts";
import type { SyncHistory } from "./debug-state/history.ts";
import type { ParsedSlice } from "./endpoint-slice.ts";
import { EndpointsMap } from "./endpoints-map.ts";
import { EndpointsChangeTracker } from "./endpoints-tracker.ts";
import { ProblemList, ProblemReporter } from "./problems.ts";
import type { Proxier, SyncInput } from "./proxier.ts";
import { BoundedFrequencyRunner } from "./runner.ts";
import { ServiceCIDRSet } from "./service-cidrs.ts";
import { ServiceMap } from "./service-map.ts";
import { ServiceChangeTracker } from "./service-tracker.ts";
import type { ServiceKey } from "./types.ts";

export interface SyncControllerOptions {
  readonly nodeName: string;
  readonly proxier: Proxier;
  readonly minSyncPeriodMs: number;
  readonly syncPeriodMs: number;
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  readonly clock?: Clock;
  /**
   * Told when a sync is requested and when one succeeds (the healthz server's inputs), and
   * before the first sync runs (both initial lists are in by then).
   */
  readonly hooks?: { queued(): void; synced(): void; beforeFirstSync?(): void };
  /** The run's feature gates, for what the trackers read from objects; v1.31 defaults if absent. */
  readonly featureGates?: EffectiveFeatureGates;
  /** The change metrics the trackers feed (see trackerMetrics). */
  readonly metrics?: TrackerMetrics;
  /** Where each sync is recorded (/debug/state). */
  readonly history?: SyncHistory;
}

export class SyncController implements ClusterEventHandler {
  readonly services: ServiceMap;
  readonly endpoints = new EndpointsMap();
  private readonly serviceTracker: ServiceChangeTracker;
  private readonly endpointsTracker: EndpointsChangeTracker;
  private readonly runner: BoundedFrequencyRunner;
  private readonly log: Logger;
  private servicesSynced = false;
  private endpointSlicesSynced = false;
  private node: NodeInfo | undefined;
  /** Wrong-typed Node fields are logged once, not on every status heartbeat (no events: upstream has none). */
  private readonly nodeProblems: ProblemReporter;
  private readonly serviceCIDRs: ServiceCIDRSet;
  private syncs = 0;
  private readonly firstSyncWaiters: (() => void)[] = [];

  constructor(private readonly opts: SyncControllerOptions) {
    this.log = opts.logger ?? nullLogger;
    this.nodeProblems = new ProblemReporter(this.log, nullRecorder, "ReadNode");
    const shared = { logger: this.log, ...(opts.recorder ? { recorder: opts.recorder } : {}) };
    const m = opts.metrics;
    this.services = new ServiceMap(shared);
    this.serviceTracker = new ServiceChangeTracker({
      ...shared,
      ...(opts.featureGates ? { featureGates: opts.featureGates } : {}),
      ...(m ? { metrics: m.services } : {}),
    });
    this.endpointsTracker = new EndpointsChangeTracker({
      nodeName: opts.nodeName,
      ...shared,
      ...(m ? { metrics: m.endpoints } : {}),
    });
    this.serviceCIDRs = new ServiceCIDRSet({
      logger: this.log,
      ...(opts.recorder ? { recorder: opts.recorder } : {}),
    });
    this.runner = new BoundedFrequencyRunner({
      name: "sync-runner",
      fn: () => this.syncNow(),
      minIntervalMs: opts.minSyncPeriodMs,
      maxIntervalMs: opts.syncPeriodMs,
      burstRuns: 2,
      logger: this.log,
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
  }

  /** Both initial lists have been delivered: syncing now reflects the whole cluster. */
  get initialized(): boolean {
    return this.servicesSynced && this.endpointSlicesSynced;
  }

  get syncCount(): number {
    return this.syncs;
  }

  onServiceChange(previous: ServiceObject | undefined, current: ServiceObject | undefined): void {
    if (this.serviceTracker.serviceChanged(previous, current) && this.initialized) this.requestSync();
  }

  onEndpointSliceChange(slice: EndpointSliceObject, removed: boolean): void {
    if (this.endpointsTracker.endpointSliceChanged(slice, removed) && this.initialized) this.requestSync();
  }

  onNodeChange(node: NodeObject | undefined): void {
    const problems = new ProblemList({ kind: "Node", name: this.opts.nodeName });
    const next = node ? nodeInfo(node, problems) : undefined;
    this.nodeProblems.report("node", problems);
    const labelsChanged = JSON.stringify(next?.labels ?? {}) !== JSON.stringify(this.node?.labels ?? {});
    this.node = next;
    // Labels drive topology; other Node changes (status heartbeats) need no sync.
    if (labelsChanged && this.initialized) this.requestSync();
  }

  onServiceCIDRChange(cidr: ServiceCIDRObject, removed: boolean): void {
    if (this.serviceCIDRs.update(cidr, removed) && this.initialized) this.requestSync();
  }

  onServicesSynced(): void {
    this.servicesSynced = true;
    this.requestFirstSync();
  }

  onEndpointSlicesSynced(): void {
    this.endpointSlicesSynced = true;
    this.requestFirstSync();
  }

  private requestFirstSync(): void {
    if (!this.initialized) return;
    this.log.info("Services and EndpointSlices listed; syncing");
    this.requestSync();
  }

  /** Queues a sync (coalesced and rate-limited by the runner). */
  requestSync(): void {
    this.opts.hooks?.queued();
    this.runner.run();
  }

  /** Services with changes the next sync applies: Service changes, and endpoint changes. */
  pendingChanges(): { readonly services: Set<ServiceKey>; readonly endpoints: Set<ServiceKey> } {
    return {
      services: this.serviceTracker.pendingChanges(),
      endpoints: this.endpointsTracker.pendingChanges(),
    };
  }

  /** Every EndpointSlice as the trackers hold it (parsed; pending changes included). */
  endpointSlices(): Iterable<{ service: ServiceKey; name: string; slice: ParsedSlice }> {
    return this.endpointsTracker.latestSlices();
  }

  /** Starts the periodic and on-demand sync loop. */
  start(): void {
    this.runner.start();
  }

  async stop(): Promise<void> {
    await this.runner.stop();
  }

  /** Resolves after the first successful sync. */
  firstSync(): Promise<void> {
    return this.syncs > 0 ? Promise.resolve() : new Promise((resolve) => this.firstSyncWaiters.push(resolve));
  }

  /**
   * One sync: fold pending changes into the maps and hand them to the proxier. Before both
   * initial lists are in, it does nothing (a partial view must never be programmed).
   */
  async syncNow(): Promise<void> {
    if (!this.initialized) {
      this.log.v(2).info("Not syncing until Services and EndpointSlices have been listed");
      return;
    }
    if (this.syncs === 0) this.opts.hooks?.beforeFirstSync?.();
    // Open from the start: folding a Service of 100,000 ports into the maps is part of the sync.
    const record = this.opts.history?.begin();
    try {
      // Paced: that fold takes about half a second, which the servers must not wait for.
      const slice = new TimeSlice();
      const serviceUpdate = await runStepsPaced(this.services.updating(this.serviceTracker), slice);
      const endpointsUpdate = await runStepsPaced(
        this.endpoints.updating(this.endpointsTracker, this.services),
        slice,
      );
      record?.changes({
        services: serviceUpdate.updatedServices.size,
        endpoints: endpointsUpdate.updatedServices.size,
      });
      const input: SyncInput = {
        services: this.services,
        endpoints: this.endpoints,
        serviceUpdate,
        endpointsUpdate,
        node: this.node,
        nodeName: this.opts.nodeName,
        serviceCIDRs: this.serviceCIDRs.cidrs,
        ...(record ? { note: record } : {}),
      };
      await this.opts.proxier.sync(input);
    } catch (err) {
      record?.finish({ error: err });
      throw err;
    }
    record?.finish();
    this.syncs++;
    this.opts.hooks?.synced();
    for (const resolve of this.firstSyncWaiters.splice(0)) resolve();
  }
}
