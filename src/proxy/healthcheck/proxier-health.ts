// The proxier's health as upstream's ProxierHealthServer defines it: a proxier is unhealthy
// when a change it was told about (queuedUpdate) has waited longer than healthTimeout for a
// successful sync (updated). Load balancers read this through /healthz, the kubelet through
// /livez, and the per-service health checks fold it into their answers. Since 1.33 the bodies
// are JSON with each IP family's own state.

import { type Clock, realClock } from "../../util/clock.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { formatRFC3339Nano } from "./go-time.ts";

/** The taint the cluster autoscaler puts on a node it is about to delete. */
export const TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler";

/** The parts of a Node that decide whether load balancers should keep using it. */
export interface NodeEligibilityInput {
  metadata?: { deletionTimestamp?: string | Date | null };
  spec?: { taints?: readonly { key?: string }[] | null };
}

export interface ProxierHealthOptions {
  healthTimeoutMs: number;
  clock?: Clock;
}

export interface HealthState {
  healthy: boolean;
  /** Newest successful sync, or on failure the failing family's last sync; undefined: never. */
  lastUpdated: number | undefined;
  currentTime: number;
}

export interface HealthResponse {
  status: 200 | 503;
  body: string;
}

/** What the service health checks need: the proxier's health, without node eligibility. */
export interface ProxierHealthChecker {
  isHealthy(): boolean;
}

export class ProxierHealth implements ProxierHealthChecker {
  private readonly clock: Clock;
  private readonly timeoutMs: number;
  private readonly lastUpdated = new Map<IPFamily, number>();
  private readonly oldestPendingQueued = new Map<IPFamily, number>();
  // Eligible until a Node event says otherwise, so a starting proxy is not reported unhealthy.
  private eligible = true;

  constructor(opts: ProxierHealthOptions) {
    this.clock = opts.clock ?? realClock;
    this.timeoutMs = opts.healthTimeoutMs;
  }

  /** A Service or EndpointSlice change for this family is waiting to be synced. */
  queuedUpdate(family: IPFamily): void {
    // Only the oldest pending change counts: a steady stream of changes must not hide a stall.
    if (!this.oldestPendingQueued.has(family)) this.oldestPendingQueued.set(family, this.clock.now());
  }

  /** The proxier for this family synced successfully. */
  updated(family: IPFamily): void {
    this.oldestPendingQueued.delete(family);
    this.lastUpdated.set(family, this.clock.now());
  }

  isHealthy(): boolean {
    return this.health().healthy;
  }

  /**
   * Upstream's rule, including its quirk: only families that have synced at least once are
   * judged, so a proxier is healthy while starting up even with changes already queued.
   */
  health(): HealthState {
    const currentTime = this.clock.now();
    let newest: number | undefined;
    for (const [family, updatedAt] of this.lastUpdated) {
      if (newest === undefined || updatedAt > newest) newest = updatedAt;
      const queuedAt = this.oldestPendingQueued.get(family);
      if (queuedAt !== undefined && currentTime - queuedAt >= this.timeoutMs) {
        return { healthy: false, lastUpdated: updatedAt, currentTime };
      }
    }
    return { healthy: true, lastUpdated: newest, currentTime };
  }

  /** A Node being deleted, or tainted for deletion by the autoscaler, is not eligible. */
  syncNode(node: NodeEligibilityInput): void {
    const deleting = node.metadata?.deletionTimestamp != null && node.metadata.deletionTimestamp !== "";
    const tainted = (node.spec?.taints ?? []).some((t) => t.key === TO_BE_DELETED_TAINT);
    this.eligible = !deleting && !tainted;
  }

  nodeEligible(): boolean {
    return this.eligible;
  }

  /** /healthz: proxier health and node eligibility. */
  healthzResponse(): HealthResponse {
    const eligible = this.eligible;
    const state = this.health();
    const ok = state.healthy && eligible;
    return { status: ok ? 200 : 503, body: this.body(state, ok, eligible) };
  }

  /** /livez: proxier health only; a node being drained must not get kube-proxy restarted. */
  livezResponse(): HealthResponse {
    const state = this.health();
    return { status: state.healthy ? 200 : 503, body: this.body(state, state.healthy) };
  }

  /** Each family's last successful sync and whether a change has waited too long for one. */
  private familyStatus(now: number): Record<string, { lastUpdated: string; healthy: boolean }> {
    const out: Record<string, { lastUpdated: string; healthy: boolean }> = {};
    for (const family of [...this.lastUpdated.keys()].sort()) {
      const queuedAt = this.oldestPendingQueued.get(family);
      out[family] = {
        lastUpdated: formatRFC3339Nano(this.lastUpdated.get(family)),
        healthy: queuedAt === undefined || now - queuedAt < this.timeoutMs,
      };
    }
    return out;
  }

  private body(state: HealthState, ok: boolean, eligible?: boolean): string {
    // Older releases reported the last sync-loop run, which was always recent while healthy;
    // upstream keeps that meaning by echoing the current time whenever it answers 200.
    const lastUpdated = ok ? state.currentTime : state.lastUpdated;
    const status = this.familyStatus(state.currentTime);
    return JSON.stringify({
      lastUpdated: formatRFC3339Nano(lastUpdated),
      currentTime: formatRFC3339Nano(state.currentTime),
      ...(eligible === undefined ? {} : { nodeEligible: eligible }),
      healthy: ok,
      ...(Object.keys(status).length > 0 ? { status } : {}),
    });
  }
}
