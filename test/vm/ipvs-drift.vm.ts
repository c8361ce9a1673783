// ipvs mode's drift, in the kernel VM (test/vm/kernel-vm.test.ts runs this file there): the
// built binary programs IPVS from a --state file; another program deletes a real server
// (ipvsadm -d) and a member of KUBE-CLUSTER-IP (ipset del) behind its back. GET /debug/drift
// names them, the full sync it asks for adds them back, and
// kubeproxy_ts_drift_differences_total{kind} counts them. Then a real server deleted and found by
// the periodic check (KPTS_DRIFT_CHECK_INTERVAL_MS), which logs one line naming it.
//
// By hand: scripts/kernel-vm -- bash -c 'modprobe nf_conntrack &&
//   node_modules/.bin/bun test --timeout 600000 ./test/vm/ipvs-drift.vm.ts'
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { join } from "node:path";
import { tempDir } from "../support/binary.ts";
import { NODE_METRICS_URL } from "../support/e2e-api-harness.ts";
import { type NodeSpec, renderState, type ServiceSpec, writeStateFile } from "../support/e2e-cluster.ts";
import {
  E2E_TEST_TIMEOUT_MS,
  e2eTest,
  type Harness,
  harnessDiagnostics,
  tearDownHarness,
} from "../support/e2e-harness.ts";
import { describeHttp, httpGet, metricValue, parseMetrics } from "../support/e2e-http.ts";
import { ipvsDiagnostics, virtualServer, waitForIpvs } from "../support/e2e-ipvs.ts";
import { NODE_NAME, startKubeProxy } from "../support/e2e-kubeproxy.ts";
import { startServer } from "../support/e2e-traffic.ts";
import { requireKernelVm, scaled } from "../support/kernel-vm.ts";
import { ADDR, createTopology, type PodSpec } from "../support/netns.ts";
import { until } from "../support/until.ts";

requireKernelVm("ipvs-drift.vm.ts");

const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const PODS: PodSpec[] = [
  { name: "p1", ip: "203.0.113.11" },
  { name: "p2", ip: "203.0.113.12" },
];
const WEB: ServiceSpec = {
  name: "web",
  clusterIP: "198.51.100.10",
  ports: [{ name: "http", port: 80, targetPort: 8080 }],
  endpoints: [{ ip: "203.0.113.11" }, { ip: "203.0.113.12" }],
};
const VS = "198.51.100.10:80";
const GONE = "203.0.113.12:8080";

interface Report {
  readonly mode: string;
  readonly skipped?: string;
  readonly differences: { kind: string; what: string; expected: string; found: string; ipFamily?: string }[];
}

async function getDrift(h: Harness): Promise<Report> {
  const r = await httpGet(h.topo!, "node", `${NODE_METRICS_URL}/debug/drift`, { timeoutMs: scaled(20_000) });
  if (!r.ok || r.status !== 200) throw new Error(`GET /debug/drift: ${describeHttp(r)}`);
  return JSON.parse(r.body ?? "") as Report;
}

/** /debug/drift once nothing is pending (the start's syncs done). */
async function settledDrift(h: Harness, limitMs: number): Promise<Report> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const report = await getDrift(h);
    if (report.skipped === undefined || Date.now() > deadline) return report;
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function counted(h: Harness, kind = "real-server"): Promise<number> {
  const r = await httpGet(h.topo!, "node", `${NODE_METRICS_URL}/metrics`, { timeoutMs: scaled(10_000) });
  if (!r.ok || r.status !== 200) throw new Error(`GET /metrics: ${describeHttp(r)}`);
  return metricValue(parseMetrics(r.body ?? ""), "kubeproxy_ts_drift_differences_total", { kind }) ?? 0;
}

const hasBoth = (v: Parameters<Parameters<typeof waitForIpvs>[2]>[0]) =>
  virtualServer(v, "TCP", VS)?.reals.length === 2;

