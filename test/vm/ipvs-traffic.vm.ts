// ipvs mode end to end, in the kernel VM (test/vm/kernel-vm.test.ts runs this file there): the
// compiled binary runs with --proxy-mode=ipvs as a daemon in the node namespace of a netns
// topology (test/support/netns.ts has the address plan), programs IPVS, ipsets, kube-ipvs0 and
// its few iptables rules from a --state file, and real TCP/UDP traffic from clients, pods and
// the node proves each Service behaviour — the cases of test/e2e/iptables.test.ts, plus what only
// ipvs mode has (the VIP filter, strict ARP).
//
// By hand: scripts/kernel-vm -- bash -c 'modprobe nf_conntrack &&
//   node_modules/.bin/bun test --timeout 600000 ./test/vm/ipvs-traffic.vm.ts'
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { spawnSync } from "node:child_process";
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
import { ipvsDiagnostics, unexpectedErrorLines, virtualServer, waitForIpvs } from "../support/e2e-ipvs.ts";
import { NODE_NAME, startKubeProxy, waitForRules } from "../support/e2e-kubeproxy.ts";
import { describeSummary, type ProbeSummary, probe, probeOnce, startServer } from "../support/e2e-traffic.ts";
import { requireKernelVm, scaled } from "../support/kernel-vm.ts";
import { ADDR, createTopology, type PodSpec } from "../support/netns.ts";

requireKernelVm("ipvs-traffic.vm.ts");

/** A connection that should work gets this long (the guest's CPU is emulated). */
const CONNECT_MS = scaled(250);
/** Long enough that a refusal (ICMP or RST, sub-second) is never mistaken for a drop. */
const REFUSE_OR_DROP_MS = scaled(150);
const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const HTTP = { name: "http", port: 80, targetPort: 8080 } as const;
const DNS = { name: "dns", port: 53, targetPort: 5353, protocol: "UDP" } as const;
/** A port the node itself listens on, to show that VIPs do not expose it. */
const HOST_PORT = 8081;

const PODS: PodSpec[] = [
  { name: "p1", ip: "203.0.113.11" },
  { name: "p2", ip: "203.0.113.12" },
  { name: "p3", ip: "203.0.113.13" },
  { name: "p4", ip: "203.0.113.14" },
  { name: "p5", ip: "203.0.113.15" },
  { name: "p6", ip: "203.0.113.16" },
];
const ip = (pod: string) => PODS.find((p) => p.name === pod)!.ip;

const WEB: ServiceSpec = {
  name: "web",
  clusterIP: "198.51.100.10",
  ports: [HTTP, DNS],
  endpoints: [{ ip: ip("p1") }, { ip: ip("p2") }, { ip: ip("p3") }],
};
const STICKY: ServiceSpec = {
  name: "sticky",
  clusterIP: "198.51.100.11",
  ports: [HTTP],
  sessionAffinity: "ClientIP",
  affinityTimeoutSeconds: 600,
  endpoints: [{ ip: ip("p1") }, { ip: ip("p2") }, { ip: ip("p3") }],
};
const NODEPORT: ServiceSpec = {
  name: "nodeport",
  type: "NodePort",
  clusterIP: "198.51.100.12",
  ports: [{ ...HTTP, nodePort: 30080 }],
  externalTrafficPolicy: "Cluster",
  endpoints: [{ ip: ip("p1") }, { ip: ip("p2") }],
};
const EXTIP: ServiceSpec = {
  name: "extip",
  clusterIP: "198.51.100.13",
  externalIPs: ["192.0.2.130"],
  ports: [HTTP],
  endpoints: [{ ip: ip("p2") }],
};
const LB: ServiceSpec = {
  name: "lb",
  type: "LoadBalancer",
  clusterIP: "198.51.100.14",
  ports: [{ ...HTTP, nodePort: 30081 }],
  loadBalancerIPs: ["192.0.2.200"],
  // client (192.0.2.1) is inside, client2 (192.0.2.65) is not. The node's own IP (192.0.2.10)
  // is inside too, so the node may reach it.
  loadBalancerSourceRanges: [ADDR.clientNet],
  externalTrafficPolicy: "Cluster",
  endpoints: [{ ip: ip("p3") }],
};
const LB2: ServiceSpec = {
  name: "lb2",
  type: "LoadBalancer",
  clusterIP: "198.51.100.19",
  ports: [{ ...HTTP, nodePort: 30083 }],
  loadBalancerIPs: ["192.0.2.201"],
  // The mirror image: client2 in, client out. The node's IP is outside, so the node is kept
  // out with an `-m ipvs` rule in KUBE-IPVS-OUT-FILTER (kubernetes#119656).
  loadBalancerSourceRanges: [ADDR.client2Net],
  externalTrafficPolicy: "Cluster",
  endpoints: [{ ip: ip("p1") }],
};
const LOCAL: ServiceSpec = {
  name: "local",
  type: "NodePort",
  clusterIP: "198.51.100.15",
  ports: [{ ...HTTP, nodePort: 30082 }],
  externalTrafficPolicy: "Local",
  // p5 is routed through this node like every pod, but the slice says it runs on node-b.
  endpoints: [{ ip: ip("p4") }, { ip: ip("p5"), node: "node-b" }],
};
const EMPTY: ServiceSpec = {
  name: "empty",
  clusterIP: "198.51.100.16",
  ports: [HTTP, DNS],
  endpoints: [],
};
const HAIRPIN: ServiceSpec = {
  name: "hairpin",
  clusterIP: "198.51.100.17",
  ports: [HTTP],
  endpoints: [{ ip: ip("p6") }],
};
/**
 * Hostile: its externalIPs hold WEB's ClusterIP on WEB's DNS port (CVE-2020-8554 class). It must
 * take none of WEB's traffic (the WEB cases below see only p1-p3) and keep its own ClusterIP.
 */
