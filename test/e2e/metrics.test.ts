// What the running binary serves on its metrics port, on the real kernel: dist/kube-proxy-ts runs
// in iptables mode from a --state file inside a throwaway node namespace, and the test scrapes
// 127.0.0.1:10249 from inside that namespace after the first sync. A second run points the binary
// at an API server address where nothing listens, to see its REST client metrics.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/binary.ts";
import { type NodeSpec, renderState, type ServiceSpec, writeStateFile } from "../support/e2e-cluster.ts";
import { type Harness, tearDownHarness } from "../support/e2e-harness.ts";
import {
  diagnostics,
  hasServiceRule,
  kubeProxyBinary,
  NODE_NAME,
  startKubeProxy,
  waitForRules,
} from "../support/e2e-kubeproxy.ts";
import { BUN, type Daemon, describeSummary, probe, startServer } from "../support/e2e-traffic.ts";
import { ADDR, createTopology, type Topology } from "../support/netns.ts";

const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const NODE_PORT = 30080;
const SERVICES: readonly ServiceSpec[] = [
  {
    name: "web",
    type: "NodePort",
    clusterIP: "198.51.100.10",
    ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: NODE_PORT }],
    endpoints: [{ ip: "203.0.113.2" }],
  },
  {
    name: "db",
    clusterIP: "198.51.100.11",
    ports: [{ name: "pg", port: 5432, targetPort: 8080 }],
    endpoints: [{ ip: "203.0.113.2" }],
  },
  // A Service without any EndpointSlice: counted as a Service change only.
  { name: "idle", clusterIP: "198.51.100.12", ports: [{ name: "x", port: 81, targetPort: 8080 }] },
];
const SLICES = SERVICES.filter((s) => s.endpoints).length;

/** One HTTP request made from inside namespace `ns`: "<status>\n<body>". */
async function httpIn(topo: Topology, ns: string, url: string, method = "GET"): Promise<[number, string]> {
  const script =
    "const [u,m]=process.argv.slice(-2);" +
    "const r=await fetch(u,{method:m,signal:AbortSignal.timeout(5000)});" +
    "process.stdout.write(r.status+'\\n'+await r.text());";
  const r = await topo.run(ns, [BUN, "-e", script, url, method], { timeoutMs: 15_000 });
  if (r.code !== 0) throw new Error(`${method} ${url} from ${ns}: exit ${r.code}\n${r.stderr}`);
  const nl = r.stdout.indexOf("\n");
  return [Number(r.stdout.slice(0, nl)), r.stdout.slice(nl + 1)];
}

/** Families in a scrape: name -> TYPE. */
function types(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(m[1]!, m[2]!);
  return out;
}

