// What a change tracker reports: upstream's kubeproxy_sync_proxy_rules_{service,endpoint}_changes_
// {total,pending}. The trackers take them through their options (no globals), as two small
// shapes so a tracker does not depend on the metrics library.

import type { Metrics } from "./metrics/metrics.ts";

export interface ChangeMetrics {
  /** Every update the tracker accepts (upstream's *_changes_total). */
  readonly total: { inc(): void };
  /** Changes waiting for the next sync (upstream's *_changes_pending); 0 after a checkout. */
  readonly pending: { inc(): void; set(value: number): void };
}

export interface TrackerMetrics {
  readonly services: ChangeMetrics;
  readonly endpoints: ChangeMetrics;
}

/** The process registry's change metrics, in the shape the trackers take. */
export function trackerMetrics(m: Metrics): TrackerMetrics {
  return {
    services: { total: m.serviceChangesTotal, pending: m.serviceChangesPending },
    endpoints: { total: m.endpointChangesTotal, pending: m.endpointChangesPending },
  };
}
