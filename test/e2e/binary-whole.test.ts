// The real binary, proven end to end against a (fake) API server: dist/kube-proxy-ts runs in
// iptables mode in the node namespace of a netns topology (test/support/netns.ts has the
// address plan), lists and watches Services, EndpointSlices and its Node from the fake API
// server (test/support/fake-apiserver.ts, reached through e2e-apiserver.ts; no --state file),
// and each test checks over HTTP what an operator's monitoring would see: /metrics,
// /metrics/slis, /healthz, /livez, /proxyMode, /configz, the health-check NodePort, the Events
// posted, and the route_localnet sysctl.
//
// Run as root: `node_modules/.bin/bun test --timeout 120000 test/e2e/binary-whole.test.ts`
// (after `bash scripts/build`). KPTS_E2E_BINARY=/path/to/kube-proxy-ts tests another build.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/binary.ts";
import {
  loadCluster,
  type NodeApi,
  type SentChanges,
  serviceObjects,
  startNodeApi,
} from "../support/e2e-apiserver.ts";
import { type NodeSpec, nodeObject, type ServiceSpec, servicePortName } from "../support/e2e-cluster.ts";
import {
  describeHttp,
  httpGet,
  metricValue,
  parseMetrics,
  pollHttp,
  type Scrape,
} from "../support/e2e-http.ts";
import {
  diagnostics,
  hasServiceRule,
  NODE_NAME,
  type RulesView,
  rulesView,
  startKubeProxy,
  waitForRules,
} from "../support/e2e-kubeproxy.ts";
import { type Daemon, probeOnce, startServer } from "../support/e2e-traffic.ts";
import { ADDR, createTopology, namespaceExists, type PodSpec, type Topology } from "../support/netns.ts";

const TEST_TIMEOUT_MS = 90_000;
const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const HTTP_PORT = { name: "http", port: 80, targetPort: 8080 } as const;
const METRICS = "http://127.0.0.1:10249";
const HEALTHZ = "http://127.0.0.1:10256";

// ---- upstream's metric names and types (kube-proxy v1.31, iptables mode) ---------------------
//
// Sources (behaviour looked up, nothing copied):
// - kubernetes/kubernetes pkg/proxy/metrics/metrics.go (v1.31): the kubeproxy_* families that
//   RegisterMetrics registers for iptables mode; the two nfacct families are a custom collector
//   that emits counter values. The nftables-only families and the conntrack reconciler
//   families (v1.32+) are not served in iptables mode by v1.31.
// - kubernetes/kubernetes pkg/proxy/healthcheck/metrics (proxy_healthz_total / proxy_livez_total).
// - k8s.io/component-base/metrics: legacyregistry registers the Prometheus process collector
//   (process_*), kubernetes_build_info (version), kubernetes_feature_enabled (feature gates) and
//   the registered/disabled/hidden metrics counters; /metrics/slis (component-base slis) serves
//   kubernetes_healthcheck and kubernetes_healthchecks_total. (The Go runtime's go_* families
//   are Go-specific and deliberately not listed: a non-Go binary must not invent them.)
// - k8s.io/client-go tools/metrics as component-base/metrics/prometheus/clientgo registers them
//   (rest_client_*).
// - Cross-checked against the "Kubernetes Metrics Reference" page (kubernetes/website,
//   content/en/docs/reference/instrumentation/metrics.md), which lists the kube-proxy component
//   of each family with its type.
const UPSTREAM_METRICS: Readonly<Record<string, string>> = {
  kubeproxy_sync_proxy_rules_duration_seconds: "histogram",
  kubeproxy_sync_full_proxy_rules_duration_seconds: "histogram",
  kubeproxy_sync_partial_proxy_rules_duration_seconds: "histogram",
  kubeproxy_sync_proxy_rules_last_timestamp_seconds: "gauge",
  kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds: "gauge",
  kubeproxy_network_programming_duration_seconds: "histogram",
  kubeproxy_sync_proxy_rules_endpoint_changes_pending: "gauge",
  kubeproxy_sync_proxy_rules_endpoint_changes_total: "counter",
  kubeproxy_sync_proxy_rules_service_changes_pending: "gauge",
  kubeproxy_sync_proxy_rules_service_changes_total: "counter",
  kubeproxy_sync_proxy_rules_iptables_total: "gauge",
  kubeproxy_sync_proxy_rules_iptables_last: "gauge",
  kubeproxy_sync_proxy_rules_iptables_restore_failures_total: "counter",
  kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total: "counter",
  kubeproxy_sync_proxy_rules_no_local_endpoints_total: "gauge",
  kubeproxy_iptables_ct_state_invalid_dropped_packets_total: "counter",
  kubeproxy_iptables_localhost_nodeports_accepted_packets_total: "counter",
  kubeproxy_proxy_healthz_total: "counter",
  kubeproxy_proxy_livez_total: "counter",
  kubeproxy_conntrack_reconciler_sync_duration_seconds: "histogram",
  kubeproxy_conntrack_reconciler_deleted_entries_total: "counter",
  process_cpu_seconds_total: "counter",
  process_open_fds: "gauge",
  process_max_fds: "gauge",
  process_virtual_memory_bytes: "gauge",
  process_virtual_memory_max_bytes: "gauge",
  process_resident_memory_bytes: "gauge",
  process_start_time_seconds: "gauge",
  kubernetes_build_info: "gauge",
  kubernetes_feature_enabled: "gauge",
  registered_metrics_total: "counter",
  disabled_metrics_total: "counter",
  hidden_metrics_total: "counter",
  leader_election_master_status: "gauge",
  rest_client_requests_total: "counter",
  rest_client_request_duration_seconds: "histogram",
  rest_client_request_size_bytes: "histogram",
  rest_client_response_size_bytes: "histogram",
  rest_client_rate_limiter_duration_seconds: "histogram",
  rest_client_dns_resolution_duration_seconds: "histogram",
  rest_client_request_retries_total: "counter",
  rest_client_transport_cache_entries: "gauge",
  rest_client_transport_create_calls_total: "counter",
  rest_client_exec_plugin_ttl_seconds: "gauge",
  rest_client_exec_plugin_certificate_rotation_age: "histogram",
  rest_client_exec_plugin_call_total: "counter",
};

