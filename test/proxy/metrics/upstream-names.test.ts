// The families upstream kube-proxy v1.37 serves on /metrics in each mode that kube-proxy-ts
// serves too, with their types, label names, buckets and stability, checked against the registry
// a real run assembles (src/app/run-metrics.ts plus iptables mode's nfacct counters), so drift
// in either direction fails here. Sources: pkg/proxy/metrics/metrics.go (kubernetes, 1.33+: the
// ip_family labels and the conntrack reconciler), the generated v1.36 metrics reference,
// component-base v0.37 metrics/prometheus/{restclient,version,slis,feature} (build info and
// rest_client BETA since 1.36), client_golang prometheus/process_collector.go.
//
// Upstream also serves, and kube-proxy-ts does not:
//  - go_* (the Go runtime collector): there is no Go runtime here.
//  - registered_metrics_total, disabled_metrics_total, hidden_metrics_total,
//    cardinality_enforcement_unexpected_categorizations_total: component-base's bookkeeping of
//    its own metric stability framework.
//  - the rest of client-go's set: rest_client_request_size_bytes, rest_client_response_size_bytes,
//    rest_client_rate_limiter_duration_seconds, rest_client_request_retries_total,
//    rest_client_exec_plugin_ttl_seconds, rest_client_exec_plugin_certificate_rotation_age,
//    rest_client_exec_plugin_call_total, rest_client_transport_cache_entries,
//    rest_client_transport_create_calls_total.
import { describe, expect, test } from "bun:test";
import { createRunMetrics } from "../../../src/app/run-metrics.ts";
import { createNfacctClient } from "../../../src/host/nfacct/client.ts";
import { FakeNfacct } from "../../../src/host/nfacct/testing/fake.ts";
import { nullLogger } from "../../../src/log/logger.ts";
import { registerNfacctMetrics } from "../../../src/modes/iptables/nfacct-metrics.ts";
import { createSliMetrics } from "../../../src/proxy/healthcheck/slis.ts";
import { familyMetrics } from "../../../src/proxy/metrics/metrics.ts";

type Type = "counter" | "gauge" | "histogram";
type Stability = "ALPHA" | "BETA" | "none";

interface Family {
  readonly type: Type;
  readonly labels?: readonly string[];
  readonly buckets?: readonly number[];
  readonly stability: Stability;
  /** Registered in ipvs mode as well. */
  readonly ipvs: boolean;
  /** Registered in nftables mode as well (default: as in ipvs mode). */
  readonly nftables?: boolean;
}

const exponential = (start: number, factor: number, count: number) =>
  Array.from({ length: count }, (_, i) => start * factor ** i);
const linear = (start: number, width: number, count: number) =>
  Array.from({ length: count }, (_, i) => start + width * i);

const SYNC_BUCKETS = exponential(0.001, 2, 15);
const NETWORK_PROGRAMMING_BUCKETS = [
  0,
  ...linear(0.25, 0.25, 2),
  ...linear(1, 1, 59),
  ...linear(60, 5, 12),
  ...linear(120, 30, 7),
];
const REST_LATENCY_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

const kube = (type: Type, ipvs: boolean, extra: Partial<Family> = {}): Family => ({
  type,
  stability: "ALPHA",
  ipvs,
  ...extra,
});
const proc = (type: Type): Family => ({ type, stability: "none", ipvs: true });

const FAMILY = ["ip_family"];

