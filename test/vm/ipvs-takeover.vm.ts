// ipvs mode taking over a node upstream kube-proxy's ipvs mode ran on, in the kernel VM
// (test/vm/kernel-vm.test.ts runs this file there). The node namespace first gets what upstream
// (v1.31 to v1.37, which leave the same layout) leaves behind, built from its proxier tests'
// expectations (test/support/ipvs-upstream-node.ts): virtual servers loaded with `ipvsadm -R`,
// its ipsets with `ipset restore`, its KUBE-* chains and built-in jumps with iptables-restore, and
// kube-ipvs0 with the VIPs bound. Then the real binary starts in ipvs mode from a --state file
// that still has two of those Services (with new endpoints) but no longer the third: traffic to
// the kept ones works, nothing of the stale one is left (virtual server, VIP on kube-ipvs0, ipset
// member, KUBE- rule), and the whole state equals what a fresh node gets; `--cleanup` then
// leaves no virtual server, KUBE- ipset, KUBE- chain or kube-ipvs0.
//
// By hand: scripts/kernel-vm -- bash -c 'modprobe nf_conntrack &&
//   node_modules/.bin/bun test --timeout 600000 ./test/vm/ipvs-takeover.vm.ts'
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { join } from "node:path";
import { tempDir } from "../support/binary.ts";
import { type NodeSpec, renderState, type ServiceSpec, writeStateFile } from "../support/e2e-cluster.ts";
import {
  E2E_TEST_TIMEOUT_MS,
  e2eTest,
  type Harness,
  harnessDiagnostics,
  tearDownHarness,
} from "../support/e2e-harness.ts";
import {
  hasDummyDevice,
  ipvsDiagnostics,
  ipvsShape,
  ipvsView,
  kubeIpsets,
  virtualServer,
  waitForIpvs,
} from "../support/e2e-ipvs.ts";
import { iptablesSave, kubeProxyBinary, NODE_NAME, startKubeProxy } from "../support/e2e-kubeproxy.ts";
import { describeSummary, probe, startServer } from "../support/e2e-traffic.ts";
import {
  boundOnDummy,
  ipsetMembers,
  loadUpstreamIpvsNode,
  UPSTREAM_BOUND,
  UPSTREAM_LB,
  UPSTREAM_NP_UDP,
  UPSTREAM_STICKY,
} from "../support/ipvs-upstream-node.ts";
import { requireKernelVm, scaled } from "../support/kernel-vm.ts";
import { ADDR, createTopology, type PodSpec, type Topology } from "../support/netns.ts";

requireKernelVm("ipvs-takeover.vm.ts");

const CONNECT_MS = scaled(250);
const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const PODS: PodSpec[] = [
  { name: "p1", ip: "203.0.113.11" },
  { name: "p2", ip: "203.0.113.12" },
  { name: "p3", ip: "203.0.113.13" },
];

/** Upstream's TestLoadBalancerSourceRanges Service, still there, now with two endpoints. */
const LB: ServiceSpec = {
  name: "lb",
  type: "LoadBalancer",
  clusterIP: UPSTREAM_LB.clusterIP,
  ports: [{ name: "p80", port: 80, targetPort: 8080 }],
  loadBalancerIPs: [UPSTREAM_LB.lbIP],
  loadBalancerSourceRanges: [UPSTREAM_LB.sourceRange],
  externalTrafficPolicy: "Cluster",
  endpoints: [{ ip: "203.0.113.11" }, { ip: "203.0.113.12" }],
};
/** Upstream's TestSessionAffinity Service, still there, now with an endpoint. */
const STICKY: ServiceSpec = {
  name: "sticky",
  type: "NodePort",
  clusterIP: UPSTREAM_STICKY.clusterIP,
  externalIPs: [UPSTREAM_STICKY.externalIP],
  ports: [{ name: "p80", port: 80, targetPort: 8080, nodePort: UPSTREAM_STICKY.nodePort }],
  externalTrafficPolicy: "Cluster",
  sessionAffinity: "ClientIP",
  affinityTimeoutSeconds: 10800,
  endpoints: [{ ip: "203.0.113.13" }],
};
const SERVICES = [LB, STICKY];
const STICKY_TARGETS = [
  `${UPSTREAM_STICKY.clusterIP}:80`,
  `${UPSTREAM_STICKY.externalIP}:80`,
  `${ADDR.node}:${UPSTREAM_STICKY.nodePort}`,
];

/** The new state's virtual servers, each with its new real servers. */
function converged(v: Awaited<ReturnType<typeof ipvsView>>): boolean {
  const reals = (proto: string, addr: string) =>
    virtualServer(v, proto, addr)
      ?.reals.map((r) => r.address)
      .sort()
      .join();
  return (
    reals("TCP", `${UPSTREAM_LB.clusterIP}:80`) === "203.0.113.11:8080,203.0.113.12:8080" &&
    reals("TCP", `${UPSTREAM_LB.lbIP}:80`) === "203.0.113.11:8080,203.0.113.12:8080" &&
    STICKY_TARGETS.every((t) => reals("TCP", t) === "203.0.113.13:8080") &&
    virtualServer(v, "UDP", `${UPSTREAM_NP_UDP.clusterIP}:80`) === undefined
  );
}

/** Every KUBE- chain and every rule naming one, in nat and filter, without counters, sorted. */
async function kubeRules(topo: Topology): Promise<string[]> {
  const out: string[] = [];
  for (const table of ["nat", "filter"] as const) {
    for (const line of (await iptablesSave(topo, table)).split("\n")) {
      const l = line.replace(/ \[\d+:\d+\]$/, "");
      if (/^:KUBE-/.test(l) || (l.startsWith("-A ") && l.includes("KUBE-"))) out.push(`${table} ${l}`);
    }
  }
  return out.sort();
}