/** What /metrics/slis serves (component-base/metrics/prometheus/slis). */
const UPSTREAM_SLI_METRICS: Readonly<Record<string, string>> = {
  kubernetes_healthcheck: "gauge",
  kubernetes_healthchecks_total: "counter",
};

/** Families printed with a TYPE that upstream does not serve under that name and type. */
function typeMismatches(scrape: Scrape, table: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const [name, type] of scrape.types) {
    const want = table[name];
    if (want === undefined) out.push(`${name} (${type}): upstream has no such metric`);
    else if (want !== type) out.push(`${name}: we say ${type}, upstream says ${want}`);
  }
  return out.sort();
}

// ---- harness --------------------------------------------------------------------------------

interface Run {
  topo?: Topology;
  api?: NodeApi;
  kubeProxy?: Daemon;
  dir?: string;
}

interface RunSpec {
  readonly pods: readonly PodSpec[];
  readonly client?: boolean;
  readonly client2?: boolean;
  readonly services: readonly ServiceSpec[];
  readonly extraArgs?: readonly string[];
  /** Extra environment for kube-proxy-ts; "$DIR" in a value is the run's temp dir. */
  readonly env?: Record<string, string>;
}

/** Builds the topology, the API server (loaded with `spec`'s cluster) and starts the binary. */
async function start(run: Run, spec: RunSpec): Promise<SentChanges> {
  run.topo = await createTopology({
    pods: spec.pods,
    client: spec.client ?? false,
    client2: spec.client2 ?? false,
  });
  await Promise.all(spec.pods.map((p) => startServer(run.topo!, p.name, { tcp: [8080] })));
  run.dir = tempDir("kpts-e2e-api-");
  run.api = await startNodeApi(run.topo, run.dir);
  const sent = loadCluster(run.api.server, NODE, spec.services);
  const env = Object.fromEntries(
    Object.entries(spec.env ?? {}).map(([k, v]) => [k, v.replaceAll("$DIR", run.dir!)]),
  );
  run.kubeProxy = startKubeProxy(run.topo, {
    kubeconfig: run.api.kubeconfig,
    extraArgs: spec.extraArgs ?? [],
    env,
  });
  return sent;
}

async function stop(run: Run): Promise<void> {
  const names = Object.values(run.topo?.namespaces ?? {});
  try {
    await run.kubeProxy?.kill(3000);
    await run.api?.close();
    await run.topo?.destroy();
  } finally {
    if (run.dir) rmSync(run.dir, { recursive: true, force: true });
  }
  const left = names.filter(namespaceExists);
  if (left.length > 0) throw new Error(`namespaces left behind: ${left.join(", ")}`);
}

/** Waits (bounded) until the first sync is in: every listed Service port's cluster IP rule in nat, and IPv6's chains. */
async function firstSync(run: Run, services: readonly ServiceSpec[]): Promise<void> {
  const comments = services.flatMap((s) => s.ports.map((p) => `${servicePortName(s, p)} cluster IP`));
  try {
    await waitForRules(
      run.topo!,
      run.kubeProxy,
      (v) => comments.every((c) => hasServiceRule(v.nat, c)),
      "the first sync from the API server",
      30_000,
    );
    // Where ip6tables works the node is proxied dual-stack (as upstream does), so the first
    // sync is over only once IPv6 has its chains too. (A test that stalls syncs must not catch
    // the first one half done: a proxier that never synced is reported healthy.)
    const v6 = await run.topo!.run("node", ["ip6tables-nft-save", "-t", "nat"], { timeoutMs: 10_000 });
    const deadline = Date.now() + 20_000;
    for (let i = 0; i < 100 && v6.code === 0; i++) {
      if ((await ip6Nat(run.topo!)).includes(":KUBE-SERVICES ")) break;
      if (Date.now() > deadline)
        throw new Error("timed out after 20000 ms waiting for the IPv6 part of the first sync");
      await new Promise((r) => setTimeout(r, 200));
    }
  } catch (err) {
    console.error(`\n===== diagnostics (setup) =====\n${await diagnostics(run.topo!, run.kubeProxy)}`);
    throw err;
  }
}

