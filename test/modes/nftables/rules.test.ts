// Golden tests of what the nftables proxier writes, from upstream's documented behaviour of its
// nftables mode: the fixed table, dispatch maps, per-service chains with numgen, affinity,
// masquerading, traffic policies, source ranges and endpoints that cannot serve. Every sync is
// applied to the stateful nft fake, so what is checked is the table the kernel would hold.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { endpointNames, portChainNames } from "../../../src/modes/nftables/names.ts";
import { endpointSlice, ep, NODE, NODE_IP, service } from "../../support/proxy-cluster.ts";
import { chainIn, elementsIn, setupNft } from "./harness.ts";

const GOLDEN = join(import.meta.dir, "golden");
const golden = (name: string) => readFileSync(join(GOLDEN, name), "utf8");

const port = (ns: string, name: string, p = "p80") =>
  ({ namespace: ns, name, port: p, protocol: "TCP" }) as const;
const chains = (ns: string, name: string) => portChainNames(port(ns, name), "tcp");
const epChain = (ns: string, name: string, ip: string, p = 8080) =>
  endpointNames(port(ns, name), "tcp", ip, p).chain;
const affinitySet = (ns: string, name: string, ip: string, p = 8080) =>
  endpointNames(port(ns, name), "tcp", ip, p).affinitySet;

const clusterIP = (ip: string) => ({ clusterIP: ip, clusterIPs: [ip] });

/** The rules that pick one of `actions` evenly: endpoint i with probability 1/(n-i) when reached. */
const pickOf = (...actions: string[]) =>
  actions.map((a, i) => (i === actions.length - 1 ? a : `numgen random mod ${actions.length - i} 0 ${a}`));
/** ... jumping to endpoint chains (ClientIP affinity). */
const pick = (...targets: string[]) => pickOf(...targets.map((t) => `goto ${t}`));
/** ... DNATing to "ip:port" endpoints. */
const dnatTo = (...endpoints: string[]) => pickOf(...endpoints.map((e) => `meta l4proto tcp dnat to ${e}`));

