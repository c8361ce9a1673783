// Self-test of the real-kernel harness, without kube-proxy: the topology routes, the echo
// servers answer, a hand-written DNAT rule in the node namespace is honoured, a REJECT shows as
// "refused" at once, and destroy() leaves no namespace behind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { describeSummary, probe, probeOnce, startServer } from "../support/e2e-traffic.ts";
import { ADDR, createTopology, namespaceExists, type Topology } from "../support/netns.ts";

/**
 * A refusal must come well before the probes' 3 s timeout (that is what tells it from a drop),
 * but not within a kernel timer: one SYN or ARP retransmit on a busy machine costs 1 s.
 */
const REFUSED_WITHIN_MS = 2500;

const PODS = [
  { name: "p1", ip: "203.0.113.11" },
  { name: "p2", ip: "203.0.113.12" },
];

describe("netns harness (no kube-proxy)", () => {
  let topo: Topology;

  beforeAll(async () => {
    topo = await createTopology({ pods: PODS, client2: true });
    await Promise.all(PODS.map((p) => startServer(topo, p.name, { tcp: [8080], udp: [5353] })));
  }, 60_000);

  afterAll(async () => {
    const names = Object.values(topo?.namespaces ?? {});
    await topo?.destroy();
    expect(names.filter(namespaceExists)).toEqual([]);
  }, 60_000);

  test("namespaces exist and the node forwards", async () => {
    for (const name of Object.values(topo.namespaces)) expect(namespaceExists(name)).toBe(true);
    const fwd = await topo.must("node", ["cat", "/proc/sys/net/ipv4/ip_forward"]);
    expect(fwd.trim()).toBe("1");
    // No namespace of ours has a default route.
    for (const role of Object.keys(topo.namespaces)) {
      const routes = await topo.must(role, ["ip", "route", "show", "default"]);
      expect(routes.trim()).toBe("");
    }
  }, 60_000);

  test("client reaches a pod directly (TCP and UDP) and the pod sees the client's address", async () => {
    const tcp = await probeOnce(topo, "client", { target: "203.0.113.11:8080", timeoutMs: 2000 });
    expect(tcp.ok).toBe(true);
    expect(tcp.reply?.pod).toBe("p1");
    expect(tcp.reply?.peer).toBe(ADDR.client);
    const udp = await probeOnce(topo, "client", { proto: "udp", target: "203.0.113.12:5353" });
    expect(udp.ok).toBe(true);
    expect(udp.reply?.pod).toBe("p2");
    expect(udp.reply?.peer).toBe(ADDR.client);
    const c2 = await probeOnce(topo, "client2", { target: "203.0.113.12:8080" });
    expect(c2.reply?.peer).toBe(ADDR.client2);
  }, 60_000);

  test("pods reach each other through the node, and the node reaches pods", async () => {
    const r = await probeOnce(topo, "p2", { target: "203.0.113.11:8080" });
    expect(r.reply?.pod).toBe("p1");
    expect(r.reply?.peer).toBe("203.0.113.12");
    const fromNode = await probeOnce(topo, "node", { target: "203.0.113.12:8080" });
    expect(fromNode.reply?.pod).toBe("p2");
    expect(fromNode.reply?.peer).toBe(ADDR.podGateway);
  }, 60_000);

  test("a closed port is refused fast; an address nobody owns times out", async () => {
    const refused = await probeOnce(topo, "client", { target: "203.0.113.11:9", timeoutMs: 3000 });
    expect(refused.error).toBe("refused");
    expect(refused.ms, JSON.stringify(refused)).toBeLessThan(REFUSED_WITHIN_MS);
    const lost = await probeOnce(topo, "client", { target: "198.51.100.250:80", timeoutMs: 700 });
    expect(lost.error).toBe("timeout");
  }, 60_000);

  test("a hand-written DNAT rule in the node namespace reaches the pod with the client's address", async () => {
    await topo.must("node", [
      "iptables",
      "-t",
      "nat",
      "-A",
      "PREROUTING",
      "-d",
      "198.51.100.99",
      "-p",
      "tcp",
      "--dport",
      "80",
      "-j",
      "DNAT",
      "--to-destination",
      "203.0.113.11:8080",
    ]);
    const s = await probe(topo, "client", { target: "198.51.100.99:80", count: 5 });
    expect(s.ok, describeSummary(s)).toBe(true);
    expect(s.backends).toEqual({ p1: 5 });
    for (const r of s.results) expect(r.reply?.peer).toBe(ADDR.client);
    // From the node itself, through OUTPUT.
    await topo.must("node", [
      "iptables",
      "-t",
      "nat",
      "-A",
      "OUTPUT",
      "-d",
      "198.51.100.99",
      "-p",
      "tcp",
      "--dport",
      "80",
      "-j",
      "DNAT",
      "--to-destination",
      "203.0.113.12:8080",
    ]);
    const local = await probeOnce(topo, "node", { target: "198.51.100.99:80" });
    expect(local.reply?.pod).toBe("p2");
  }, 60_000);

  test("a REJECT rule gives 'refused' well under the timeout (TCP and UDP)", async () => {
    for (const proto of ["tcp", "udp"]) {
      await topo.must("node", [
        "iptables",
        "-A",
        "FORWARD",
        "-d",
        "198.51.100.98",
        "-p",
        proto,
        "-j",
        "REJECT",
        "--reject-with",
        "icmp-port-unreachable",
      ]);
    }
    // 198.51.100.98 is routed to the node's sink; FORWARD sees it first.
    const tcp = await probeOnce(topo, "client", { target: "198.51.100.98:80", timeoutMs: 3000 });
    expect(tcp.error).toBe("refused");
    expect(tcp.ms, JSON.stringify(tcp)).toBeLessThan(REFUSED_WITHIN_MS);
    const udp = await probeOnce(topo, "client", {
      proto: "udp",
      target: "198.51.100.98:53",
      timeoutMs: 3000,
    });
    expect(udp.error).toBe("refused");
    expect(udp.ms, JSON.stringify(udp)).toBeLessThan(REFUSED_WITHIN_MS);
  }, 60_000);

  test("destroy() deletes every namespace, even with servers still running", async () => {
    const t = await createTopology({ pods: [{ name: "px", ip: "203.0.113.20" }], client: false });
    await startServer(t, "px", { tcp: [8080] });
    const names = Object.values(t.namespaces);
    expect(names.every(namespaceExists)).toBe(true);
    await t.destroy();
    expect(names.filter(namespaceExists)).toEqual([]);
  }, 60_000);
});