/** The value of the one sample line that starts with `series` (name plus optional labels). */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Scrapes until `ready` holds (bounded), failing with the daemon's output if it exits. */
async function scrapeUntil(
  topo: Topology,
  daemon: Daemon,
  ready: (text: string) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<string> {
  let last = "";
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 500 && Date.now() < deadline; i++) {
    if (daemon.exitCode() !== undefined) throw new Error(`kube-proxy-ts exited:\n${daemon.stderr()}`);
    try {
      const [status, body] = await httpIn(topo, "node", "http://127.0.0.1:10249/metrics");
      if (status === 200) last = body;
      if (status === 200 && ready(body)) return body;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}; last scrape:\n${last}`);
}

describe("metrics of the running binary (iptables mode, --state)", () => {
  const h: Harness = {};
  let first = "";

  beforeAll(async () => {
    h.topo = await createTopology({ pods: [{ name: "web", ip: "203.0.113.2" }], client: false });
    await startServer(h.topo, "web", { tcp: [8080] });
    h.dir = tempDir("kpts-metrics-");
    const stateFile = join(h.dir, "state.yaml");
    writeStateFile(stateFile, renderState(NODE, SERVICES));
    h.kubeProxy = startKubeProxy(h.topo, { stateFile });
    try {
      await waitForRules(
        h.topo,
        h.kubeProxy,
        (v) => hasServiceRule(v.nat, "default/web:http cluster IP"),
        "the first sync",
        30_000,
      );
      first = await scrapeUntil(
        h.topo,
        h.kubeProxy,
        (t) => t.includes("kubeproxy_sync_proxy_rules_last_timestamp_seconds "),
        "a scrape after the first sync",
      );
    } catch (err) {
      console.error(
        `\n===== diagnostics (setup) =====\n${await diagnostics(h.topo, h.kubeProxy, stateFile)}`,
      );
      throw err;
    }
  }, 90_000);

  afterAll(() => tearDownHarness(h), 30_000);

  test("change counters equal the Services and EndpointSlices delivered; nothing left pending", () => {
    const t = types(first);
    expect(t.get("kubeproxy_sync_proxy_rules_service_changes_total")).toBe("counter");
    expect(t.get("kubeproxy_sync_proxy_rules_endpoint_changes_pending")).toBe("gauge");
    expect(sample(first, "kubeproxy_sync_proxy_rules_service_changes_total")).toBe(SERVICES.length);
    expect(sample(first, "kubeproxy_sync_proxy_rules_endpoint_changes_total")).toBe(SLICES);
    expect(sample(first, "kubeproxy_sync_proxy_rules_service_changes_pending")).toBe(0);
    expect(sample(first, "kubeproxy_sync_proxy_rules_endpoint_changes_pending")).toBe(0);
  });

  test("process_* families with live values, and no go_* or nodejs_* families", () => {
    const t = types(first);
    expect(t.get("process_cpu_seconds_total")).toBe("counter");
    for (const g of [
      "process_resident_memory_bytes",
      "process_virtual_memory_bytes",
      "process_virtual_memory_max_bytes",
      "process_open_fds",
      "process_max_fds",
      "process_start_time_seconds",
    ]) {
      expect(t.get(g)).toBe("gauge");
      expect(sample(first, g)).toBeGreaterThan(0);
    }
    const started = sample(first, "process_start_time_seconds")!;
    expect(started).toBeLessThanOrEqual(Date.now() / 1000 + 5);
    expect(started).toBeGreaterThan(Date.now() / 1000 - 600);
    expect(sample(first, "process_resident_memory_bytes")).toBeGreaterThan(1024 * 1024);
    expect([...t.keys()].filter((n) => n.startsWith("go_") || n.startsWith("nodejs_"))).toEqual([]);
  });

  test("kubernetes_build_info is 1 with upstream's labels, describing this build", () => {
    expect(types(first).get("kubernetes_build_info")).toBe("gauge");
    const line = first.split("\n").find((l) => l.startsWith("kubernetes_build_info{"));
    expect(line).toBeDefined();
    const labels = [...line!.matchAll(/(\w+)="/g)].map((m) => m[1]);
    expect(labels).toEqual([
      "build_date",
      "compiler",
      "git_commit",
      "git_tree_state",
      "git_version",
      "go_version",
      "major",
      "minor",
      "platform",
    ]);
    expect(line).toMatch(/git_version="v\d+\.\d+\.\d+[^"]*"/);
    expect(line).toMatch(/compiler="bun"/);
    expect(line).toMatch(/platform="linux\/\w+"/);
    expect(line!.endsWith(" 1")).toBe(true);
  });

  test("the nfacct counters are counters; loopback NodePort traffic counts", async () => {
    const t = types(first);
    expect(t.get("kubeproxy_iptables_ct_state_invalid_dropped_packets_total")).toBe("counter");
    expect(t.get("kubeproxy_iptables_localhost_nodeports_accepted_packets_total")).toBe("counter");
    expect(sample(first, "kubeproxy_iptables_localhost_nodeports_accepted_packets_total")).toBe(0);

    const s = await probe(h.topo!, "node", { target: `127.0.0.1:${NODE_PORT}`, count: 3, timeoutMs: 3000 });
    expect(s.okCount, describeSummary(s)).toBe(3);
    const after = await scrapeUntil(
      h.topo!,
      h.kubeProxy!,
      (x) => (sample(x, "kubeproxy_iptables_localhost_nodeports_accepted_packets_total") ?? 0) >= 3,
      "the localhost NodePort counter to count 3 connections",
    );
    expect(
      sample(after, "kubeproxy_iptables_localhost_nodeports_accepted_packets_total"),
    ).toBeGreaterThanOrEqual(3);
  }, 60_000);

  test("/metrics/slis records /healthz checks (and only there); DELETE resets it", async () => {
    const topo = h.topo!;
    const slis = "http://127.0.0.1:10249/metrics/slis";
    expect(await httpIn(topo, "node", "http://127.0.0.1:10249/metrics/slis", "DELETE")).toEqual([
      200,
      "metrics reset\n",
    ]);
    expect(await httpIn(topo, "node", slis)).toEqual([200, ""]);
    expect((await httpIn(topo, "node", "http://127.0.0.1:10249/healthz"))[0]).toBe(200);
    expect((await httpIn(topo, "node", "http://127.0.0.1:10249/healthz?exclude=ping"))[0]).toBe(200);
    expect((await httpIn(topo, "node", "http://127.0.0.1:10249/healthz"))[0]).toBe(200);
    const [status, text] = await httpIn(topo, "node", slis);
    expect(status).toBe(200);
    expect(types(text)).toEqual(
      new Map([
        ["kubernetes_healthcheck", "gauge"],
        ["kubernetes_healthchecks_total", "counter"],
      ]),
    );
    expect(sample(text, 'kubernetes_healthcheck{name="ping",type="healthz"}')).toBe(1);
    expect(sample(text, 'kubernetes_healthchecks_total{name="ping",status="success",type="healthz"}')).toBe(
      2,
    );
    const [, metrics] = await httpIn(topo, "node", "http://127.0.0.1:10249/metrics");
    expect(metrics).not.toContain("kubernetes_healthcheck");
  }, 60_000);

  test("proxier health requests are counted on /metrics", async () => {
    const topo = h.topo!;
    const [code] = await httpIn(topo, "node", "http://127.0.0.1:10256/healthz");
    const text = await scrapeUntil(
      topo,
      h.kubeProxy!,
      (x) => sample(x, `kubeproxy_proxy_healthz_total{code="${code}"}`) !== undefined,
      "kubeproxy_proxy_healthz_total",
    );
    expect(types(text).get("kubeproxy_proxy_healthz_total")).toBe("counter");
  }, 60_000);
});

describe("REST client metrics of the running binary", () => {
  const h: Harness = {};
  afterAll(() => tearDownHarness(h), 30_000);

  test("every API request is counted by code, method and host; lists report a latency", async () => {
    h.topo = await createTopology({ pods: [], client: false });
    h.dir = tempDir("kpts-metrics-api-");
    // An API server address inside the namespace where nothing listens: every request fails.
    const kubeconfig = join(h.dir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:16443'}}]",
        "users: [{name: u, user: {token: t}}]",
        "contexts: [{name: x, context: {cluster: c, user: u}}]",
        "current-context: x",
        "",
      ].join("\n"),
    );
    h.kubeProxy = h.topo.spawnDaemon("node", [
      kubeProxyBinary(),
      "--kubeconfig",
      kubeconfig,
      "--hostname-override",
      NODE_NAME,
      "--proxy-mode=iptables",
      `--bind-address=${ADDR.node}`,
      "--healthz-bind-address=127.0.0.1:10256",
      "--metrics-bind-address=127.0.0.1:10249",
      "--conntrack-max-per-core=0",
      "-v=2",
    ]);
    const series = 'rest_client_requests_total{code="<error>",host="127.0.0.1:16443",method="GET"}';
    const text = await scrapeUntil(
      h.topo,
      h.kubeProxy,
      (x) =>
        (sample(x, series) ?? 0) >= 2 &&
        sample(x, 'rest_client_request_duration_seconds_count{host="127.0.0.1:16443",verb="GET"}') !==
          undefined,
      "failed API requests to be counted",
      // Startup first looks the Node up for up to 30 s, as upstream does even with --bind-address
      // (the other family's node IP comes from it); the servers start after that.
      80_000,
    );
    const t = types(text);
    expect(t.get("rest_client_requests_total")).toBe("counter");
    expect(t.get("rest_client_request_duration_seconds")).toBe("histogram");
    expect(text).toContain(
      'rest_client_request_duration_seconds_bucket{host="127.0.0.1:16443",verb="GET",le="0.005"}',
    );
  }, 120_000);
});

describe("nfacct metrics when nfacct is not usable", () => {
  const h: Harness = {};
  afterAll(() => tearDownHarness(h), 30_000);

  test("both nfacct families are absent from /metrics, not 0", async () => {
    h.topo = await createTopology({ pods: [{ name: "web", ip: "203.0.113.2" }], client: false });
    h.dir = tempDir("kpts-metrics-nonfacct-");
    // An nfacct earlier on the daemon's PATH that fails as a kernel without nfnetlink_acct would.
    const bin = join(h.dir, "bin");
    mkdirSync(bin);
    writeFileSync(
      join(bin, "nfacct"),
      "#!/bin/sh\necho 'nfacct: netlink error: Operation not supported' >&2\nexit 1\n",
    );
    chmodSync(join(bin, "nfacct"), 0o755);
    const stateFile = join(h.dir, "state.yaml");
    writeStateFile(stateFile, renderState(NODE, SERVICES));
    h.kubeProxy = startKubeProxy(h.topo, {
      stateFile,
      env: { PATH: `${bin}:${process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin"}` },
    });
    const text = await scrapeUntil(
      h.topo,
      h.kubeProxy,
      (t) => t.includes("kubeproxy_sync_proxy_rules_last_timestamp_seconds "),
      "a scrape after the first sync",
    );
    for (const name of [
      "kubeproxy_iptables_ct_state_invalid_dropped_packets_total",
      "kubeproxy_iptables_localhost_nodeports_accepted_packets_total",
    ]) {
      expect(text, `${name} must be absent`).not.toContain(name);
    }
  }, 90_000);
});
