// kube-proxy's Prometheus metrics, with upstream's (v1.37) names, labels and types (subsystem
// "kubeproxy"), so existing dashboards and alerts keep working. One registry per process; tests
// make their own. Since 1.33 the per-sync families carry an ip_family label: each family's
// proxier writes through familyMetrics(), which fills it in.
// component-base prefixes every help text with the metric's stability level ("[ALPHA] ...");
// alpha() does the same so HELP lines read as upstream's. The nfacct counters are scrape-time
// collectors registered by iptables mode (nfacct-collector.ts), not stored values.

import { Counter, exponentialBuckets, Gauge, Histogram, type Registry } from "prom-client";
import type { ProxyMode } from "../../config/types.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { KubeRegistry } from "./registry.ts";

/** Help text as component-base annotates an ALPHA metric. */
export const alpha = (help: string) => `[ALPHA] ${help}`;
/** Help text as component-base annotates a BETA metric. */
export const beta = (help: string) => `[BETA] ${help}`;

/** Upstream's sync-duration buckets: 1 ms doubling 14 times (~16 s). */
const syncBuckets = exponentialBuckets(0.001, 2, 15);
/** Network programming latency buckets: upstream merges its ranges after a leading 0 bucket. */
const latencyBuckets = [
  0, 0.25, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
  27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,
  54, 55, 56, 57, 58, 59, 60, 65, 70, 75, 80, 85, 90, 95, 100, 105, 110, 115, 120, 150, 180, 210, 240, 270,
  300,
];

const FAMILY = ["ip_family"] as const;

/**
 * The kubeproxy_* metrics. As upstream's RegisterMetrics(mode), the mode-specific families are
 * registered only in their modes (ipvs keeps the restore-failure counter; full/partial latency
 * is iptables and nftables; the conntrack reconciler's are every Linux mode); the objects exist
 * in every mode so the proxiers can write to them unconditionally.
 */
