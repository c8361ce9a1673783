// The Service traffic cases every real-kernel proxy mode must pass, written once and run by
// test/e2e/iptables.test.ts and test/e2e/nftables.test.ts: the compiled binary runs as a daemon
// in the node namespace of a netns topology (test/support/netns.ts has the address plan),
// programs the mode's rules from a --state file, and real TCP/UDP traffic from clients, pods and
// the node proves each Service behaviour. State changes are made by rewriting the file. What
// differs between modes (how rules are read back, defaults) comes from a ModeRules.

import { afterAll, beforeAll, describe, expect } from "bun:test";
import { join } from "node:path";
import { tempDir } from "./binary.ts";
import { type NodeSpec, renderState, type ServiceSpec, writeStateFile } from "./e2e-cluster.ts";
import {
  E2E_TEST_TIMEOUT_MS,
  e2eTest,
  type Harness,
  tearDownHarness,
  withDiagnostics,
} from "./e2e-harness.ts";
import { NODE_NAME, startKubeProxy } from "./e2e-kubeproxy.ts";
import { expectedChains, type ModeRules, waitForModeRules } from "./e2e-mode-rules.ts";
import {
  describeSummary,
  type ProbeSummary,
  probe,
  probeInBackground,
  probeOnce,
  startServer,
} from "./e2e-traffic.ts";
import { scaled } from "./kernel-vm.ts";
import { ADDR, createTopology, type PodSpec } from "./netns.ts";

/**
 * A refusal must come well before the probes' 3 s timeout (that is what tells it from a drop),
 * but not within a kernel timer: one SYN or ARP retransmit on a busy machine costs 1 s.
 */
const REFUSED_WITHIN_MS = scaled(2500);
export const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
export const HTTP = { name: "http", port: 80, targetPort: 8080 } as const;
export const DNS = { name: "dns", port: 53, targetPort: 5353, protocol: "UDP" } as const;

/** Topology with echo servers in every pod, the --state file, and the daemon in `rules.mode`. */
export async function setUp<V>(
  h: Harness,
  rules: ModeRules<V>,
  pods: readonly PodSpec[],
  services: readonly ServiceSpec[],
): Promise<void> {
  if (rules.extraDiagnostics) h.extraDiagnostics = rules.extraDiagnostics;
  h.topo = await createTopology({ pods, client2: true });
  await Promise.all(pods.map((p) => startServer(h.topo!, p.name, { tcp: [8080], udp: [5353] })));
  h.dir = tempDir("kpts-e2e-");
  h.stateFile = join(h.dir, "state.yaml");
  writeStateFile(h.stateFile, renderState(NODE, services));
  h.kubeProxy = startKubeProxy(h.topo, { stateFile: h.stateFile, mode: rules.mode });
}

/** Waits for the first sync of `services`; fails setup with diagnostics instead of a bare timeout. */
export async function firstSync<V>(
  h: Harness,
  rules: ModeRules<V>,
  services: readonly ServiceSpec[],
): Promise<void> {
  await withDiagnostics(h, "setup", () =>
    waitForModeRules(
      rules,
      h.topo!,
      h.kubeProxy,
      (v) => rules.firstSyncDone(v, services),
      "the first sync (every Service's cluster IP dispatched)",
      30_000,
    ),
  );
}

export function backendsOf(s: ProbeSummary): string[] {
  return Object.keys(s.backends).sort();
}

// ---------------------------------------------------------------------------------------------

export const PODS: PodSpec[] = [
  { name: "p1", ip: "203.0.113.11" },
  { name: "p2", ip: "203.0.113.12" },
  { name: "p3", ip: "203.0.113.13" },
  { name: "p4", ip: "203.0.113.14" },
  { name: "p5", ip: "203.0.113.15" },
  { name: "p6", ip: "203.0.113.16" },
];
const ip = (pod: string) => PODS.find((p) => p.name === pod)!.ip;