describe("nftables: a full sync", () => {
  test("the whole first transaction of a small cluster", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", clusterIP("198.51.100.1")),
      endpointSlice("ns1", "svc1", [ep("192.0.2.10"), ep("192.0.2.11", { node: NODE })]),
      service("ns2", "np", {
        type: "NodePort",
        ...clusterIP("198.51.100.2"),
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30080 }],
      }),
      endpointSlice("ns2", "np", [ep("192.0.2.20")]),
      service("ns3", "empty", clusterIP("198.51.100.3")),
    );
    expect(await s.sync()).toBe(golden("small-cluster.nft"));
  });

  test("base chains: the firewall check before DNAT, the other checks at filter priority (upstream 1.34+)", async () => {
    const s = setupNft();
    await s.sync();
    const dump = s.nft.dump();
    const base = dump.split("\n").filter((l) => l.includes(" hook "));
    expect(base).toEqual([
      "chain filter-forward { type filter hook forward priority 0 }",
      "chain filter-input { type filter hook input priority 0 }",
      "chain filter-output { type filter hook output priority 0 }",
      "chain filter-output-pre-dnat { type filter hook output priority -110 }",
      "chain filter-prerouting-pre-dnat { type filter hook prerouting priority -110 }",
      "chain nat-output { type nat hook output priority -100 }",
      "chain nat-postrouting { type nat hook postrouting priority 100 }",
      "chain nat-prerouting { type nat hook prerouting priority -100 }",
    ]);
    expect(chainIn(dump, "filter-input")).toEqual([
      "ct state new jump nodeport-endpoints-check",
      "ct state new jump service-endpoints-check",
    ]);
    expect(chainIn(dump, "filter-forward")).toEqual([
      "ct state new jump service-endpoints-check",
      "ct state new jump cluster-ips-check",
    ]);
    expect(chainIn(dump, "filter-output")).toEqual([
      "ct state new jump service-endpoints-check",
      "ct state new jump cluster-ips-check",
    ]);
    expect(chainIn(dump, "filter-prerouting-pre-dnat")).toEqual(["ct state new jump firewall-check"]);
    expect(chainIn(dump, "filter-output-pre-dnat")).toEqual(["ct state new jump firewall-check"]);
    expect(chainIn(dump, "nat-prerouting")).toEqual(["jump services"]);
    expect(chainIn(dump, "nat-output")).toEqual(["jump services"]);
    expect(chainIn(dump, "nat-postrouting")).toEqual(["jump masquerading"]);
  });

  test("the masquerade mark follows nftables.masqueradeBit", async () => {
    const s = setupNft({
      config: (c) => {
        c.nftables.masqueradeBit = 10;
      },
    });
    await s.sync();
    const dump = s.nft.dump();
    expect(chainIn(dump, "mark-for-masquerade")).toBeUndefined();
    expect(chainIn(dump, "masquerading")).toEqual([
      "mark and 0x00000400 != 0 mark set mark xor 0x00000400 masquerade fully-random",
      "ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random",
    ]);
    expect(chainIn(dump, "services")?.[0]).toBe(
      'ip daddr @cluster-ips ip saddr != 192.0.2.0/24 mark set mark or 0x00000400 comment "masquerade clusterIP traffic from outside cluster"',
    );
  });

  test("nodePortAddresses defaults to the node's primary IP (nodeport-ips)", async () => {
    const s = setupNft();
    await s.sync();
    const dump = s.nft.dump();
    expect(elementsIn(dump, "set", "nodeport-ips")).toEqual([NODE_IP]);
    expect(chainIn(dump, "services")?.slice(1)).toEqual([
      "ip daddr . meta l4proto . th dport vmap @service-ips",
      "ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports",
    ]);
    expect(chainIn(dump, "nodeport-endpoints-check")).toEqual([
      "ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports",
    ]);
  });

  test("nodePortAddresses 0.0.0.0/0: every local address but loopback, no nodeport-ips set", async () => {
    const s = setupNft({
      config: (c) => {
        c.nodePortAddresses = ["0.0.0.0/0"];
      },
    });
    await s.sync();
    const dump = s.nft.dump();
    expect(elementsIn(dump, "set", "nodeport-ips")).toBeUndefined();
    expect(chainIn(dump, "services")?.slice(1)).toEqual([
      "ip daddr . meta l4proto . th dport vmap @service-ips",
      "fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports",
    ]);
    expect(chainIn(dump, "nodeport-endpoints-check")).toEqual([
      "ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports",
    ]);
  });

  test("localhost NodePorts are refused: loopback never enters nodeport-ips", async () => {
    const s = setupNft({
      config: (c) => {
        c.nodePortAddresses = ["127.0.0.0/8", "203.0.113.0/24"];
      },
    });
    await s.sync();
    expect(elementsIn(s.nft.dump(), "set", "nodeport-ips")).toEqual([NODE_IP]);
  });

  test("ServiceCIDRs of the family: an unallocated ClusterIP is dropped, after the reject", async () => {
    const s = setupNft();
    s.cluster.serviceCIDRs = ["198.51.100.0/24", "198.51.101.0/24", "2001:db8:2::/112"];
    await s.sync();
    expect(chainIn(s.nft.dump(), "cluster-ips-check")).toEqual([
      'ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"',
      'ip daddr { 198.51.100.0/24,198.51.101.0/24 } drop comment "Drop traffic to unallocated ClusterIPs"',
    ]);
  });

  test("unused ClusterIP ports are rejected through @cluster-ips", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", clusterIP("198.51.100.1")),
      endpointSlice("ns1", "svc1", [ep("192.0.2.10")]),
    );
    await s.sync();
    const dump = s.nft.dump();
    expect(elementsIn(dump, "set", "cluster-ips")).toEqual(["198.51.100.1"]);
    expect(chainIn(dump, "cluster-ips-check")).toEqual([
      'ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"',
    ]);
  });
});