const HIJACK: ServiceSpec = {
  name: "hijack",
  namespace: "aaa",
  clusterIP: "198.51.100.18",
  externalIPs: [WEB.clusterIP],
  ports: [DNS],
  endpoints: [{ ip: ip("p6") }],
};
const ALL = [HIJACK, WEB, STICKY, NODEPORT, EXTIP, LB, LB2, LOCAL, EMPTY, HAIRPIN];

const backendsOf = (s: ProbeSummary) => Object.keys(s.backends).sort();
const sysctl = (names: string[]) =>
  spawnSync("sysctl", ["-n", ...names], { encoding: "utf8", timeout: 10_000 }).stdout.trim();
const ARP_SYSCTLS = ["net.ipv4.conf.all.arp_ignore", "net.ipv4.conf.all.arp_announce"];

describe("ipvs mode: Service traffic through a real IPVS kernel", () => {
  const h: Harness = { extraDiagnostics: ipvsDiagnostics };
  const rootArpBefore = sysctl(ARP_SYSCTLS);

  beforeAll(async () => {
    h.topo = await createTopology({ pods: PODS, client2: true });
    await Promise.all(PODS.map((p) => startServer(h.topo!, p.name, { tcp: [8080], udp: [5353] })));
    await startServer(h.topo, "node", { tcp: [HOST_PORT] }, "node");
    h.dir = tempDir("kpts-ipvs-");
    h.stateFile = join(h.dir, "state.yaml");
    writeStateFile(h.stateFile, renderState(NODE, ALL));
    h.kubeProxy = startKubeProxy(h.topo, {
      stateFile: h.stateFile,
      mode: "ipvs",
      extraArgs: ["--ipvs-strict-arp"],
    });
    try {
      // IPVS is written before iptables: the table first, then the rules that end the sync.
      await waitForIpvs(
        h.topo,
        h.kubeProxy,
        (v) =>
          virtualServer(v, "TCP", "198.51.100.10:80")?.reals.length === 3 &&
          virtualServer(v, "UDP", "198.51.100.10:53")?.reals.length === 3 &&
          virtualServer(v, "TCP", `${ADDR.node}:30082`)?.reals.length === 1 &&
          virtualServer(v, "TCP", "198.51.100.16:80") !== undefined &&
          virtualServer(v, "TCP", "192.0.2.201:80")?.reals.length === 1,
        "the first sync's virtual servers",
        30_000,
      );
      await waitForRules(
        h.topo,
        h.kubeProxy,
        (r) =>
          r.nat.includes("-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT") &&
          r.filter.includes("-A KUBE-IPVS-OUT-FILTER") &&
          /-A KUBE-IPVS-FILTER .*KUBE-IPVS-IPS dst -j REJECT/.test(r.filter),
        "the first sync's iptables rules",
        30_000,
      );
    } catch (err) {
      console.error(`\n===== diagnostics (setup) =====\n${await harnessDiagnostics(h)}`);
      throw err;
    }
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(async () => {
    // KPTS_E2E_LOG=1 prints the daemon's log even when every test passed.
    if (process.env.KPTS_E2E_LOG === "1")
      console.error(`--- kube-proxy-ts stderr ---\n${h.kubeProxy?.stderr()}`);
    await tearDownHarness(h);
  }, E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "ClusterIP: TCP and UDP spread over every real server, from a pod and from the node",
    async () => {
      const topo = h.topo!;
      for (const from of ["p4", "node"]) {
        const tcp = await probe(topo, from, {
          target: `${WEB.clusterIP}:80`,
          count: 30,
          timeoutMs: CONNECT_MS,
        });
        expect(tcp.ok, `${from} tcp: ${describeSummary(tcp)}`).toBe(true);
        expect(backendsOf(tcp), `${from} tcp: ${describeSummary(tcp)}`).toEqual(["p1", "p2", "p3"]);
        for (const r of tcp.results) expect(r.reply!.port).toBe(8080);
        const udp = await probe(topo, from, {
          proto: "udp",
          target: `${WEB.clusterIP}:53`,
          count: 30,
          timeoutMs: CONNECT_MS,
        });
        expect(udp.ok, `${from} udp: ${describeSummary(udp)}`).toBe(true);
        expect(backendsOf(udp), `${from} udp: ${describeSummary(udp)}`).toEqual(["p1", "p2", "p3"]);
        for (const r of udp.results) expect(r.reply!.port).toBe(5353);
      }
      // Pod to ClusterIP keeps the pod's address (in-cluster source, no masquerade).
      const fromPod = await probeOnce(topo, "p4", { target: `${WEB.clusterIP}:80`, timeoutMs: CONNECT_MS });
      expect(fromPod.reply?.peer, JSON.stringify(fromPod)).toBe(ip("p4"));
      const v = await waitForIpvs(topo, h.kubeProxy, () => true, "a read");
      expect(virtualServer(v, "TCP", "198.51.100.10:80")?.scheduler).toBe("rr");
    },
  );

  e2eTest(h, "an externalIP equal to another Service's ClusterIP takes none of its traffic", async () => {
    const own = await probe(h.topo!, "client", {
      proto: "udp",
      target: `${HIJACK.clusterIP}:53`,
      count: 3,
      timeoutMs: CONNECT_MS,
    });
    expect(backendsOf(own), describeSummary(own)).toEqual(["p6"]);
    const web = await probe(h.topo!, "client", {
      proto: "udp",
      target: `${WEB.clusterIP}:53`,
      count: 20,
      timeoutMs: CONNECT_MS,
    });
    expect(backendsOf(web), describeSummary(web)).toEqual(["p1", "p2", "p3"]);
  });

  e2eTest(h, "NodePort: the client reaches the Service on the node's addresses (masqueraded)", async () => {
    const s = await probe(h.topo!, "client", {
      target: `${ADDR.node}:30080`,
      count: 20,
      timeoutMs: CONNECT_MS,
    });
    expect(s.ok, describeSummary(s)).toBe(true);
    expect(backendsOf(s), describeSummary(s)).toEqual(["p1", "p2"]);
    // externalTrafficPolicy Cluster: the backend sees the node, not the client.
    for (const r of s.results) expect(r.reply!.peer).toBe(ADDR.podGateway);
    // The NodePort answers on the node's other address too (nodePortAddresses: all).
    const c2 = await probeOnce(h.topo!, "client2", {
      target: `${ADDR.nodeToClient2}:30080`,
      timeoutMs: CONNECT_MS,
    });
    expect(c2.ok, JSON.stringify(c2)).toBe(true);
  });

  e2eTest(h, "externalIP: both clients reach the Service on its external IP", async () => {
    for (const from of ["client", "client2"]) {
      const s = await probe(h.topo!, from, { target: "192.0.2.130:80", count: 5, timeoutMs: CONNECT_MS });
      expect(s.ok, `${from}: ${describeSummary(s)}`).toBe(true);
      expect(s.backends).toEqual({ p2: 5 });
    }
  });

  e2eTest(h, "LoadBalancer: loadBalancerSourceRanges let one client in and keep the other out", async () => {
    const topo = h.topo!;
    const inside = await probe(topo, "client", { target: "192.0.2.200:80", count: 5, timeoutMs: CONNECT_MS });
    expect(inside.ok, describeSummary(inside)).toBe(true);
    expect(inside.backends).toEqual({ p3: 5 });
    const outside = await probe(topo, "client2", {
      target: "192.0.2.200:80",
      count: 2,
      timeoutMs: REFUSE_OR_DROP_MS,
    });
    // Dropped, not rejected: the client learns nothing.
    expect(outside.errors, describeSummary(outside)).toEqual({ timeout: 2 });
    // The mirror-image Service: client2 in, client out.
    const in2 = await probe(topo, "client2", { target: "192.0.2.201:80", count: 5, timeoutMs: CONNECT_MS });
    expect(in2.backends, describeSummary(in2)).toEqual({ p1: 5 });
    const out2 = await probe(topo, "client", {
      target: "192.0.2.201:80",
      count: 2,
      timeoutMs: REFUSE_OR_DROP_MS,
    });
    expect(out2.errors, describeSummary(out2)).toEqual({ timeout: 2 });
    // The node is inside lb's ranges (its VIP as source is admitted) and outside lb2's, where
    // the `-m ipvs` rule of KUBE-IPVS-OUT-FILTER drops it.
    const nodeIn = await probeOnce(topo, "node", { target: "192.0.2.200:80", timeoutMs: CONNECT_MS });
    expect(nodeIn.reply?.pod, JSON.stringify(nodeIn)).toBe("p3");
    const nodeOut = await probeOnce(topo, "node", { target: "192.0.2.201:80", timeoutMs: REFUSE_OR_DROP_MS });
    expect(nodeOut.error, JSON.stringify(nodeOut)).toBe("timeout");
    // client2's path to the node works (so its timeouts above are the firewall).
    const path = await probeOnce(topo, "client2", { target: "192.0.2.130:80", timeoutMs: CONNECT_MS });
    expect(path.ok, JSON.stringify(path)).toBe(true);
  });

  e2eTest(
    h,
    "sessionAffinity ClientIP: every connection from one client lands on one real server",
    async () => {
      const v = await waitForIpvs(h.topo!, h.kubeProxy, () => true, "a read");
      expect(virtualServer(v, "TCP", `${STICKY.clusterIP}:80`)?.flags).toBe("persistent 600");
      for (const from of ["p4", "node", "client"]) {
        const s = await probe(h.topo!, from, {
          target: `${STICKY.clusterIP}:80`,
          count: 15,
          timeoutMs: CONNECT_MS,
        });
        expect(s.ok, `${from}: ${describeSummary(s)}`).toBe(true);
        expect(Object.keys(s.backends), `${from}: ${describeSummary(s)}`).toHaveLength(1);
      }
    },
  );

  e2eTest(
    h,
    "externalTrafficPolicy Local: only the local endpoint serves, and it sees the client's address",
    async () => {
      const s = await probe(h.topo!, "client", {
        target: `${ADDR.node}:30082`,
        count: 20,
        timeoutMs: CONNECT_MS,
      });
      expect(s.ok, describeSummary(s)).toBe(true);
      expect(s.backends, describeSummary(s)).toEqual({ p4: 20 });
      for (const r of s.results) expect(r.reply!.peer).toBe(ADDR.client);
      // Inside the cluster the ClusterIP still uses every endpoint.
      const c = await probe(h.topo!, "p1", {
        target: `${LOCAL.clusterIP}:80`,
        count: 20,
        timeoutMs: CONNECT_MS,
      });
      expect(c.ok, describeSummary(c)).toBe(true);
      expect(backendsOf(c), describeSummary(c)).toEqual(["p4", "p5"]);
    },
  );

  e2eTest(h, "hairpin: a pod reaches its own Service (masqueraded back to itself)", async () => {
    const s = await probe(h.topo!, "p6", {
      target: `${HAIRPIN.clusterIP}:80`,
      count: 5,
      timeoutMs: CONNECT_MS,
    });
    expect(s.ok, describeSummary(s)).toBe(true);
    expect(s.backends).toEqual({ p6: 5 });
    for (const r of s.results) expect(r.reply!.peer).toBe(ADDR.podGateway);
  });

  e2eTest(h, "a Service without endpoints is refused (TCP and UDP), not left to time out", async () => {
    for (const from of ["p4", "node", "client"]) {
      const tcp = await probeOnce(h.topo!, from, {
        target: `${EMPTY.clusterIP}:80`,
        timeoutMs: REFUSE_OR_DROP_MS,
      });
      expect(tcp.error, `${from} tcp: ${JSON.stringify(tcp)}`).toBe("refused");
      const udp = await probeOnce(h.topo!, from, {
        proto: "udp",
        target: `${EMPTY.clusterIP}:53`,
        timeoutMs: REFUSE_OR_DROP_MS,
      });
      // IPVS answers a packet for a virtual server without real servers with an ICMP port
      // unreachable and drops it; on the node itself that drop happens in OUTPUT, where the
      // kernel fails the send with EPERM instead (as iptables mode's REJECT does).
      expect(
        from === "node" ? ["refused", "EPERM"] : ["refused"],
        `${from} udp: ${JSON.stringify(udp)}`,
      ).toContain(udp.error!);
    }
  });

  e2eTest(
    h,
    "a port no Service serves on a bound VIP is rejected, though the node listens on it",
    async () => {
      const topo = h.topo!;
      // The node's own listener answers on the node's address...
      const direct = await probeOnce(topo, "client", {
        target: `${ADDR.node}:${HOST_PORT}`,
        timeoutMs: CONNECT_MS,
      });
      expect(direct.reply?.pod, JSON.stringify(direct)).toBe("node");
      // ...but not on the VIPs bound to kube-ipvs0, from off the node or a pod: the listener would
      // answer there too, so a refusal can only be KUBE-IPVS-FILTER's REJECT. (Its packet counter
      // cannot tell: every sync rewrites the chain, and periodic syncs reset it.)
      for (const from of ["client", "p4"]) {
        for (const vip of [WEB.clusterIP, "192.0.2.130", "192.0.2.200"]) {
          const r = await probeOnce(topo, from, {
            target: `${vip}:${HOST_PORT}`,
            timeoutMs: REFUSE_OR_DROP_MS,
          });
          expect(r.error, `${from} -> ${vip}:${HOST_PORT}: ${JSON.stringify(r)}`).toBe("refused");
        }
      }
      // The Service port on the same VIP still works.
      const ok = await probeOnce(topo, "client", { target: `${WEB.clusterIP}:80`, timeoutMs: CONNECT_MS });
      expect(ok.ok, JSON.stringify(ok)).toBe(true);
    },
  );

  e2eTest(
    h,
    "--ipvs-strict-arp sets arp_ignore=1 and arp_announce=2 in the node's namespace only",
    async () => {
      const inNode = await h.topo!.must("node", ["sysctl", "-n", ...ARP_SYSCTLS]);
      expect(inNode.trim().split(/\s+/)).toEqual(["1", "2"]);
      // The guest's own namespace is not the node's: left as it was.
      expect(sysctl(ARP_SYSCTLS)).toBe(rootArpBefore);
    },
  );

  e2eTest(
    h,
    "the binary writes IPVS over generic netlink from its worker thread, not with ipvsadm",
    async () => {
      const log = h.kubeProxy!.stderr();
      const writes = log.split("\n").filter((l) => l.includes('"Wrote IPVS changes over netlink"'));
      expect(writes.length, log.slice(-4000)).toBeGreaterThan(0);
      expect(
        writes.every((l) => l.includes('thread="worker"') && l.includes("refused=0")),
        writes.join("\n"),
      ).toBe(true);
      expect(log).not.toContain("Writing IPVS changes with ipvsadm");
    },
  );

  e2eTest(h, "the daemon keeps running between syncs and has logged no error", async () => {
    expect(h.kubeProxy!.exitCode()).toBeUndefined();
    expect(unexpectedErrorLines(h.kubeProxy!)).toEqual([]);
  });
});