export const WEB: ServiceSpec = {
  name: "web",
  clusterIP: "198.51.100.10",
  ports: [HTTP, DNS],
  endpoints: [{ ip: ip("p1") }, { ip: ip("p2") }, { ip: ip("p3") }],
};
export const STICKY: ServiceSpec = {
  name: "sticky",
  clusterIP: "198.51.100.11",
  ports: [HTTP],
  sessionAffinity: "ClientIP",
  affinityTimeoutSeconds: 600,
  endpoints: [{ ip: ip("p1") }, { ip: ip("p2") }, { ip: ip("p3") }],
};
export const NODEPORT: ServiceSpec = {
  name: "nodeport",
  type: "NodePort",
  clusterIP: "198.51.100.12",
  ports: [{ ...HTTP, nodePort: 30080 }],
  externalTrafficPolicy: "Cluster",
  endpoints: [{ ip: ip("p1") }, { ip: ip("p2") }],
};
export const EXTIP: ServiceSpec = {
  name: "extip",
  clusterIP: "198.51.100.13",
  externalIPs: ["192.0.2.130"],
  ports: [HTTP],
  endpoints: [{ ip: ip("p2") }],
};
export const LB: ServiceSpec = {
  name: "lb",
  type: "LoadBalancer",
  clusterIP: "198.51.100.14",
  ports: [{ ...HTTP, nodePort: 30081 }],
  loadBalancerIPs: ["192.0.2.200"],
  // client (192.0.2.1) is inside, client2 (192.0.2.65) is not.
  loadBalancerSourceRanges: [ADDR.clientNet],
  externalTrafficPolicy: "Cluster",
  endpoints: [{ ip: ip("p3") }],
};
export const LOCAL: ServiceSpec = {
  name: "local",
  type: "NodePort",
  clusterIP: "198.51.100.15",
  ports: [{ ...HTTP, nodePort: 30082 }],
  externalTrafficPolicy: "Local",
  // p5 is routed through this node like every pod, but the slice says it runs on node-b.
  endpoints: [{ ip: ip("p4") }, { ip: ip("p5"), node: "node-b" }],
};
export const EMPTY: ServiceSpec = {
  name: "empty",
  clusterIP: "198.51.100.16",
  ports: [HTTP, DNS],
  endpoints: [],
};
export const HAIRPIN: ServiceSpec = {
  name: "hairpin",
  clusterIP: "198.51.100.17",
  ports: [HTTP],
  endpoints: [{ ip: ip("p6") }],
};
export const CHURN: ServiceSpec = {
  name: "churn",
  clusterIP: "198.51.100.18",
  ports: [HTTP],
  endpoints: [{ ip: ip("p1") }, { ip: ip("p2") }, { ip: ip("p3") }],
};
export const INTERNAL_LOCAL: ServiceSpec = {
  name: "int-local",
  clusterIP: "198.51.100.19",
  ports: [HTTP],
  internalTrafficPolicy: "Local",
  // As for LOCAL: p5 is said to run on node-b.
  endpoints: [{ ip: ip("p4") }, { ip: ip("p5"), node: "node-b" }],
};
export const ALL = [WEB, STICKY, NODEPORT, EXTIP, LB, LOCAL, EMPTY, HAIRPIN, CHURN, INTERNAL_LOCAL];