async function start(h: Harness, intervalMs: number): Promise<void> {
  h.topo = await createTopology({ pods: PODS });
  await Promise.all(PODS.map((p) => startServer(h.topo!, p.name, { tcp: [8080] })));
  h.dir = tempDir("kpts-ipvs-drift-");
  h.stateFile = join(h.dir, "state.yaml");
  writeStateFile(h.stateFile, renderState(NODE, [WEB]));
  h.kubeProxy = startKubeProxy(h.topo, {
    stateFile: h.stateFile,
    mode: "ipvs",
    // ipvs mode compares everything with the kernel once --ipvs-sync-period has passed, which
    // would repair the deletion on its own: long enough that only the drift check does.
    extraArgs: ["--ipvs-sync-period=10m"],
    env: { KPTS_DRIFT_CHECK_INTERVAL_MS: String(intervalMs) },
  });
  try {
    await waitForIpvs(h.topo, h.kubeProxy, hasBoth, "the first sync's real servers", 30_000);
  } catch (err) {
    console.error(`\n===== diagnostics (setup) =====\n${await harnessDiagnostics(h)}`);
    throw err;
  }
}

async function deleteRealServer(h: Harness): Promise<void> {
  await h.topo!.must("node", ["ipvsadm", "-d", "-t", VS, "-r", GONE], { timeoutMs: 10_000 });
}

/** The ClusterIP's member of KUBE-CLUSTER-IP, as ipset prints it. */
const MEMBER = "198.51.100.10,tcp:80";

async function hasMember(h: Harness): Promise<boolean> {
  const listed = await h.topo!.must("node", ["ipset", "list", "KUBE-CLUSTER-IP"], { timeoutMs: 10_000 });
  return listed.split("\n").some((l) => l.trim() === MEMBER);
}

describe("ipvs mode: drift, asked for on /debug/drift", () => {
  const h: Harness = { extraDiagnostics: ipvsDiagnostics };
  beforeAll(() => start(h, 0), E2E_TEST_TIMEOUT_MS);
  afterAll(() => tearDownHarness(h), E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "a real server (ipvsadm -d) and an ipset member (ipset del) deleted are named, put back by the next sync, and counted",
    async () => {
      const limitMs = scaled(30_000);
      expect(await settledDrift(h, limitMs)).toEqual({ mode: "ipvs", differences: [] });
      expect(await hasMember(h)).toBe(true);
      await deleteRealServer(h);
      await h.topo!.must("node", ["ipset", "del", "KUBE-CLUSTER-IP", MEMBER], { timeoutMs: 10_000 });
      const report = await getDrift(h);
      expect(report.differences).toEqual([
        {
          kind: "real-server",
          what: `TCP ${VS} -> ${GONE}`,
          expected: "weight 1",
          found: "absent",
          ipFamily: "IPv4",
        },
        {
          kind: "set-element",
          what: `ipset KUBE-CLUSTER-IP ${MEMBER}`,
          expected: "present",
          found: "absent",
          ipFamily: "IPv4",
        },
      ]);
      await waitForIpvs(h.topo!, h.kubeProxy, hasBoth, "the real server back", 30_000);
      await until("the ipset member back", () => hasMember(h), limitMs);
      expect(await counted(h)).toBe(1);
      expect(await counted(h, "set-element")).toBe(1);
      expect(h.kubeProxy!.stderr()).toMatch(/Kernel state drifted from what kube-proxy-ts wrote/);
      expect(await settledDrift(h, limitMs)).toEqual({ mode: "ipvs", differences: [] });
    },
    scaled(120_000),
  );
});

describe("ipvs mode: drift found by the periodic check", () => {
  const h: Harness = { extraDiagnostics: ipvsDiagnostics };
  beforeAll(() => start(h, scaled(2000)), E2E_TEST_TIMEOUT_MS);
  afterAll(() => tearDownHarness(h), E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "a real server deleted with ipvsadm -d is logged, counted and put back",
    async () => {
      // Past the start's syncs, which would put it back before any check could see it.
      expect(await settledDrift(h, scaled(30_000))).toEqual({ mode: "ipvs", differences: [] });
      await deleteRealServer(h);
      await waitForIpvs(h.topo!, h.kubeProxy, hasBoth, "the real server back", 30_000);
      const line = await h.kubeProxy!.waitForOutput(/Kernel state drifted[^\n]*/, 30_000);
      expect(line[0]).toContain(`real-server TCP ${VS} -> ${GONE}: missing (weight 1)`);
      expect(await counted(h)).toBe(1);
    },
    scaled(120_000),
  );
});