/** Upstream v1.37, iptables mode: every family kube-proxy-ts serves as well. */
const UPSTREAM: Readonly<Record<string, Family>> = {
  // pkg/proxy/metrics, all modes
  kubeproxy_sync_proxy_rules_duration_seconds: kube("histogram", true, {
    buckets: SYNC_BUCKETS,
    labels: FAMILY,
  }),
  kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds: kube("gauge", true, { labels: FAMILY }),
  kubeproxy_sync_proxy_rules_last_timestamp_seconds: kube("gauge", true, { labels: FAMILY }),
  kubeproxy_sync_proxy_rules_endpoint_changes_pending: kube("gauge", true),
  kubeproxy_sync_proxy_rules_endpoint_changes_total: kube("counter", true),
  kubeproxy_sync_proxy_rules_service_changes_pending: kube("gauge", true),
  kubeproxy_sync_proxy_rules_service_changes_total: kube("counter", true),
  kubeproxy_proxy_healthz_total: kube("counter", true, { labels: ["code"] }),
  kubeproxy_proxy_livez_total: kube("counter", true, { labels: ["code"] }),
  kubeproxy_network_programming_duration_seconds: kube("histogram", true, {
    buckets: NETWORK_PROGRAMMING_BUCKETS,
    labels: FAMILY,
  }),
  kubeproxy_sync_proxy_rules_no_local_endpoints_total: kube("gauge", true, {
    labels: ["ip_family", "traffic_policy"],
  }),
  kubeproxy_conntrack_reconciler_sync_duration_seconds: kube("histogram", true, {
    buckets: SYNC_BUCKETS,
    labels: FAMILY,
  }),
  kubeproxy_conntrack_reconciler_deleted_entries_total: kube("counter", true, { labels: FAMILY }),
  // pkg/proxy/metrics, iptables mode (ipvs keeps the restore failure counter; nftables the
  // full/partial latencies)
  kubeproxy_iptables_ct_state_invalid_dropped_packets_total: kube("counter", false),
  kubeproxy_iptables_localhost_nodeports_accepted_packets_total: kube("counter", false),
  kubeproxy_sync_full_proxy_rules_duration_seconds: kube("histogram", false, {
    buckets: SYNC_BUCKETS,
    labels: FAMILY,
    nftables: true,
  }),
  kubeproxy_sync_partial_proxy_rules_duration_seconds: kube("histogram", false, {
    buckets: SYNC_BUCKETS,
    labels: FAMILY,
    nftables: true,
  }),
  kubeproxy_sync_proxy_rules_iptables_restore_failures_total: kube("counter", true, {
    labels: FAMILY,
    nftables: false,
  }),
  kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total: kube("counter", false, {
    labels: FAMILY,
  }),
  kubeproxy_sync_proxy_rules_iptables_total: kube("gauge", false, { labels: ["ip_family", "table"] }),
  kubeproxy_sync_proxy_rules_iptables_last: kube("gauge", false, { labels: ["ip_family", "table"] }),
  // component-base metrics/prometheus/version (BETA since 1.36)
  kubernetes_build_info: kube("gauge", true, {
    stability: "BETA",
    labels: [
      "build_date",
      "compiler",
      "git_commit",
      "git_tree_state",
      "git_version",
      "go_version",
      "major",
      "minor",
      "platform",
    ],
  }),
  // component-base metrics/prometheus/feature
  kubernetes_feature_enabled: kube("gauge", true, { stability: "BETA", labels: ["name", "stage"] }),
  // component-base metrics/prometheus/restclient (BETA since 1.36)
  rest_client_requests_total: kube("counter", true, {
    stability: "BETA",
    labels: ["code", "host", "method"],
  }),
  rest_client_request_duration_seconds: kube("histogram", true, {
    stability: "BETA",
    labels: ["host", "verb"],
    buckets: REST_LATENCY_BUCKETS,
  }),
  // client_golang process collector (registered raw: no stability prefix)
  process_cpu_seconds_total: proc("counter"),
  process_open_fds: proc("gauge"),
  process_max_fds: proc("gauge"),
  process_virtual_memory_bytes: proc("gauge"),
  process_virtual_memory_max_bytes: proc("gauge"),
  process_resident_memory_bytes: proc("gauge"),
  process_start_time_seconds: proc("gauge"),
};

/** nftables mode's own families (pkg/proxy/metrics, nftables). */
const UPSTREAM_NFTABLES: Readonly<Record<string, Family>> = {
  kubeproxy_sync_proxy_rules_nftables_sync_failures_total: kube("counter", false, { labels: FAMILY }),
  kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total: kube("counter", false, { labels: FAMILY }),
};

/** /metrics/slis (component-base metrics/prometheus/slis), its own registry. */
const UPSTREAM_SLIS: Readonly<Record<string, Family>> = {
  kubernetes_healthcheck: { type: "gauge", labels: ["name", "type"], stability: "BETA", ipvs: true },
  kubernetes_healthchecks_total: {
    type: "counter",
    labels: ["name", "status", "type"],
    stability: "BETA",
    ipvs: true,
  },
};

interface Scraped {
  type: string;
  help: string;
  labels: string[];
  buckets: number[];
}

/** Parses Prometheus text: per family its TYPE, HELP, label names (without le) and buckets. */
function parse(text: string): Map<string, Scraped> {
  const out = new Map<string, Scraped>();
  let current: Scraped | undefined;
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    const help = /^# HELP (\S+) (.*)$/.exec(line);
    if (help) {
      current = { type: "", help: help[2]!, labels: [], buckets: [] };
      out.set(help[1]!, current);
    } else if (type && current) current.type = type[2]!;
    else if (current && line && !line.startsWith("#")) {
      const labels = [...line.matchAll(/(\w+)="([^"]*)"/g)];
      const le = labels.find((m) => m[1] === "le");
      const names = labels.map((m) => m[1]!).filter((n) => n !== "le");
      if (current.labels.length === 0) current.labels = names;
      if (le && le[2] !== "+Inf" && current.buckets.length < 200 && names.join() === current.labels.join()) {
        const b = Number(le[2]);
        if (!current.buckets.includes(b)) current.buckets.push(b);
      }
    }
  }
  return out;
}