/** The Service behaviours, one topology and daemon for all of them. */
export function describeServiceTraffic<V>(rules: ModeRules<V>): void {
  describe(`${rules.mode} mode: Service traffic through the real kernel`, () => {
    const h: Harness = {};

    beforeAll(async () => {
      await setUp(h, rules, PODS, ALL);
      await firstSync(h, rules, ALL);
    }, E2E_TEST_TIMEOUT_MS);

    afterAll(async () => {
      await tearDownHarness(h);
    }, E2E_TEST_TIMEOUT_MS);

    e2eTest(h, "ClusterIP: TCP and UDP reach a backend from a pod and from the node", async () => {
      const topo = h.topo!;
      const backends = ["p1", "p2", "p3"];
      for (const from of ["p4", "node"]) {
        const tcp = await probeOnce(topo, from, { target: `${WEB.clusterIP}:80` });
        expect(tcp.ok, `${from} tcp: ${JSON.stringify(tcp)}`).toBe(true);
        expect(backends).toContain(tcp.reply!.pod);
        expect(tcp.reply!.port).toBe(8080);
        const udp = await probeOnce(topo, from, { proto: "udp", target: `${WEB.clusterIP}:53` });
        expect(udp.ok, `${from} udp: ${JSON.stringify(udp)}`).toBe(true);
        expect(backends).toContain(udp.reply!.pod);
        expect(udp.reply!.port).toBe(5353);
      }
      // Pod to ClusterIP keeps the pod's address (in-cluster source, no masquerade).
      const fromPod = await probeOnce(topo, "p4", { target: `${WEB.clusterIP}:80` });
      expect(fromPod.reply!.peer).toBe(ip("p4"));
    });

    e2eTest(h, "ClusterIP: new connections spread over all three backends", async () => {
      const s = await probe(h.topo!, "p4", { target: `${WEB.clusterIP}:80`, count: 60 });
      expect(s.ok, describeSummary(s)).toBe(true);
      expect(backendsOf(s), describeSummary(s)).toEqual(["p1", "p2", "p3"]);
      const u = await probe(h.topo!, "p4", { proto: "udp", target: `${WEB.clusterIP}:53`, count: 60 });
      expect(u.ok, describeSummary(u)).toBe(true);
      expect(backendsOf(u), describeSummary(u)).toEqual(["p1", "p2", "p3"]);
    });

    e2eTest(h, "NodePort: the client reaches the Service on the node's address (masqueraded)", async () => {
      const s = await probe(h.topo!, "client", { target: `${ADDR.node}:30080`, count: 20 });
      expect(s.ok, describeSummary(s)).toBe(true);
      for (const b of backendsOf(s)) expect(["p1", "p2"]).toContain(b);
      // externalTrafficPolicy Cluster: the backend sees the node, not the client.
      for (const r of s.results) expect(r.reply!.peer).toBe(ADDR.podGateway);
      const c2 = await probeOnce(h.topo!, "client2", {
        target: `${ADDR.nodeToClient2}:30080`,
        timeoutMs: scaled(3000),
      });
      if (rules.nodePortsOnEveryAddress) {
        // The NodePort answers on the node's other address too (nodePortAddresses: all).
        expect(c2.ok, JSON.stringify(c2)).toBe(true);
      } else {
        // Only on the primary IP: the other address is the node's own port 30080, where nothing listens.
        expect(c2.error, JSON.stringify(c2)).toBe("refused");
      }
    });

    e2eTest(h, "externalIP: clients reach the Service on its external IP", async () => {
      for (const from of ["client", "client2"]) {
        const s = await probe(h.topo!, from, { target: "192.0.2.130:80", count: 5 });
        expect(s.ok, `${from}: ${describeSummary(s)}`).toBe(true);
        expect(s.backends).toEqual({ p2: 5 });
      }
    });

    e2eTest(h, "LoadBalancer: loadBalancerSourceRanges let client in and keep client2 out", async () => {
      const inside = await probe(h.topo!, "client", { target: "192.0.2.200:80", count: 5 });
      expect(inside.ok, describeSummary(inside)).toBe(true);
      expect(inside.backends).toEqual({ p3: 5 });
      const outside = await probe(h.topo!, "client2", {
        target: "192.0.2.200:80",
        count: 2,
        timeoutMs: 1000,
      });
      expect(outside.okCount, describeSummary(outside)).toBe(0);
      // Dropped, not rejected: the client learns nothing.
      expect(outside.errors, describeSummary(outside)).toEqual({ timeout: 2 });
      // client2's path to the node works (so the timeout above is the firewall).
      const path = await probeOnce(h.topo!, "client2", { target: "192.0.2.130:80" });
      expect(path.ok, JSON.stringify(path)).toBe(true);
    });

    e2eTest(
      h,
      "sessionAffinity ClientIP: every connection from one client sticks to one backend",
      async () => {
        const s = await probe(h.topo!, "p4", { target: `${STICKY.clusterIP}:80`, count: 20 });
        expect(s.ok, describeSummary(s)).toBe(true);
        expect(Object.keys(s.backends), describeSummary(s)).toHaveLength(1);
        // Another client may land elsewhere, but sticks too.
        const other = await probe(h.topo!, "node", { target: `${STICKY.clusterIP}:80`, count: 20 });
        expect(other.ok, describeSummary(other)).toBe(true);
        expect(Object.keys(other.backends), describeSummary(other)).toHaveLength(1);
      },
    );

    e2eTest(
      h,
      "externalTrafficPolicy Local: only the local endpoint serves, and it sees the client's address",
      async () => {
        const s = await probe(h.topo!, "client", { target: `${ADDR.node}:30082`, count: 20 });
        expect(s.ok, describeSummary(s)).toBe(true);
        expect(s.backends, describeSummary(s)).toEqual({ p4: 20 });
        for (const r of s.results) expect(r.reply!.peer).toBe(ADDR.client);
        // Inside the cluster the ClusterIP still uses every endpoint.
        const c = await probe(h.topo!, "p1", { target: `${LOCAL.clusterIP}:80`, count: 40 });
        expect(c.ok, describeSummary(c)).toBe(true);
        expect(backendsOf(c), describeSummary(c)).toEqual(["p4", "p5"]);
      },
    );

    e2eTest(h, "internalTrafficPolicy Local: pods and the node reach only the local endpoint", async () => {
      for (const from of ["p1", "node"]) {
        const s = await probe(h.topo!, from, { target: `${INTERNAL_LOCAL.clusterIP}:80`, count: 20 });
        expect(s.ok, `${from}: ${describeSummary(s)}`).toBe(true);
        expect(s.backends, `${from}: ${describeSummary(s)}`).toEqual({ p4: 20 });
      }
    });

    e2eTest(
      h,
      "a Service without endpoints is refused at once (TCP and UDP), not left to time out",
      async () => {
        for (const from of ["p4", "node"]) {
          const tcp = await probeOnce(h.topo!, from, {
            target: `${EMPTY.clusterIP}:80`,
            timeoutMs: scaled(3000),
          });
          expect(tcp.error, `${from}: ${JSON.stringify(tcp)}`).toBe("refused");
          expect(tcp.ms, JSON.stringify(tcp)).toBeLessThan(REFUSED_WITHIN_MS);
          const udp = await probeOnce(h.topo!, from, {
            proto: "udp",
            target: `${EMPTY.clusterIP}:53`,
            timeoutMs: scaled(3000),
          });
          // A pod gets the ICMP port-unreachable; on the node itself the REJECT happens in OUTPUT,
          // where the kernel fails the send with EPERM instead.
          expect(
            from === "node" ? ["refused", "EPERM"] : ["refused"],
            `${from}: ${JSON.stringify(udp)}`,
          ).toContain(udp.error!);
          expect(udp.ms, JSON.stringify(udp)).toBeLessThan(REFUSED_WITHIN_MS);
        }
      },
    );

    e2eTest(h, "hairpin: a pod reaches its own Service (masqueraded back to itself)", async () => {
      const s = await probe(h.topo!, "p6", {
        target: `${HAIRPIN.clusterIP}:80`,
        count: 5,
        timeoutMs: scaled(1500),
      });
      expect(s.ok, describeSummary(s)).toBe(true);
      expect(s.backends).toEqual({ p6: 5 });
      for (const r of s.results) expect(r.reply!.peer).toBe(ADDR.podGateway);
    });

    e2eTest(
      h,
      "removing an endpoint moves traffic to the rest without a single failed connection",
      async () => {
        const topo = h.topo!;
        const source = rules.source(topo);
        expect(rules.endpointCount(await source.read(), CHURN, HTTP)).toBe(3);
        const bg = probeInBackground(topo, "p4", {
          target: `${CHURN.clusterIP}:80`,
          count: 2000,
          intervalMs: 10,
          timeoutMs: scaled(1500),
          durationMs: scaled(20_000),
        });
        // Let it run against the three backends first (bounded).
        for (let i = 0; i < scaled(200) && bg.results().length < 40; i++)
          await new Promise((r) => setTimeout(r, 50));
        expect(bg.results().length).toBeGreaterThanOrEqual(40);

        const without = ALL.map((s) =>
          s === CHURN ? { ...CHURN, endpoints: CHURN.endpoints!.slice(0, 2) } : s,
        );
        writeStateFile(h.stateFile!, renderState(NODE, without));
        await waitForModeRules(
          rules,
          topo,
          h.kubeProxy,
          (v) => rules.endpointCount(v, CHURN, HTTP) === 2,
          "p3 leaving churn",
          10_000,
        );
        const synced = Date.now();
        // Keep probing a while on the new rules (bounded), then stop the probe.
        for (let i = 0; i < scaled(100) && bg.results().filter((r) => r.t > synced).length < 60; i++) {
          await new Promise((r) => setTimeout(r, 50));
        }
        const s = await bg.stop();
        const after = s.results.filter((r) => r.t > synced);
        expect(after.length, "the probe must outlast the change").toBeGreaterThanOrEqual(60);
        expect(s.ok, describeSummary(s)).toBe(true);
        const before = s.results.filter((r) => r.t <= synced);
        expect(new Set(before.map((r) => r.reply?.pod)).has("p3")).toBe(true);
        const afterBackends = [...new Set(after.map((r) => r.reply?.pod))].sort();
        expect(afterBackends).toEqual(["p1", "p2"]);
        // The other Services were left as they were.
        const web = await probe(topo, "p4", { target: `${WEB.clusterIP}:80`, count: 60 });
        expect(backendsOf(web), describeSummary(web)).toEqual(["p1", "p2", "p3"]);
      },
    );

    e2eTest(h, "the daemon keeps running between syncs", async () => {
      expect(h.kubeProxy!.exitCode()).toBeUndefined();
    });
  });
}