export function createMetrics(registry: Registry = new KubeRegistry(), mode: ProxyMode = "iptables") {
  const r = [registry];
  const iptablesOnly = mode === "iptables" ? r : [];
  const withIptables = mode === "iptables" || mode === "ipvs" ? r : [];
  const nftablesOnly = mode === "nftables" ? r : [];
  const fullAndPartial = mode === "iptables" || mode === "nftables" ? r : [];
  return {
    registry,
    syncProxyRulesLatency: new Histogram({
      name: "kubeproxy_sync_proxy_rules_duration_seconds",
      help: alpha("SyncProxyRules latency in seconds"),
      buckets: syncBuckets,
      labelNames: FAMILY,
      registers: r,
    }),
    syncFullProxyRulesLatency: new Histogram({
      name: "kubeproxy_sync_full_proxy_rules_duration_seconds",
      help: alpha("SyncProxyRules latency in seconds for full resyncs"),
      buckets: syncBuckets,
      labelNames: FAMILY,
      registers: fullAndPartial,
    }),
    syncPartialProxyRulesLatency: new Histogram({
      name: "kubeproxy_sync_partial_proxy_rules_duration_seconds",
      help: alpha("SyncProxyRules latency in seconds for partial resyncs"),
      buckets: syncBuckets,
      labelNames: FAMILY,
      registers: fullAndPartial,
    }),
    syncProxyRulesLastTimestamp: new Gauge({
      name: "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
      help: alpha("The last time proxy rules were successfully synced"),
      labelNames: FAMILY,
      registers: r,
    }),
    syncProxyRulesLastQueuedTimestamp: new Gauge({
      name: "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
      help: alpha("The last time a sync of proxy rules was queued"),
      labelNames: FAMILY,
      registers: r,
    }),
    networkProgrammingLatency: new Histogram({
      name: "kubeproxy_network_programming_duration_seconds",
      help: alpha("In Cluster Network Programming Latency in seconds"),
      buckets: latencyBuckets,
      labelNames: FAMILY,
      registers: r,
    }),
    iptablesRestoreFailures: new Counter({
      name: "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
      help: alpha("Cumulative proxy iptables restore failures"),
      labelNames: FAMILY,
      registers: withIptables,
    }),
    iptablesPartialRestoreFailures: new Counter({
      name: "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total",
      help: alpha("Cumulative proxy iptables partial restore failures"),
      labelNames: FAMILY,
      registers: iptablesOnly,
    }),
    nftablesSyncFailures: new Counter({
      name: "kubeproxy_sync_proxy_rules_nftables_sync_failures_total",
      help: alpha("Cumulative proxy nftables sync failures"),
      labelNames: FAMILY,
      registers: nftablesOnly,
    }),
    nftablesCleanupFailures: new Counter({
      name: "kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total",
      help: alpha("Cumulative proxy nftables cleanup failures"),
      labelNames: FAMILY,
      registers: nftablesOnly,
    }),
    iptablesRulesTotal: new Gauge({
      name: "kubeproxy_sync_proxy_rules_iptables_total",
      help: alpha("Total number of iptables rules owned by kube-proxy"),
      labelNames: ["table", "ip_family"],
      registers: iptablesOnly,
    }),
    iptablesRulesLastSync: new Gauge({
      name: "kubeproxy_sync_proxy_rules_iptables_last",
      help: alpha("Number of iptables rules written by kube-proxy in last sync"),
      labelNames: ["table", "ip_family"],
      registers: iptablesOnly,
    }),
    syncProxyRulesNoLocalEndpointsTotal: new Gauge({
      name: "kubeproxy_sync_proxy_rules_no_local_endpoints_total",
      help: alpha("Number of services with a Local traffic policy and no endpoints"),
      labelNames: ["traffic_policy", "ip_family"],
      registers: r,
    }),
    conntrackReconcilerSyncDuration: new Histogram({
      name: "kubeproxy_conntrack_reconciler_sync_duration_seconds",
      help: alpha("ReconcileConntrackFlowsLatency latency in seconds"),
      buckets: syncBuckets,
      labelNames: FAMILY,
      registers: r,
    }),
    conntrackReconcilerDeletedEntries: new Counter({
      name: "kubeproxy_conntrack_reconciler_deleted_entries_total",
      help: alpha("Cumulative conntrack flows deleted by conntrack reconciler"),
      labelNames: FAMILY,
      registers: r,
    }),
    endpointChangesPending: new Gauge({
      name: "kubeproxy_sync_proxy_rules_endpoint_changes_pending",
      help: alpha("Pending proxy rules Endpoint changes"),
      registers: r,
    }),
    endpointChangesTotal: new Counter({
      name: "kubeproxy_sync_proxy_rules_endpoint_changes_total",
      help: alpha("Cumulative proxy rules Endpoint changes"),
      registers: r,
    }),
    serviceChangesPending: new Gauge({
      name: "kubeproxy_sync_proxy_rules_service_changes_pending",
      help: alpha("Pending proxy rules Service changes"),
      registers: r,
    }),
    serviceChangesTotal: new Counter({
      name: "kubeproxy_sync_proxy_rules_service_changes_total",
      help: alpha("Cumulative proxy rules Service changes"),
      registers: r,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** The methods that write a sample; each takes an optional labels object first. */
const WRITERS: ReadonlySet<string | symbol> = new Set([
  "inc",
  "dec",
  "set",
  "observe",
  "setToCurrentTime",
  "startTimer",
]);

/** The metrics whose series carry ip_family (upstream 1.33+). */
const FAMILY_LABELLED = [
  "syncProxyRulesLatency",
  "syncFullProxyRulesLatency",
  "syncPartialProxyRulesLatency",
  "syncProxyRulesLastTimestamp",
  "syncProxyRulesLastQueuedTimestamp",
  "networkProgrammingLatency",
  "iptablesRestoreFailures",
  "iptablesPartialRestoreFailures",
  "nftablesSyncFailures",
  "nftablesCleanupFailures",
  "iptablesRulesTotal",
  "iptablesRulesLastSync",
  "syncProxyRulesNoLocalEndpointsTotal",
  "conntrackReconcilerSyncDuration",
  "conntrackReconcilerDeletedEntries",
] as const satisfies readonly (keyof Metrics)[];

/** A metric whose writes carry `fixed` labels as well as any given; reads see every series. */
function withLabels<T extends object>(metric: T, fixed: Readonly<Record<string, string>>): T {
  return new Proxy(metric, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (!WRITERS.has(prop)) return value.bind(target);
      return (...args: unknown[]) => {
        const [first, ...rest] = args;
        if (typeof first === "object" && first !== null)
          return value.call(target, { ...first, ...fixed }, ...rest);
        return value.call(target, fixed, ...args);
      };
    },
  });
}

/** One IP family's proxier's view of the metrics: the ip_family label is filled in on every write. */
export function familyMetrics(metrics: Metrics, family: IPFamily): Metrics {
  const fixed = { ip_family: family };
  const out: Record<string, unknown> = { ...metrics };
  for (const name of FAMILY_LABELLED) out[name] = withLabels(metrics[name], fixed);
  return out as Metrics;
}