/** A test that, when it fails, prints kube-proxy-ts's output and the node's rules. */
function e2eTest(run: Run, name: string, fn: () => Promise<void>): void {
  test(
    name,
    async () => {
      try {
        await fn();
      } catch (err) {
        if (run.topo) {
          console.error(
            `\n===== diagnostics for "${name}" =====\n${await diagnostics(run.topo, run.kubeProxy)}`,
          );
        }
        throw err;
      }
    },
    TEST_TIMEOUT_MS,
  );
}

async function scrape(run: Run, path = "/metrics"): Promise<Scrape> {
  const r = await httpGet(run.topo!, "node", `${METRICS}${path}`);
  if (!r.ok || r.status !== 200) throw new Error(`GET ${path}: ${describeHttp(r)}`);
  return parseMetrics(r.body ?? "");
}

/** Scrapes until `done` holds (at most timeoutMs); returns the last scrape either way. */
async function scrapeUntil(run: Run, done: (s: Scrape) => boolean, timeoutMs = 15_000): Promise<Scrape> {
  const deadline = Date.now() + timeoutMs;
  let last = await scrape(run);
  for (let i = 0; i < 200 && !done(last) && Date.now() < deadline; i++) {
    await new Promise((r) => setTimeout(r, 250));
    last = await scrape(run);
  }
  return last;
}

/** The node's IPv6 nat table, from the nft backend and (when it exists there) the legacy one. */
async function ip6Nat(topo: Topology): Promise<string> {
  const nft = await topo.run("node", ["ip6tables-nft-save", "-t", "nat"], { timeoutMs: 10_000 });
  let out = nft.stdout;
  const names = await topo.run("node", ["cat", "/proc/net/ip6_tables_names"], { timeoutMs: 5000 });
  if (names.stdout.split("\n").includes("nat")) {
    out += (await topo.run("node", ["ip6tables-legacy-save", "-t", "nat"], { timeoutMs: 10_000 })).stdout;
  }
  return out;
}

/** 2 when the binary also programs IPv6 (named in failure messages: the counts must not depend on it). */
async function familiesProxied(topo: Topology): Promise<number> {
  return (await ip6Nat(topo)).includes(":KUBE-SERVICES ") ? 2 : 1;
}

/** The value of a served series; a clear failure when it is not served at all. */
function served(s: Scrape, name: string, labels: Record<string, string> = {}): number {
  const v = metricValue(s, name, labels);
  if (v === undefined) {
    const l = Object.keys(labels).length > 0 ? JSON.stringify(labels) : "";
    throw new Error(`${name}${l} is not served on /metrics`);
  }
  return v;
}

/**
 * Holds the flock on `file` from the node namespace (never the host's /run/xtables.lock) until
 * release(), and at most `seconds`: `flock FILE sleep N` keeps it while its sleep runs, so ending
 * that sleep (flock's only child, found by pid) frees it and lets flock exit.
 */