// ---------------------------------------------------------------------------------------------

export const QPODS: PodSpec[] = [
  { name: "q1", ip: "203.0.113.21" },
  { name: "q2", ip: "203.0.113.22" },
  { name: "q3", ip: "203.0.113.23" },
];
const qip = (pod: string) => QPODS.find((p) => p.name === pod)!.ip;

export const OLD_SET: ServiceSpec[] = [
  {
    name: "a-np",
    type: "NodePort",
    clusterIP: "198.51.100.30",
    ports: [{ ...HTTP, nodePort: 30090 }],
    endpoints: [{ ip: qip("q1") }, { ip: qip("q2") }],
  },
  {
    name: "a-lb",
    namespace: "ingress",
    type: "LoadBalancer",
    clusterIP: "198.51.100.31",
    ports: [{ ...HTTP, nodePort: 30091 }],
    loadBalancerIPs: ["192.0.2.201"],
    loadBalancerSourceRanges: [ADDR.clientNet],
    endpoints: [{ ip: qip("q3") }],
  },
  {
    name: "a-local",
    type: "NodePort",
    clusterIP: "198.51.100.32",
    ports: [{ ...HTTP, nodePort: 30092 }],
    externalTrafficPolicy: "Local",
    endpoints: [{ ip: qip("q1") }, { ip: qip("q2"), node: "node-b" }],
  },
  {
    name: "keep",
    clusterIP: "198.51.100.33",
    ports: [HTTP],
    endpoints: [{ ip: qip("q1") }, { ip: qip("q2") }, { ip: qip("q3") }],
  },
  {
    name: "multi",
    clusterIP: "198.51.100.34",
    ports: [HTTP, DNS],
    endpoints: [{ ip: qip("q1") }, { ip: qip("q2") }],
  },
];