/** All of ipvs mode's node state that a takeover and a fresh start must agree on. */
async function nodeState(topo: Topology) {
  return {
    ipvs: ipvsShape(await ipvsView(topo)),
    sets: await ipsetMembers(topo),
    bound: await boundOnDummy(topo),
    rules: await kubeRules(topo),
  };
}

/** Probes every kept frontend from the client at once (each probe is a process: slow when emulated). */
async function trafficWorks(topo: Topology): Promise<void> {
  const lb = [`${UPSTREAM_LB.clusterIP}:80`, `${UPSTREAM_LB.lbIP}:80`];
  const runs = await Promise.all(
    [...lb, ...STICKY_TARGETS].map(async (target) => ({
      target,
      want: lb.includes(target) ? ["p1", "p2"] : ["p3"],
      s: await probe(topo, "client", { target, count: lb.includes(target) ? 6 : 3, timeoutMs: CONNECT_MS }),
    })),
  );
  for (const { target, want, s } of runs) {
    expect(s.ok, `${target}: ${describeSummary(s)}`).toBe(true);
    expect(Object.keys(s.backends).sort(), `${target}: ${describeSummary(s)}`).toEqual(want);
  }
}

const firstSynced = (h: Harness) =>
  waitForIpvs(h.topo!, h.kubeProxy, converged, "the new state's virtual servers, the stale one gone");

describe("ipvs mode takes over what upstream's ipvs mode left on a node", () => {
  const h: Harness = { extraDiagnostics: ipvsDiagnostics };

  beforeAll(async () => {
    h.topo = await createTopology({ pods: PODS });
    const topo = h.topo;
    await Promise.all(PODS.map((p) => startServer(topo, p.name, { tcp: [8080], udp: [5353] })));
    try {
      await loadUpstreamIpvsNode(topo);
      // What was loaded is there: the stale Service's virtual servers, VIP, set members, rule.
      const loaded = await nodeState(topo);
      expect(loaded.ipvs.some((l) => l.startsWith(`UDP ${UPSTREAM_NP_UDP.clusterIP}:80 `))).toBe(true);
      expect(loaded.bound).toEqual([...UPSTREAM_BOUND].sort());
      expect(loaded.sets["KUBE-NODE-PORT-UDP"]).toEqual([String(UPSTREAM_NP_UDP.nodePort)]);
      expect(loaded.rules.some((l) => l.includes("--match-set KUBE-NODE-PORT-UDP"))).toBe(true);
      expect(
        loaded.rules.filter((l) => / -A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) /.test(l)),
      ).toHaveLength(9);
      h.dir = tempDir("kpts-ipvs-takeover-");
      h.stateFile = join(h.dir, "state.yaml");
      writeStateFile(h.stateFile, renderState(NODE, SERVICES));
      h.kubeProxy = startKubeProxy(topo, { stateFile: h.stateFile, mode: "ipvs" });
      await firstSynced(h);
    } catch (err) {
      console.error(`\n===== diagnostics (setup) =====\n${await harnessDiagnostics(h)}`);
      throw err;
    }
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await tearDownHarness(h);
  }, E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "traffic to the kept Services works; nothing of the stale one stays; the state is a fresh node's",
    async () => {
      const topo = h.topo!;
      await trafficWorks(topo);
      const taken = await nodeState(topo);
      const stale = UPSTREAM_NP_UDP.clusterIP;
      expect(taken.ipvs.filter((l) => l.includes(`${stale}:`) || l.startsWith("UDP "))).toEqual([]);
      expect(taken.bound).not.toContain(stale);
      expect(taken.bound).toEqual(
        [
          UPSTREAM_LB.clusterIP,
          UPSTREAM_LB.lbIP,
          UPSTREAM_STICKY.clusterIP,
          UPSTREAM_STICKY.externalIP,
        ].sort(),
      );
      expect(
        Object.values(taken.sets)
          .flat()
          .filter((m) => m.includes(stale)),
      ).toEqual([]);
      expect(taken.sets["KUBE-NODE-PORT-UDP"] ?? []).toEqual([]);
      expect(taken.rules.filter((l) => l.includes("KUBE-NODE-PORT-UDP"))).toEqual([]);
      // Session affinity survived the takeover on every virtual server of the kept Service.
      for (const t of STICKY_TARGETS)
        expect(taken.ipvs.find((l) => l.startsWith(`TCP ${t} `))).toContain("persistent 10800");

      // The same binary on a node with nothing of kube-proxy's: what a fresh node gets.
      await h.kubeProxy!.kill(3000);
      const clean = await topo.run("node", [kubeProxyBinary(), "--cleanup"], { timeoutMs: 60_000 });
      expect(clean.code, `${clean.stderr}${clean.stdout}`).toBe(0);
      h.kubeProxy = startKubeProxy(topo, { stateFile: h.stateFile!, mode: "ipvs" });
      await firstSynced(h);
      await trafficWorks(topo);
      expect(taken).toEqual(await nodeState(topo));
    },
  );

  e2eTest(
    h,
    "--cleanup leaves no virtual server, no KUBE- ipset, no KUBE- chain and no kube-ipvs0",
    async () => {
      const topo = h.topo!;
      await h.kubeProxy!.kill(3000);
      const r = await topo.run("node", [kubeProxyBinary(), "--cleanup"], { timeoutMs: 60_000 });
      expect(r.code, `${r.stderr}${r.stdout}`).toBe(0);
      const v = await ipvsView(topo);
      expect(v.virtualServers, v.text).toEqual([]);
      expect(await kubeIpsets(topo)).toEqual([]);
      expect(await hasDummyDevice(topo)).toBe(false);
      expect(await kubeRules(topo)).toEqual([]);
    },
  );
});