async function holdLock(
  topo: Topology,
  file: string,
  seconds: number,
): Promise<{ release(): Promise<void> }> {
  const holder = topo.spawnDaemon("node", ["flock", file, "sleep", String(seconds)]);
  let held = false;
  for (let i = 0; i < 50 && !held && holder.exitCode() === undefined; i++) {
    const probe = await topo.run("node", ["flock", "-n", file, "true"], { timeoutMs: 5000 });
    held = probe.code !== 0;
    if (!held) await new Promise((r) => setTimeout(r, 100));
  }
  const release = async () => {
    let children: number[] = [];
    try {
      const text = readFileSync(`/proc/${holder.pid}/task/${holder.pid}/children`, "utf8");
      children = text.split(/\s+/).filter(Boolean).map(Number);
    } catch {
      // flock already gone
    }
    for (const pid of children) {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
    const timer = setTimeout(() => void holder.kill(500), 5000);
    await holder.exited;
    clearTimeout(timer);
  };
  if (!held) {
    await release();
    throw new Error(`could not take the lock on ${file}: ${holder.stderr()}`);
  }
  return { release };
}

function jsonBody(r: { body?: string }): Record<string, unknown> {
  try {
    return JSON.parse(r.body ?? "") as Record<string, unknown>;
  } catch {
    throw new Error(`not a JSON body: ${r.body}`);
  }
}

// ---------------------------------------------------------------------------------------------

const MPODS: PodSpec[] = [
  { name: "m1", ip: "203.0.113.41" },
  { name: "m2", ip: "203.0.113.42" },
];
const NP: ServiceSpec = {
  name: "np",
  type: "NodePort",
  clusterIP: "198.51.100.50",
  ports: [{ ...HTTP_PORT, nodePort: 30080 }],
  endpoints: [{ ip: "203.0.113.41" }],
};
const WEB: ServiceSpec = {
  name: "web",
  clusterIP: "198.51.100.51",
  ports: [HTTP_PORT],
  endpoints: [{ ip: "203.0.113.41" }, { ip: "203.0.113.42" }],
};
const EXTRA: ServiceSpec = {
  name: "extra",
  clusterIP: "198.51.100.52",
  ports: [HTTP_PORT],
  endpoints: [{ ip: "203.0.113.42" }],
};

describe("what an operator scrapes: /metrics, /metrics/slis, /proxyMode, /configz, Events", () => {
  const run: Run = {};
  let sent: SentChanges = { services: 0, slices: 0 };

  beforeAll(async () => {
    sent = await start(run, {
      pods: MPODS,
      services: [NP, WEB],
      // Flags whose effect /configz must show.
      extraArgs: ["--config-sync-period=10m", "--iptables-masquerade-bit=13"],
    });
    await firstSync(run, [NP, WEB]);
  }, TEST_TIMEOUT_MS);

  afterAll(async () => {
    await stop(run);
  }, TEST_TIMEOUT_MS);

  e2eTest(run, "/metrics: syncs are timed, and the change counters equal the changes delivered", async () => {
    const server = run.api!.server;
    const first = await scrapeUntil(
      run,
      (s) => (metricValue(s, "kubeproxy_sync_proxy_rules_duration_seconds_count") ?? 0) > 0,
    );
    expect(served(first, "kubeproxy_sync_proxy_rules_duration_seconds_count")).toBeGreaterThan(0);
    expect(served(first, "kubeproxy_sync_full_proxy_rules_duration_seconds_count")).toBeGreaterThan(0);

    // Changes after the first sync, each delivered by the watch: an update of a Service and of
    // a slice, a create of both, a delete of both.
    const pause = () => new Promise((r) => setTimeout(r, 200));
    server.update("Service", serviceObjects({ ...WEB, sessionAffinity: "ClientIP" }, NODE_NAME).service);
    sent.services++;
    await pause();
    server.update(
      "EndpointSlice",
      serviceObjects({ ...WEB, endpoints: WEB.endpoints!.slice(0, 1) }, NODE_NAME).slice!,
    );
    sent.slices++;
    await pause();
    const extra = serviceObjects(EXTRA, NODE_NAME);
    server.create("Service", extra.service);
    server.create("EndpointSlice", extra.slice!);
    sent.services++;
    sent.slices++;
    await pause();
    server.delete("EndpointSlice", extra.slice!);
    server.delete("Service", extra.service);
    sent.services++;
    sent.slices++;

    // One tracker serves both families here, so each event counts once, on a dual-stack node
    // too (upstream's meta-proxier counts a Service event once per family; the README says so).
    const families = await familiesProxied(run.topo!);
    const want = {
      service_changes_total: sent.services,
      endpoint_changes_total: sent.slices,
      service_changes_pending: 0,
      endpoint_changes_pending: 0,
    };
    const seen = (s: Scrape) => ({
      service_changes_total: metricValue(s, "kubeproxy_sync_proxy_rules_service_changes_total"),
      endpoint_changes_total: metricValue(s, "kubeproxy_sync_proxy_rules_endpoint_changes_total"),
      service_changes_pending: metricValue(s, "kubeproxy_sync_proxy_rules_service_changes_pending"),
      endpoint_changes_pending: metricValue(s, "kubeproxy_sync_proxy_rules_endpoint_changes_pending"),
    });
    const after = await scrapeUntil(run, (s) => JSON.stringify(seen(s)) === JSON.stringify(want));
    expect(
      seen(after),
      `${sent.services} Service and ${sent.slices} EndpointSlice events sent, ${families} families proxied`,
    ).toEqual(want);
    // The changes were synced partially (only the first sync has to be full).
    expect(served(after, "kubeproxy_sync_partial_proxy_rules_duration_seconds_count")).toBeGreaterThan(0);
    expect(served(after, "kubeproxy_sync_proxy_rules_duration_seconds_count")).toBeGreaterThan(
      served(first, "kubeproxy_sync_proxy_rules_duration_seconds_count"),
    );
  });

  e2eTest(run, "/statusz, /flagz and the ip_family-labelled metrics read back (upstream 1.37)", async () => {
    const status = await httpGet(run.topo!, "node", `${METRICS}/statusz`);
    expect(status.status, describeHttp(status)).toBe(200);
    expect(status.body).toContain(
      "\nkube-proxy statusz\nWarning: This endpoint is not meant to be machine parseable",
    );
    expect(status.body).toMatch(/^Emulation version(:|: |=| ) 1\.37$/m);
    expect(status.body).toMatch(/^Paths(:|: |=| ) \/configz \/flagz \/healthz \/metrics \/proxyMode$/m);
    const json = await httpGet(run.topo!, "node", `${METRICS}/statusz`, {
      accept: "application/json;as=Statusz;g=config.k8s.io;v=v1beta1",
    });
    expect(json.headers?.["content-type"]).toBe("application/json;g=config.k8s.io;v=v1beta1;as=Statusz");
    expect(JSON.parse(json.body ?? "")).toMatchObject({ kind: "Statusz", emulationVersion: "1.37" });
    expect(
      (await httpGet(run.topo!, "node", `${METRICS}/statusz`, { accept: "application/xml" })).status,
    ).toBe(406);

    const flagz = await httpGet(run.topo!, "node", `${METRICS}/flagz`);
    expect(flagz.status, describeHttp(flagz)).toBe(200);
    expect(flagz.body).toMatch(/^config-sync-period(:|: |=| )10m0s$/m);
    expect(flagz.body).toMatch(/^iptables-masquerade-bit(:|: |=| )13$/m);
    expect(flagz.body).toMatch(/^iptables-sync-period(:|: |=| )30s$/m);

    const s = await scrapeUntil(
      run,
      (x) =>
        (metricValue(x, "kubeproxy_sync_proxy_rules_duration_seconds_count", { ip_family: "IPv4" }) ?? 0) > 0,
    );
    expect(
      served(s, "kubeproxy_sync_proxy_rules_duration_seconds_count", { ip_family: "IPv4" }),
    ).toBeGreaterThan(0);
    expect(
      served(s, "kubeproxy_sync_proxy_rules_last_timestamp_seconds", { ip_family: "IPv4" }),
    ).toBeGreaterThan(0);
    expect(
      served(s, "kubeproxy_sync_proxy_rules_iptables_total", { ip_family: "IPv4", table: "nat" }),
    ).toBeGreaterThan(0);
    expect(served(s, "kubernetes_feature_enabled", { name: "ComponentStatusz", stage: "BETA" })).toBe(1);
    expect(served(s, "kubernetes_feature_enabled", { name: "KubeProxyIPVS", stage: "DEPRECATED" })).toBe(1);
  });

  e2eTest(run, "/metrics: the last-sync timestamp advances after a further change", async () => {
    const before = await scrape(run);
    const t0 = served(before, "kubeproxy_sync_proxy_rules_last_timestamp_seconds");
    expect(t0, "kubeproxy_sync_proxy_rules_last_timestamp_seconds after the first sync").toBeGreaterThan(0);
    // A change the rules must follow (session affinity off again), so a sync must run.
    run.api!.server.update("Service", serviceObjects(WEB, NODE_NAME).service);
    const after = await scrapeUntil(
      run,
      (s) => (metricValue(s, "kubeproxy_sync_proxy_rules_last_timestamp_seconds") ?? 0) > t0,
    );
    expect(served(after, "kubeproxy_sync_proxy_rules_last_timestamp_seconds")).toBeGreaterThan(t0);
  });

  e2eTest(
    run,
    "/metrics: a request to 127.0.0.1:<NodePort> on the node moves the localhost NodePort counter",
    async () => {
      const name = "kubeproxy_iptables_localhost_nodeports_accepted_packets_total";
      const c0 = served(await scrape(run), name);
      const r = await probeOnce(run.topo!, "node", { target: "127.0.0.1:30080", timeoutMs: 3000 });
      expect(r.ok, `node -> 127.0.0.1:30080: ${JSON.stringify(r)}`).toBe(true);
      expect(r.reply?.pod).toBe("m1");
      // The counter is the kernel's (nfacct), read when scraped: no sync needs to happen.
      const after = await scrapeUntil(run, (s) => (metricValue(s, name) ?? 0) > c0, 10_000);
      expect(served(after, name), `${name} after one TCP exchange`).toBeGreaterThan(c0);
    },
  );

  e2eTest(run, "/metrics: process_* and kubernetes_build_info are served", async () => {
    const s = await scrape(run);
    const now = Date.now() / 1000;
    const startTime = served(s, "process_start_time_seconds");
    expect(startTime, "process_start_time_seconds").toBeGreaterThan(now - 600);
    expect(startTime, "process_start_time_seconds").toBeLessThanOrEqual(now + 5);
    expect(served(s, "process_resident_memory_bytes"), "process_resident_memory_bytes").toBeGreaterThan(0);
    expect(served(s, "process_cpu_seconds_total"), "process_cpu_seconds_total").toBeGreaterThan(0);
    expect(served(s, "process_open_fds"), "process_open_fds").toBeGreaterThan(0);
    served(s, "kubernetes_build_info");
    const info = s.samples.filter((x) => x.name === "kubernetes_build_info");
    expect(info.length, "kubernetes_build_info series").toBe(1);
    expect(info[0]!.value).toBe(1);
    expect(info[0]!.labels.git_version, "kubernetes_build_info git_version").toBeTruthy();
  });

  e2eTest(run, "/metrics: the API client's requests are counted (rest_client_requests_total)", async () => {
    const s = await scrape(run);
    // Every list and watch of Services, EndpointSlices and the Node is a GET answered 200.
    expect(
      served(s, "rest_client_requests_total", { code: "200", method: "GET" }),
      "rest_client_requests_total{code=200,method=GET}",
    ).toBeGreaterThanOrEqual(3);
  });

  e2eTest(run, "/metrics: every family printed has upstream's name and TYPE", async () => {
    const s = await scrape(run);
    expect(s.types.size).toBeGreaterThan(0);
    expect(typeMismatches(s, UPSTREAM_METRICS)).toEqual([]);
  });

  e2eTest(run, "/metrics/slis: the healthz check results, with upstream's names and types", async () => {
    // The metrics server's own /healthz ("ping") is what the SLI metrics record.
    const hz = await httpGet(run.topo!, "node", `${METRICS}/healthz`);
    expect(hz.status, describeHttp(hz)).toBe(200);
    const r = await httpGet(run.topo!, "node", `${METRICS}/metrics/slis`);
    expect(r.status, `GET /metrics/slis: ${describeHttp(r)}`).toBe(200);
    const s = parseMetrics(r.body ?? "");
    expect(typeMismatches(s, UPSTREAM_SLI_METRICS)).toEqual([]);
    expect(metricValue(s, "kubernetes_healthcheck", { name: "ping", type: "healthz" })).toBe(1);
    expect(
      metricValue(s, "kubernetes_healthchecks_total", { name: "ping", status: "success", type: "healthz" }),
    ).toBeGreaterThanOrEqual(1);
  });

  e2eTest(run, "/proxyMode answers iptables; /configz shows the flags in upstream's layout", async () => {
    const mode = await httpGet(run.topo!, "node", `${METRICS}/proxyMode`);
    expect(mode.status, describeHttp(mode)).toBe(200);
    expect(mode.body).toBe("iptables");
    const r = await httpGet(run.topo!, "node", `${METRICS}/configz`);
    expect(r.status, describeHttp(r)).toBe(200);
    expect(r.headers?.["content-type"]).toContain("application/json");
    const body = jsonBody(r);
    expect(Object.keys(body)).toEqual(["kubeproxy.config.k8s.io"]);
    // biome-ignore lint/suspicious/noExplicitAny: a JSON document read field by field
    const c = body["kubeproxy.config.k8s.io"] as any;
    // 1.36+: the public v1alpha1 document, kind and apiVersion included.
    expect(c.kind).toBe("KubeProxyConfiguration");
    expect(c.apiVersion).toBe("kubeproxy.config.k8s.io/v1alpha1");
    expect(c.mode).toBe("iptables");
    expect(c.hostnameOverride).toBe(NODE_NAME);
    expect(c.clientConnection.kubeconfig).toBe(run.api!.kubeconfig);
    expect(c.metricsBindAddress).toBe("127.0.0.1:10249");
    expect(c.healthzBindAddress).toBe("127.0.0.1:10256");
    expect(c.clusterCIDR).toBe("203.0.113.0/24");
    expect(c.configSyncPeriod).toBe("10m0s");
    expect(c.iptables.masqueradeBit).toBe(13);
    expect(c.iptables.syncPeriod).toBe("30s");
    expect(c.conntrack.maxPerCore).toBe(0);
  });

  e2eTest(run, "the birth cry: a Normal Starting event on the Node reaches the API server", async () => {
    const server = run.api!.server;
    const deadline = Date.now() + 10_000;
    const starting = () => server.postedEvents.filter((e) => e.reason === "Starting");
    while (starting().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const events = starting();
    expect(events.length, JSON.stringify(server.postedEvents)).toBe(1);
    // Upstream v1.31 (cmd/kube-proxy/app/server.go birthCry) records, through the
    // events.k8s.io/v1 recorder: type Normal, reason "Starting", action "StartKubeProxy", and an
    // empty note, which Go's omitempty leaves out of the body.
    expect(events[0]).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      metadata: { namespace: "default" },
      type: "Normal",
      reason: "Starting",
      action: "StartKubeProxy",
      reportingController: "kube-proxy",
      regarding: { kind: "Node", name: NODE_NAME },
    });
    expect(events[0], "the birth cry's note").not.toHaveProperty("note");
    const posts = server.requests.filter((r) => r.method === "POST" && r.kind === "Event");
    expect(posts[0]?.path).toBe("/apis/events.k8s.io/v1/namespaces/default/events");
  });
});