export const NEW_SET: ServiceSpec[] = [
  // NodePort -> ClusterIP: its KUBE-EXT chain and NodePort rule must go.
  { ...OLD_SET[0]!, type: "ClusterIP", ports: [HTTP] },
  // Two endpoints leave.
  { ...OLD_SET[3]!, endpoints: [{ ip: qip("q1") }] },
  // The UDP port goes.
  { ...OLD_SET[4]!, ports: [HTTP] },
  { name: "fresh", clusterIP: "198.51.100.35", ports: [HTTP], endpoints: [{ ip: qip("q3") }] },
  // a-lb and a-local are deleted.
];

const sorted = (s: Set<string>) => [...s].sort();

/** One Service set replaced by another: only the new set's chains stay, traffic follows. */
export function describeServiceSetSwitch<V>(rules: ModeRules<V>): void {
  describe(`${rules.mode} mode: switching to another Service set leaves no stale chains`, () => {
    const h: Harness = {};
    const oldChains = expectedChains(rules, OLD_SET, NODE_NAME);
    const newChains = expectedChains(rules, NEW_SET, NODE_NAME);

    beforeAll(async () => {
      await setUp(h, rules, QPODS, OLD_SET);
      await firstSync(h, rules, OLD_SET);
    }, E2E_TEST_TIMEOUT_MS);

    afterAll(async () => {
      await tearDownHarness(h);
    }, E2E_TEST_TIMEOUT_MS);

    e2eTest(h, "the old set: exactly the chains it needs, and its traffic works", async () => {
      // What the old set needs: SVC per port with endpoints, SEP per endpoint and port, EXT per
      // externally reachable port, FW for the LoadBalancer with source ranges, SVL for eTP Local.
      // a-np SVC+EXT+2 SEP, a-lb SVC+EXT+FW+SEP, a-local SVC+SVL+EXT+2 SEP, keep SVC+3 SEP,
      // multi 2 x (SVC+2 SEP).
      expect(oldChains.size).toBe(4 + 4 + 5 + 4 + 2 * 3);
      const view = await rules.source(h.topo!).read();
      expect(sorted(rules.serviceChains(view))).toEqual(sorted(oldChains));
      const np = await probeOnce(h.topo!, "client", { target: `${ADDR.node}:30090` });
      expect(np.ok, JSON.stringify(np)).toBe(true);
      const lb = await probeOnce(h.topo!, "client", { target: "192.0.2.201:80" });
      expect(lb.reply?.pod, JSON.stringify(lb)).toBe("q3");
    });

    e2eTest(
      h,
      "after the switch: only the new set's chains remain, and traffic follows",
      async () => {
        writeStateFile(h.stateFile!, renderState(NODE, NEW_SET));
        const freshChain = rules.namer.service("SVC", NEW_SET[3]!, HTTP);
        const isStale = (c: string) => !newChains.has(c);
        const v = await waitForModeRules(
          rules,
          h.topo!,
          h.kubeProxy,
          (r) =>
            rules.serviceChains(r).has(freshChain) &&
            !rules.mentionsAddress(r, "198.51.100.31") &&
            ![...rules.serviceChains(r)].some(isStale),
          "the new set, and the old set's chains gone",
          rules.staleChainsGoneWithinMs,
        );
        // One SVC chain per port with endpoints, one SEP per endpoint of each: 2+1, 1+1, 1+2, 1+1.
        expect(newChains.size).toBe(3 + 2 + 3 + 2);
        const present = rules.serviceChains(v);
        const stale = [...present].filter((c) => !newChains.has(c)).sort();
        const missing = [...newChains].filter((c) => !present.has(c)).sort();
        expect({ stale, missing }).toEqual({ stale: [], missing: [] });
        const kinds = (k: "SVC" | "SVL" | "EXT" | "FW") =>
          [...present].filter((c) =>
            NEW_SET.some((s) => s.ports.some((p) => rules.namer.service(k, s, p) === c)),
          );
        expect(kinds("SVC").length).toBe(4);
        expect(present.size - kinds("SVC").length, "endpoint chains").toBe(6);
        expect([...kinds("EXT"), ...kinds("FW"), ...kinds("SVL")]).toEqual([]);
        // No rule anywhere still names a deleted Service's addresses or ports.
        for (const gone of ["198.51.100.31", "198.51.100.32", "192.0.2.201"]) {
          expect(rules.mentionsAddress(v, gone), gone).toBe(false);
        }
        for (const gone of [30090, 30092])
          expect(rules.mentionsNodePort(v, gone), `NodePort ${gone}`).toBe(false);

        const keep = await probe(h.topo!, "q2", { target: "198.51.100.33:80", count: 10 });
        expect(keep.backends, describeSummary(keep)).toEqual({ q1: 10 });
        const fresh = await probeOnce(h.topo!, "q1", { target: "198.51.100.35:80" });
        expect(fresh.reply?.pod, JSON.stringify(fresh)).toBe("q3");
        // The old NodePort is gone: the node itself answers with a reset (nothing listens there).
        const np = await probeOnce(h.topo!, "client", {
          target: `${ADDR.node}:30090`,
          timeoutMs: scaled(2000),
        });
        expect(np.error, JSON.stringify(np)).toBe("refused");
        // The old LoadBalancer IP leads nowhere now.
        const lb = await probeOnce(h.topo!, "client", { target: "192.0.2.201:80", timeoutMs: 800 });
        expect(lb.error, JSON.stringify(lb)).toBe("timeout");
      },
      E2E_TEST_TIMEOUT_MS + scaled(rules.staleChainsGoneWithinMs),
    );
  });
}