describe("nftables: service ports", () => {
  test("ClusterIP: numgen DNAT over the endpoints, no endpoint chains; local endpoints in the hairpin set", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", clusterIP("198.51.100.1")),
      endpointSlice("ns1", "svc1", [ep("192.0.2.10"), ep("192.0.2.11", { node: NODE })]),
    );
    await s.sync();
    const dump = s.nft.dump();
    const c = chains("ns1", "svc1");
    expect(elementsIn(dump, "map", "service-ips")).toEqual([`198.51.100.1 . tcp . 80 : goto ${c.cluster}`]);
    expect(chainIn(dump, c.cluster)).toEqual(dnatTo("192.0.2.10:8080", "192.0.2.11:8080"));
    expect(chainIn(dump, epChain("ns1", "svc1", "192.0.2.10"))).toBeUndefined();
    expect(elementsIn(dump, "set", "hairpin-connections")).toEqual(["192.0.2.11 . 192.0.2.11 . tcp . 8080"]);
    expect(chainIn(dump, c.external)).toBeUndefined();
  });

  test("one endpoint: its DNAT alone, as upstream's", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", clusterIP("198.51.100.1")),
      endpointSlice("ns1", "svc1", [ep("192.0.2.10")]),
    );
    await s.sync();
    expect(chainIn(s.nft.dump(), chains("ns1", "svc1").cluster)).toEqual([
      "meta l4proto tcp dnat to 192.0.2.10:8080",
    ]);
  });

  test("masqueradeAll masquerades every ClusterIP connection", async () => {
    const s = setupNft({
      config: (c) => {
        c.nftables.masqueradeAll = true;
      },
    });
    s.cluster.apply(
      service("ns1", "svc1", clusterIP("198.51.100.1")),
      endpointSlice("ns1", "svc1", [ep("192.0.2.10")]),
    );
    await s.sync();
    expect(chainIn(s.nft.dump(), "services")?.[0]).toBe(
      'ip daddr @cluster-ips mark set mark or 0x00004000 comment "masquerade all clusterIP traffic"',
    );
  });

  test("no endpoints at all: ClusterIP, external IP and NodePort go to reject-chain", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", {
        type: "NodePort",
        ...clusterIP("198.51.100.1"),
        externalIPs: ["203.0.113.50"],
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30001 }],
      }),
    );
    await s.sync();
    const dump = s.nft.dump();
    expect(elementsIn(dump, "map", "no-endpoint-services")).toEqual([
      "198.51.100.1 . tcp . 80 : goto reject-chain",
      "203.0.113.50 . tcp . 80 : goto reject-chain",
    ]);
    expect(elementsIn(dump, "map", "no-endpoint-nodeports")).toEqual(["tcp . 30001 : goto reject-chain"]);
    expect(elementsIn(dump, "map", "service-ips")).toEqual([]);
    expect(elementsIn(dump, "map", "service-nodeports")).toEqual([]);
    expect(chainIn(dump, chains("ns1", "svc1").cluster)).toBeUndefined();
  });

  test("NodePort and external IP go through the external chain, which masquerades", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", {
        type: "NodePort",
        ...clusterIP("198.51.100.1"),
        externalIPs: ["203.0.113.50"],
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30001 }],
      }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.10")]),
    );
    await s.sync();
    const dump = s.nft.dump();
    const c = chains("ns1", "svc1");
    expect(elementsIn(dump, "map", "service-ips")).toEqual([
      `198.51.100.1 . tcp . 80 : goto ${c.cluster}`,
      `203.0.113.50 . tcp . 80 : goto ${c.external}`,
    ]);
    expect(elementsIn(dump, "map", "service-nodeports")).toEqual([`tcp . 30001 : goto ${c.external}`]);
    expect(chainIn(dump, c.external)).toEqual([
      'mark set mark or 0x00004000 comment "masquerade"',
      `goto ${c.cluster}`,
    ]);
  });

  test("LoadBalancer source ranges: the firewall chain drops other sources", async () => {
    const s = setupNft();
    s.cluster.apply(
      service(
        "ns1",
        "lb",
        {
          type: "LoadBalancer",
          ...clusterIP("198.51.100.1"),
          loadBalancerSourceRanges: ["198.51.100.128/25", "192.0.2.200/32"],
          ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30002 }],
        },
        { loadBalancer: { ingress: [{ ip: "203.0.113.200" }] } },
      ),
      endpointSlice("lb", "lb", [ep("192.0.2.10")]),
    );
    s.cluster.apply(endpointSlice("ns1", "lb", [ep("192.0.2.10")]));
    await s.sync();
    const dump = s.nft.dump();
    const c = chains("ns1", "lb");
    expect(elementsIn(dump, "map", "firewall-ips")).toEqual([
      `203.0.113.200 . tcp . 80 : goto ${c.firewall}`,
    ]);
    expect(chainIn(dump, c.firewall)).toEqual(["ip saddr != { 198.51.100.128/25, 192.0.2.200/32 } drop"]);
    expect(elementsIn(dump, "map", "service-ips")).toContain(`203.0.113.200 . tcp . 80 : goto ${c.external}`);
    // NodePorts are not subject to the source ranges.
    expect(elementsIn(dump, "map", "service-nodeports")).toEqual([`tcp . 30002 : goto ${c.external}`]);
  });

  test("a source range that covers the node also admits the load balancer IP (VIP bound locally)", async () => {
    const s = setupNft();
    s.cluster.apply(
      service(
        "ns1",
        "lb",
        {
          type: "LoadBalancer",
          ...clusterIP("198.51.100.1"),
          loadBalancerSourceRanges: ["203.0.113.0/24"],
          ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30002 }],
        },
        { loadBalancer: { ingress: [{ ip: "203.0.113.200" }] } },
      ),
      endpointSlice("ns1", "lb", [ep("192.0.2.10")]),
    );
    await s.sync();
    expect(chainIn(s.nft.dump(), chains("ns1", "lb").firewall)).toEqual([
      "ip saddr != { 203.0.113.0/24, 203.0.113.200 } drop",
    ]);
  });

  test("externalTrafficPolicy Local: short-circuits for pods and the node, local endpoints only", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", {
        type: "NodePort",
        ...clusterIP("198.51.100.1"),
        externalTrafficPolicy: "Local",
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30001 }],
      }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.10", { node: NODE }), ep("192.0.2.11")]),
    );
    await s.sync();
    const dump = s.nft.dump();
    const c = chains("ns1", "svc1");
    expect(chainIn(dump, c.external)).toEqual([
      `ip saddr 192.0.2.0/24 goto ${c.cluster} comment "short-circuit pod traffic"`,
      'fib saddr type local mark set mark or 0x00004000 comment "masquerade local traffic"',
      `fib saddr type local goto ${c.cluster} comment "short-circuit local traffic"`,
      `goto ${c.local}`,
    ]);
    expect(chainIn(dump, c.local)).toEqual(dnatTo("192.0.2.10:8080"));
    expect(chainIn(dump, c.cluster)).toEqual(dnatTo("192.0.2.10:8080", "192.0.2.11:8080"));
  });

  test("externalTrafficPolicy Local without a local endpoint: external traffic is dropped, ClusterIP served", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", {
        type: "NodePort",
        ...clusterIP("198.51.100.1"),
        externalIPs: ["203.0.113.50"],
        externalTrafficPolicy: "Local",
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30001 }],
      }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.11")]),
    );
    await s.sync();
    const dump = s.nft.dump();
    const c = chains("ns1", "svc1");
    expect(elementsIn(dump, "map", "no-endpoint-services")).toEqual(["203.0.113.50 . tcp . 80 : drop"]);
    expect(elementsIn(dump, "map", "no-endpoint-nodeports")).toEqual(["tcp . 30001 : drop"]);
    expect(elementsIn(dump, "map", "service-ips")).toEqual([
      `198.51.100.1 . tcp . 80 : goto ${c.cluster}`,
      `203.0.113.50 . tcp . 80 : goto ${c.external}`,
    ]);
    // Still the short-circuit rules, but nothing to fall through to.
    expect(chainIn(dump, c.external)?.at(-1)).toBe(
      `fib saddr type local goto ${c.cluster} comment "short-circuit local traffic"`,
    );
    expect(s.metrics.syncProxyRulesNoLocalEndpointsTotal).toBeDefined();
  });

  test("internalTrafficPolicy Local without a local endpoint: ClusterIP traffic is dropped", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", { ...clusterIP("198.51.100.1"), internalTrafficPolicy: "Local" }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.11")]),
    );
    await s.sync();
    const dump = s.nft.dump();
    expect(elementsIn(dump, "map", "no-endpoint-services")).toEqual(["198.51.100.1 . tcp . 80 : drop"]);
    expect(elementsIn(dump, "map", "service-ips")).toEqual([]);
  });

  test("internalTrafficPolicy Local with a local endpoint: the ClusterIP goes to the local chain", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", { ...clusterIP("198.51.100.1"), internalTrafficPolicy: "Local" }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.10", { node: NODE }), ep("192.0.2.11")]),
    );
    await s.sync();
    const dump = s.nft.dump();
    const c = chains("ns1", "svc1");
    expect(elementsIn(dump, "map", "service-ips")).toEqual([`198.51.100.1 . tcp . 80 : goto ${c.local}`]);
    expect(chainIn(dump, c.local)).toEqual(dnatTo("192.0.2.10:8080"));
    expect(chainIn(dump, c.cluster)).toBeUndefined();
  });

  test("ClientIP affinity: a timed set per endpoint, checked before numgen, updated on DNAT", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", {
        ...clusterIP("198.51.100.1"),
        sessionAffinity: "ClientIP",
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
      }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.10"), ep("192.0.2.11")]),
    );
    await s.sync();
    const dump = s.nft.dump();
    const c = chains("ns1", "svc1");
    const [a1, a2] = [affinitySet("ns1", "svc1", "192.0.2.10"), affinitySet("ns1", "svc1", "192.0.2.11")];
    const [e1, e2] = [epChain("ns1", "svc1", "192.0.2.10"), epChain("ns1", "svc1", "192.0.2.11")];
    expect(chainIn(dump, c.cluster)).toEqual([
      `ip saddr @${a1} goto ${e1}`,
      `ip saddr @${a2} goto ${e2}`,
      ...pick(e1, e2),
    ]);
    expect(chainIn(dump, e1)).toEqual([
      `update @${a1} { ip saddr }`,
      "meta l4proto tcp dnat to 192.0.2.10:8080",
    ]);
    expect(dump).toContain(`set ${a1} { type ipv4_addr ; flags dynamic,timeout ; timeout 600s }`);
  });

  test("terminating endpoints serve when no ready one is left", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", clusterIP("198.51.100.1")),
      endpointSlice("ns1", "svc1", [
        ep("192.0.2.10", { ready: false, serving: true, terminating: true }),
        ep("192.0.2.11", { ready: false, serving: false, terminating: true }),
      ]),
    );
    await s.sync();
    expect(chainIn(s.nft.dump(), chains("ns1", "svc1").cluster)).toEqual(dnatTo("192.0.2.10:8080"));
  });

  test("topology hints: only the endpoints hinted for this node's zone", async () => {
    const s = setupNft();
    s.cluster.node = { ...s.cluster.node!, labels: { "topology.kubernetes.io/zone": "zone-a" } };
    s.cluster.apply(
      service("ns1", "svc1", {
        ...clusterIP("198.51.100.1"),
        trafficDistribution: "PreferClose",
      }),
      endpointSlice("ns1", "svc1", [
        ep("192.0.2.10", { zone: "zone-a", hints: ["zone-a"] }),
        ep("192.0.2.11", { zone: "zone-b", hints: ["zone-b"] }),
      ]),
    );
    await s.sync();
    expect(chainIn(s.nft.dump(), chains("ns1", "svc1").cluster)).toEqual(dnatTo("192.0.2.10:8080"));
  });

  test("IPv6: the ip6 table, ipv6_addr keys, bracketed DNAT targets", async () => {
    const s = setupNft({ family: "IPv6" });
    s.cluster.apply(
      service("ns1", "svc1", {
        clusterIP: "2001:db8:2::1",
        clusterIPs: ["2001:db8:2::1"],
        ipFamilies: ["IPv6"],
      }),
      endpointSlice("ns1", "svc1", [ep("2001:db8:1::10", { node: NODE }), ep("2001:db8:1::11")], {
        addressType: "IPv6",
      }),
    );
    await s.sync();
    const dump = s.nft.dump("ip6");
    expect(dump).toContain("set cluster-ips { type ipv6_addr");
    expect(elementsIn(dump, "set", "cluster-ips")).toEqual(["2001:db8:2::1"]);
    expect(chainIn(dump, chains("ns1", "svc1").cluster)).toEqual(
      dnatTo("[2001:db8:1::10]:8080", "[2001:db8:1::11]:8080"),
    );
    expect(elementsIn(dump, "set", "hairpin-connections")).toEqual([
      "2001:db8:1::10 . 2001:db8:1::10 . tcp . 8080",
    ]);
    expect(chainIn(dump, "masquerading")?.[1]).toBe(
      "ct status dnat ip6 saddr . ip6 daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random",
    );
    expect(s.nft.dump("ip")).toBe("");
  });
});

describe("nftables: load balancing", () => {
  test("the numgen rules give every endpoint the same share", async () => {
    const s = setupNft();
    const ips = ["192.0.2.10", "192.0.2.11", "192.0.2.12", "192.0.2.13", "192.0.2.14"];
    s.cluster.apply(
      service("ns1", "svc1", clusterIP("198.51.100.1")),
      endpointSlice(
        "ns1",
        "svc1",
        ips.map((ip) => ep(ip)),
      ),
    );
    await s.sync();
    const rules = chainIn(s.nft.dump(), chains("ns1", "svc1").cluster)!;
    // The chance of each rule's target: reached (no earlier rule matched) x its own match.
    let reach = 1;
    const shares = rules.map((r) => {
      const mod = /^numgen random mod (\d+) 0 /.exec(r);
      const match = mod ? 1 / Number(mod[1]) : 1;
      const share = reach * match;
      reach -= share;
      return share;
    });
    for (const share of shares) expect(share).toBeCloseTo(1 / ips.length, 12);
    expect(rules.map((r) => r.split("dnat to ")[1])).toEqual(ips.map((ip) => `${ip}:8080`));
  });
});