// ---------------------------------------------------------------------------------------------

// Its endpoint has no pod (never dialled): it only gives the Service a cluster IP rule to wait for.
const LONELY: ServiceSpec = {
  name: "lonely",
  clusterIP: "198.51.100.60",
  ports: [HTTP_PORT],
  endpoints: [{ ip: "203.0.113.69" }],
};

const ALT_PORT = { name: "alt", port: 81, targetPort: 8081 } as const;
/** The new port has no endpoints: it shows as a REJECT in filter, named in the rule's comment. */
const hasAlt = (v: RulesView) => `${v.nat}${v.filter}`.includes("default/lonely:alt");

describe("/healthz and /livez: syncing, a stalled sync, an ineligible node", () => {
  const run: Run = {};
  const lockFile = () => join(run.dir!, "xtables.lock");

  beforeAll(async () => {
    await start(run, {
      pods: [],
      services: [LONELY],
      // A short sync period makes the health timeout (twice the period) 4 s. The legacy backend
      // takes the xtables lock, and XTABLES_LOCKFILE points it at a file of this test's own.
      extraArgs: ["--iptables-sync-period=2s", "--iptables-min-sync-period=0s", "--iptables-backend=legacy"],
      env: { XTABLES_LOCKFILE: "$DIR/xtables.lock" },
    });
    await firstSync(run, [LONELY]);
  }, TEST_TIMEOUT_MS);

  afterAll(async () => {
    await stop(run);
  }, TEST_TIMEOUT_MS);

  const healthz = (done: (r: { status?: number; body?: string }) => boolean, what: string) =>
    pollHttp(run.topo!, "node", `${HEALTHZ}/healthz`, done, what, {
      daemon: run.kubeProxy!,
      timeoutMs: 20_000,
    });
  const livez = (done: (r: { status?: number }) => boolean, what: string) =>
    pollHttp(run.topo!, "node", `${HEALTHZ}/livez`, done, what, {
      daemon: run.kubeProxy!,
      timeoutMs: 20_000,
    });

  e2eTest(
    run,
    "200 with upstream's (1.33+) JSON while syncs keep up, each family's state included",
    async () => {
      // The status map appears once a family has synced.
      const hz = await healthz(
        (r) => r.status === 200 && /"status":/.test(r.body ?? ""),
        "/healthz 200 with status",
      );
      const h = jsonBody(hz);
      expect(Object.keys(h)).toEqual(["lastUpdated", "currentTime", "nodeEligible", "healthy", "status"]);
      expect(Number.isNaN(Date.parse(h.lastUpdated as string))).toBe(false);
      expect(Number.isNaN(Date.parse(h.currentTime as string))).toBe(false);
      expect(h.nodeEligible).toBe(true);
      expect(h.healthy).toBe(true);
      expect((h.status as Record<string, { healthy: boolean }>).IPv4?.healthy).toBe(true);
      expect(hz.headers?.["content-type"]).toBe("application/json");
      const lz = await livez((r) => r.status === 200, "/livez 200");
      expect(Object.keys(jsonBody(lz))).toEqual(["lastUpdated", "currentTime", "healthy", "status"]);
    },
  );

  e2eTest(
    run,
    "503 when a change waits past the timeout (xtables lock held), 200 once it syncs",
    async () => {
      const lock = await holdLock(run.topo!, lockFile(), 30);
      try {
        // A change to sync: the Service gains a port.
        run.api!.server.update(
          "Service",
          serviceObjects({ ...LONELY, ports: [HTTP_PORT, ALT_PORT] }, NODE_NAME).service,
        );
        const bad = await healthz((r) => r.status === 503, "/healthz 503 while the sync is stuck");
        expect(jsonBody(bad).nodeEligible, describeHttp(bad)).toBe(true);
        const badLive = await livez((r) => r.status === 503, "/livez 503 while the sync is stuck");
        const live = jsonBody(badLive);
        expect(Object.keys(live)).toEqual(["lastUpdated", "currentTime", "healthy", "status"]);
        expect(live.healthy).toBe(false);
        expect((live.status as Record<string, { healthy: boolean }>).IPv4?.healthy).toBe(false);
        // The sync really is stuck: the new port is not in the rules yet.
        expect(hasAlt(await rulesView(run.topo!))).toBe(false);
      } finally {
        await lock.release();
      }
      await healthz((r) => r.status === 200, "/healthz 200 after the lock is released");
      await livez((r) => r.status === 200, "/livez 200 after the lock is released");
      await waitForRules(run.topo!, run.kubeProxy, hasAlt, "the new port's rules", 10_000);
    },
  );

  e2eTest(run, "an ineligible Node (autoscaler taint, then deletion): /healthz 503, /livez 200", async () => {
    const server = run.api!.server;
    const node = nodeObject(NODE) as Record<string, unknown> & { spec: Record<string, unknown> };
    server.update("Node", {
      ...node,
      spec: {
        ...node.spec,
        taints: [{ key: "ToBeDeletedByClusterAutoscaler", value: "1", effect: "NoSchedule" }],
      },
    });
    const tainted = await healthz((r) => r.status === 503, "/healthz 503 for a tainted Node");
    expect(jsonBody(tainted).nodeEligible, describeHttp(tainted)).toBe(false);
    const live = await httpGet(run.topo!, "node", `${HEALTHZ}/livez`);
    expect(live.status, describeHttp(live)).toBe(200);

    server.update("Node", node);
    await healthz((r) => r.status === 200, "/healthz 200 once the taint is gone");

    server.update("Node", {
      ...node,
      metadata: { ...(node.metadata as object), deletionTimestamp: new Date().toISOString() },
    });
    const deleting = await healthz((r) => r.status === 503, "/healthz 503 for a Node being deleted");
    expect(jsonBody(deleting).nodeEligible, describeHttp(deleting)).toBe(false);
    const live2 = await httpGet(run.topo!, "node", `${HEALTHZ}/livez`);
    expect(live2.status, describeHttp(live2)).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------

const HPODS: PodSpec[] = [
  { name: "h1", ip: "203.0.113.51" },
  { name: "h2", ip: "203.0.113.52" },
];
const HC_PORT = 30300;
const LB_LOCAL: ServiceSpec = {
  name: "lb-local",
  type: "LoadBalancer",
  clusterIP: "198.51.100.70",
  ports: [{ ...HTTP_PORT, nodePort: 30085 }],
  loadBalancerIPs: ["192.0.2.210"],
  externalTrafficPolicy: "Local",
  healthCheckNodePort: HC_PORT,
  // Two endpoints here, one on another node (no pod needed: it is never dialled).
  endpoints: [{ ip: "203.0.113.51" }, { ip: "203.0.113.52" }, { ip: "203.0.113.59", node: "node-b" }],
};

describe("a healthCheckNodePort, served on the nodePortAddresses IP only", () => {
  const run: Run = {};
  const url = `http://${ADDR.node}:${HC_PORT}/`;

  beforeAll(async () => {
    await start(run, {
      pods: HPODS,
      client: true,
      client2: true,
      services: [LB_LOCAL],
      extraArgs: [`--nodeport-addresses=${ADDR.node}/32`],
    });
    await firstSync(run, [LB_LOCAL]);
  }, TEST_TIMEOUT_MS);

  afterAll(async () => {
    await stop(run);
  }, TEST_TIMEOUT_MS);

  e2eTest(run, "200 with localEndpoints=2 and the endpoint-weight header", async () => {
    const r = await pollHttp(
      run.topo!,
      "client",
      url,
      (x) => x.status === 200,
      "the health check to answer 200",
      { daemon: run.kubeProxy!, timeoutMs: 20_000 },
    );
    expect(jsonBody(r)).toEqual({
      service: { namespace: "default", name: "lb-local" },
      localEndpoints: 2,
      serviceProxyHealthy: true,
    });
    expect(r.headers?.["x-load-balancing-endpoint-weight"]).toBe("2");
    expect(r.headers?.["content-type"]).toBe("application/json");
  });

  e2eTest(run, "the same port on the node's other address is refused", async () => {
    const other = await httpGet(run.topo!, "client2", `http://${ADDR.nodeToClient2}:${HC_PORT}/`, {
      timeoutMs: 3000,
    });
    expect(other.ok ? `served: ${describeHttp(other)}` : other.error).toBe("refused");
    // client2 does reach the node (the refusal above is the listener's absence, not routing).
    const path = await probeOnce(run.topo!, "client2", {
      target: `${ADDR.nodeToClient2}:30085`,
      timeoutMs: 3000,
    });
    expect(path.ok || path.error === "refused", JSON.stringify(path)).toBe(true);
  });

  e2eTest(run, "dual-stack: an endpoint with an IPv4 and an IPv6 address counts once", async () => {
    // The Service becomes dual-stack and its two local Pods get IPv6 addresses in a second slice.
    const { service, slice } = serviceObjects(LB_LOCAL, NODE_NAME);
    const v6ClusterIP = "2001:db8:70::70";
    run.api!.server.update("Service", {
      ...service,
      spec: {
        ...service.spec,
        ipFamilies: ["IPv4", "IPv6"],
        ipFamilyPolicy: "RequireDualStack",
        clusterIPs: [LB_LOCAL.clusterIP, v6ClusterIP],
      },
    });
    const v6Of = (ip: string) => `2001:db8:1::${ip.split(".")[3]}`;
    const v4 = slice!;
    run.api!.server.create("EndpointSlice", {
      ...v4,
      metadata: {
        ...v4.metadata,
        name: `${v4.metadata!.name}-v6`,
        uid: undefined,
        resourceVersion: undefined,
      },
      addressType: "IPv6",
      endpoints: (v4.endpoints as { addresses: string[] }[]).map((e) => ({
        ...e,
        addresses: e.addresses.map(v6Of),
      })),
    });
    // Synced once the IPv6 cluster IP is programmed (where the node proxies IPv6 at all).
    if ((await familiesProxied(run.topo!)) === 2) {
      const deadline = Date.now() + 20_000;
      for (let i = 0; i < 100 && !(await ip6Nat(run.topo!)).includes(v6ClusterIP); i++) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${v6ClusterIP} in ip6tables nat`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    // The count is reported after each sync; read it a few times to see the settled value.
    for (let i = 0; i < 3; i++) {
      const r = await httpGet(run.topo!, "client", url, { timeoutMs: 3000 });
      expect(r.status, describeHttp(r)).toBe(200);
      expect(jsonBody(r)).toMatchObject({ localEndpoints: 2 });
      await new Promise((res) => setTimeout(res, 300));
    }
  });

  e2eTest(run, "503 with localEndpoints=0 once the local endpoints are gone", async () => {
    run.api!.server.update(
      "EndpointSlice",
      serviceObjects({ ...LB_LOCAL, endpoints: [{ ip: "203.0.113.59", node: "node-b" }] }, NODE_NAME).slice!,
    );
    const r = await pollHttp(
      run.topo!,
      "client",
      url,
      (x) => x.status === 503,
      "the health check to answer 503",
      { daemon: run.kubeProxy!, timeoutMs: 20_000 },
    );
    expect(jsonBody(r)).toMatchObject({ localEndpoints: 0 });
    expect(r.headers?.["x-load-balancing-endpoint-weight"]).toBe("0");
  });
});

// ---------------------------------------------------------------------------------------------

const RPODS: PodSpec[] = [{ name: "r1", ip: "203.0.113.61" }];
const NP_R: ServiceSpec = {
  name: "np-r",
  type: "NodePort",
  clusterIP: "198.51.100.80",
  ports: [{ ...HTTP_PORT, nodePort: 30086 }],
  endpoints: [{ ip: "203.0.113.61" }],
};

describe("nodePortAddresses without loopback: route_localnet stays off", () => {
  const run: Run = {};

  beforeAll(async () => {
    await start(run, {
      pods: RPODS,
      client: true,
      services: [NP_R],
      extraArgs: ["--nodeport-addresses=192.0.2.0/26"],
    });
    await firstSync(run, [NP_R]);
  }, TEST_TIMEOUT_MS);

  afterAll(async () => {
    await stop(run);
  }, TEST_TIMEOUT_MS);

  e2eTest(run, "the NodePort serves on the node IP, not on 127.0.0.1, and route_localnet is 0", async () => {
    const viaNode = await probeOnce(run.topo!, "client", { target: `${ADDR.node}:30086`, timeoutMs: 3000 });
    expect(viaNode.ok, JSON.stringify(viaNode)).toBe(true);
    expect(viaNode.reply?.pod).toBe("r1");
    const local = await probeOnce(run.topo!, "node", { target: "127.0.0.1:30086", timeoutMs: 1500 });
    expect(local.ok, `127.0.0.1:30086 must not be served: ${JSON.stringify(local)}`).toBe(false);
    const sysctl = await run.topo!.must("node", ["sysctl", "-n", "net.ipv4.conf.all.route_localnet"]);
    expect(sysctl.trim(), "net.ipv4.conf.all.route_localnet in the node namespace").toBe("0");
  });
});