/** The registry of a real run in `mode`, with one sample in every family that has labels. */
async function scrapeRun(mode: "iptables" | "ipvs" | "nftables"): Promise<Map<string, Scraped>> {
  const run = createRunMetrics({ mode });
  const m = run.metrics;
  if (mode === "iptables") {
    const fake = new FakeNfacct();
    for (const name of ["ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts"])
      fake.handle({ cmd: "nfacct", args: ["add", name] });
    registerNfacctMetrics(m.registry, createNfacctClient({ exec: fake.install() }), nullLogger);
  }
  const v4 = familyMetrics(m, "IPv4");
  v4.iptablesRulesTotal.set({ table: "nat" }, 3);
  v4.iptablesRulesLastSync.set({ table: "nat" }, 3);
  v4.syncProxyRulesNoLocalEndpointsTotal.set({ traffic_policy: "internal" }, 0);
  for (const name of [
    "syncProxyRulesLastQueuedTimestamp",
    "syncProxyRulesLastTimestamp",
    "iptablesRestoreFailures",
    "iptablesPartialRestoreFailures",
    "nftablesSyncFailures",
    "nftablesCleanupFailures",
    "conntrackReconcilerDeletedEntries",
  ] as const)
    (v4[name] as { inc(n?: number): void }).inc(0);
  for (const name of [
    "syncProxyRulesLatency",
    "syncFullProxyRulesLatency",
    "syncPartialProxyRulesLatency",
    "networkProgrammingLatency",
    "conntrackReconcilerSyncDuration",
  ] as const)
    v4[name].observe(0.01);
  run.health.healthzTotal.inc({ code: "200" });
  run.health.livezTotal.inc({ code: "200" });
  run.restClient.result(200, "GET", "192.0.2.1:6443");
  run.restClient.latency("GET", "192.0.2.1:6443", 0.01);
  return parse(await m.registry.metrics());
}

function expectMatches(scraped: Map<string, Scraped>, table: Readonly<Record<string, Family>>): void {
  expect([...scraped.keys()].sort()).toEqual(Object.keys(table).sort());
  for (const [name, want] of Object.entries(table)) {
    const got = scraped.get(name)!;
    expect({ name, type: got.type }).toEqual({ name, type: want.type });
    expect({ name, labels: got.labels.sort() }).toEqual({ name, labels: [...(want.labels ?? [])] });
    if (want.buckets) expect({ name, buckets: got.buckets }).toEqual({ name, buckets: [...want.buckets] });
    const prefix = want.stability === "none" ? "" : `[${want.stability}] `;
    expect({
      name,
      stability: got.help.startsWith(prefix) && !/^\[\w+\] /.test(got.help.slice(prefix.length)),
    }).toEqual({ name, stability: true });
  }
}

describe("upstream metric names, types, labels and buckets", () => {
  test("iptables mode: /metrics serves exactly upstream's families that we implement", async () => {
    expectMatches(await scrapeRun("iptables"), UPSTREAM);
  });

  test("ipvs mode: the iptables-only families are not registered", async () => {
    const ipvs = Object.fromEntries(Object.entries(UPSTREAM).filter(([, f]) => f.ipvs));
    expectMatches(await scrapeRun("ipvs"), ipvs);
  });

  test("nftables mode: the shared families, full/partial latency and its own failure counters", async () => {
    const nft = Object.fromEntries(Object.entries(UPSTREAM).filter(([, f]) => f.nftables ?? f.ipvs));
    expectMatches(await scrapeRun("nftables"), { ...nft, ...UPSTREAM_NFTABLES });
  });

  test("kubernetes_feature_enabled: every 1.37 gate with its stage (empty for GA) and value", async () => {
    const text = await createRunMetrics({ mode: "iptables" }).metrics.registry.metrics();
    expect(text).toContain('kubernetes_feature_enabled{name="KubeProxyIPVS",stage="DEPRECATED"} 1');
    expect(text).toContain('kubernetes_feature_enabled{name="NFTablesProxyMode",stage=""} 1');
    expect(text).toContain('kubernetes_feature_enabled{name="LoggingAlphaOptions",stage="ALPHA"} 0');
    expect(text).not.toContain('name="AllAlpha"');
  });

  test("each family's proxier writes its own ip_family series", async () => {
    const m = createRunMetrics({ mode: "iptables" }).metrics;
    familyMetrics(m, "IPv4").iptablesRestoreFailures.inc();
    familyMetrics(m, "IPv6").iptablesRestoreFailures.inc(2);
    const text = await m.registry.metrics();
    expect(text).toContain('kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family="IPv4"} 1');
    expect(text).toContain('kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family="IPv6"} 2');
  });

  test("/metrics/slis serves the healthz SLI families", async () => {
    const slis = createSliMetrics();
    slis.observe("ping", "healthz", true);
    expectMatches(parse(await slis.registry.metrics()), UPSTREAM_SLIS);
  });
});
