import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { endpointChain, servicePortChains } from "../../../src/modes/iptables/chains.ts";
import {
  chainRules,
  endpointSlice,
  ep,
  fakeNfacct,
  NODE,
  type SetupOptions,
  service,
  setup,
  tableSection,
} from "./harness.ts";
import { overallIPv4, overallIPv6 } from "./scenarios.ts";

const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/iptables/${name}`, import.meta.url), "utf8");

const nfacct = fakeNfacct().client;

async function rulesFor(objects: (ServiceObject | EndpointSliceObject)[], opts: SetupOptions = {}) {
  const s = setup(opts);
  s.cluster.apply(...objects);
  return { payload: await s.sync(), s };
}

const SVC1 = "KUBE-SVC-XPGD46QRK7WJZT7O"; // ns1/svc1:p80 tcp
const EXT1 = "KUBE-EXT-XPGD46QRK7WJZT7O";
const SVL1 = "KUBE-SVL-XPGD46QRK7WJZT7O";
const FW1 = "KUBE-FW-XPGD46QRK7WJZT7O";

/** KUBE-SEP- of an endpoint of a TCP port (names are checked against upstream in chains.test.ts). */
const sep = (port: string, endpoint: string) => endpointChain(port, "tcp", endpoint);

const lb = (ip: string) => ({ loadBalancer: { ingress: [{ ip }] } });

describe("golden restore input", () => {
  test("IPv4: every kind of service, byte for byte", async () => {
    const { payload } = await rulesFor(overallIPv4(), { deps: { nfacct } });
    expect(payload).toBe(fixture("overall-ipv4.txt"));
  });

  test("IPv6: no localnet guard, no localhost NodePorts, bracketed endpoints", async () => {
    const { payload } = await rulesFor(overallIPv6(), { family: "IPv6", deps: { nfacct } });
    expect(payload).toBe(fixture("overall-ipv6.txt"));
  });

  test("the golden input is accepted by a stateful iptables and every jump resolves", async () => {
    const { s } = await rulesFor(overallIPv4(), { deps: { nfacct } });
    expect(s.ipt.chains("nat")).toContain("KUBE-FW-NUKIZ6OKUXPJNT4C");
    expect(s.ipt.rules("nat", "KUBE-MARK-MASQ")).toEqual(["-j MARK --or-mark 0x00004000"]);
  });
});

describe("cluster IP", () => {
  test("one endpoint: masquerade off-cluster sources, then a plain jump", async () => {
    const { payload } = await rulesFor([
      service("ns1", "svc1", { clusterIP: "198.51.100.41" }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.130")]),
    ]);
    expect(chainRules(payload, "nat", SVC1)).toEqual([
      `-A ${SVC1} -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 198.51.100.41 --dport 80 ! -s 192.0.2.0/24 -j KUBE-MARK-MASQ`,
      `-A ${SVC1} -m comment --comment "ns1/svc1:p80 -> 192.0.2.130:8080" -j ${sep("ns1/svc1:p80", "192.0.2.130:8080")}`,
    ]);
  });

  test("several endpoints: 1/n, 1/(n-1), ... and the last rule always matches", async () => {
    const { payload } = await rulesFor([
      service("ns1", "svc1", { clusterIP: "198.51.100.41" }),
      endpointSlice(
        "ns1",
        "svc1",
        ["192.0.2.11", "192.0.2.12", "192.0.2.13", "192.0.2.14"].map((ip) => ep(ip)),
      ),
    ]);
    const jumps = chainRules(payload, "nat", SVC1).slice(1);
    expect(jumps.map((r) => /--probability (\S+)/.exec(r)?.[1] ?? "last")).toEqual([
      "0.2500000000",
      "0.3333333333",
      "0.5000000000",
      "last",
    ]);
    expect(jumps.map((r) => /-> (\S+)"/.exec(r)?.[1])).toEqual([
      "192.0.2.11:8080",
      "192.0.2.12:8080",
      "192.0.2.13:8080",
      "192.0.2.14:8080",
    ]);
  });

  test("no endpoints: REJECT in filter for every destination, nothing in nat", async () => {
    const { payload } = await rulesFor([
      service(
        "ns1",
        "svc1",
        {
          type: "LoadBalancer",
          clusterIP: "198.51.100.41",
          externalIPs: ["203.0.113.20"],
          ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3001 }],
        },
        lb("203.0.113.100"),
      ),
    ]);
    const comment = `-m comment --comment "ns1/svc1:p80 has no endpoints"`;
    expect(chainRules(payload, "filter", "KUBE-SERVICES")).toEqual([
      `-A KUBE-SERVICES ${comment} -m tcp -p tcp -d 198.51.100.41 --dport 80 -j REJECT`,
    ]);
    expect(chainRules(payload, "filter", "KUBE-EXTERNAL-SERVICES")).toEqual([
      `-A KUBE-EXTERNAL-SERVICES ${comment} -m tcp -p tcp -d 203.0.113.20 --dport 80 -j REJECT`,
      `-A KUBE-EXTERNAL-SERVICES ${comment} -m tcp -p tcp -d 203.0.113.100 --dport 80 -j REJECT`,
      `-A KUBE-EXTERNAL-SERVICES ${comment} -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 3001 -j REJECT`,
    ]);
    expect(payload).not.toContain("KUBE-SVC-");
    expect(payload).not.toContain("KUBE-EXT-");
    expect(chainRules(payload, "nat", "KUBE-NODEPORTS")).toEqual([]);
  });

  test("UDP and SCTP ports match with their lower-case protocol", async () => {
    const { payload } = await rulesFor([
      service("ns1", "dns", {
        clusterIP: "198.51.100.10",
        ports: [
          { name: "dns", port: 53, protocol: "UDP" },
          { name: "sctp", port: 9, protocol: "SCTP" },
        ],
      }),
      endpointSlice("ns1", "dns", [ep("192.0.2.53")], {
        ports: [
          { name: "dns", port: 53, protocol: "UDP" },
          { name: "sctp", port: 9, protocol: "SCTP" },
        ],
      }),
    ]);
    expect(payload).toContain(`--comment "ns1/dns:dns cluster IP" -m udp -p udp -d 198.51.100.10 --dport 53`);
    expect(payload).toContain(
      `--comment "ns1/dns:sctp cluster IP" -m sctp -p sctp -d 198.51.100.10 --dport 9`,
    );
    expect(payload).toContain("-m udp -p udp -j DNAT --to-destination 192.0.2.53:53");
  });

  test("masquerade-all masquerades every cluster IP packet, local or not", async () => {
    const { payload } = await rulesFor(
      [
        service("ns1", "svc1", { clusterIP: "198.51.100.41" }),
        endpointSlice("ns1", "svc1", [ep("192.0.2.130")]),
      ],
      {
        config: (c) => {
          c.iptables.masqueradeAll = true;
        },
      },
    );
    expect(chainRules(payload, "nat", SVC1)[0]).toBe(
      `-A ${SVC1} -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 198.51.100.41 --dport 80 -j KUBE-MARK-MASQ`,
    );
  });

  test("session affinity: recent-list checks come first, endpoints record the client", async () => {
    const { payload } = await rulesFor([
      service("ns1", "svc1", {
        clusterIP: "198.51.100.41",
        sessionAffinity: "ClientIP",
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 300 } },
      }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.11"), ep("192.0.2.12")]),
    ]);
    const rules = chainRules(payload, "nat", SVC1);
    const seps = rules.slice(1).map((r) => / -j (KUBE-SEP-\S+)$/.exec(r)?.[1]);
    expect(rules[1]).toContain(`-m recent --name ${seps[0]} --rcheck --seconds 300 --reap -j ${seps[0]}`);
    expect(rules[2]).toContain(`-m recent --name ${seps[1]} --rcheck --seconds 300 --reap -j ${seps[1]}`);
    expect(rules[3]).toContain("-m statistic --mode random --probability 0.5000000000");
    expect(chainRules(payload, "nat", seps[0]!)[1]).toBe(
      `-A ${seps[0]} -m comment --comment ns1/svc1:p80 -m recent --name ${seps[0]} --set -m tcp -p tcp -j DNAT --to-destination 192.0.2.11:8080`,
    );
  });
});

describe("traffic policies", () => {
  test("internalTrafficPolicy Local without local endpoints drops cluster IP traffic", async () => {
    const { payload, s } = await rulesFor([
      service("ns1", "svc1", { clusterIP: "198.51.100.41", internalTrafficPolicy: "Local" }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.130")]),
    ]);
    expect(chainRules(payload, "filter", "KUBE-SERVICES")).toEqual([
      `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 has no local endpoints" -m tcp -p tcp -d 198.51.100.41 --dport 80 -j DROP`,
    ]);
    expect(payload).not.toContain(SVC1);
    expect(payload).not.toContain(SVL1);
    const metric = await s.metrics.syncProxyRulesNoLocalEndpointsTotal.get();
    expect(metric.values.find((v) => v.labels.traffic_policy === "internal")?.value).toBe(1);
  });

  test("internalTrafficPolicy Local with a local endpoint uses only the KUBE-SVL chain", async () => {
    const { payload } = await rulesFor([
      service("ns1", "svc1", { clusterIP: "198.51.100.41", internalTrafficPolicy: "Local" }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.130"), ep("192.0.2.131", { node: NODE })]),
    ]);
    expect(chainRules(payload, "nat", "KUBE-SERVICES")[0]).toContain(`-j ${SVL1}`);
    expect(chainRules(payload, "nat", SVL1).slice(1)).toEqual([
      `-A ${SVL1} -m comment --comment "ns1/svc1:p80 -> 192.0.2.131:8080" -j ${sep("ns1/svc1:p80", "192.0.2.131:8080")}`,
    ]);
    expect(payload).not.toContain(`:${SVC1}`);
    expect(payload).not.toContain("192.0.2.130:8080");
  });

  test("external IP with externalTrafficPolicy Local and a local endpoint", async () => {
    const { payload } = await rulesFor([
      service("ns1", "svc1", {
        clusterIP: "198.51.100.41",
        externalIPs: ["203.0.113.20"],
        externalTrafficPolicy: "Local",
      }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.130"), ep("192.0.2.131", { node: NODE })]),
    ]);
    expect(chainRules(payload, "nat", "KUBE-SERVICES")).toContain(
      `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 external IP" -m tcp -p tcp -d 203.0.113.20 --dport 80 -j ${EXT1}`,
    );
    expect(chainRules(payload, "nat", EXT1)).toEqual([
      `-A ${EXT1} -m comment --comment "pod traffic for ns1/svc1:p80 external destinations" -s 192.0.2.0/24 -j ${SVC1}`,
      `-A ${EXT1} -m comment --comment "masquerade LOCAL traffic for ns1/svc1:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ`,
      `-A ${EXT1} -m comment --comment "route LOCAL traffic for ns1/svc1:p80 external destinations" -m addrtype --src-type LOCAL -j ${SVC1}`,
      `-A ${EXT1} -j ${SVL1}`,
    ]);
    // Cluster policy for pods and the host; Local policy for everyone else.
    expect(chainRules(payload, "nat", SVC1)).toHaveLength(3);
    expect(chainRules(payload, "nat", SVL1)).toHaveLength(1);
    expect(chainRules(payload, "filter", "KUBE-EXTERNAL-SERVICES")).toEqual([]);
  });

  test("terminating endpoints serve only when nothing is ready", async () => {
    const terminating = { ready: false, serving: true, terminating: true };
    const { payload } = await rulesFor([
      service("ns1", "svc1", { clusterIP: "198.51.100.41" }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.11", terminating), ep("192.0.2.12", terminating)]),
    ]);
    const jumps = chainRules(payload, "nat", SVC1).slice(1);
    expect(jumps).toHaveLength(2);
    expect(jumps[0]).toContain("192.0.2.11:8080");
    const mixed = await rulesFor([
      service("ns1", "svc1", { clusterIP: "198.51.100.41" }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.11", terminating), ep("192.0.2.12")]),
    ]);
    expect(chainRules(mixed.payload, "nat", SVC1).slice(1)).toEqual([
      `-A ${SVC1} -m comment --comment "ns1/svc1:p80 -> 192.0.2.12:8080" -j ${sep("ns1/svc1:p80", "192.0.2.12:8080")}`,
    ]);
  });

  test("topology hints keep cluster traffic in the node's zone", async () => {
    const s = setup();
    s.cluster.node = { ...s.cluster.node!, labels: { "topology.kubernetes.io/zone": "zone-a" } };
    s.cluster.apply(
      service("ns1", "svc1", { clusterIP: "198.51.100.41" }),
      endpointSlice("ns1", "svc1", [
        ep("192.0.2.11", { zone: "zone-a", hints: ["zone-a"] }),
        ep("192.0.2.12", { zone: "zone-b", hints: ["zone-b"] }),
        ep("192.0.2.13", { zone: "zone-a", hints: ["zone-a"] }),
      ]),
    );
    const jumps = chainRules(await s.sync(), "nat", SVC1).slice(1);
    expect(jumps.map((r) => /-> (\S+)"/.exec(r)?.[1])).toEqual(["192.0.2.11:8080", "192.0.2.13:8080"]);
  });
});

describe("load balancers", () => {
  const lbService = (ranges: string[]) =>
    service(
      "ns1",
      "svc1",
      {
        type: "LoadBalancer",
        clusterIP: "198.51.100.41",
        loadBalancerSourceRanges: ranges,
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3001 }],
      },
      lb("203.0.113.100"),
    );

  test("source ranges: KUBE-FW accepts the ranges, KUBE-PROXY-FIREWALL drops the rest", async () => {
    const { payload } = await rulesFor([
      lbService(["198.51.100.0/25"]),
      endpointSlice("ns1", "svc1", [ep("192.0.2.130")]),
    ]);
    expect(chainRules(payload, "nat", "KUBE-SERVICES")).toContain(
      `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 loadbalancer IP" -m tcp -p tcp -d 203.0.113.100 --dport 80 -j ${FW1}`,
    );
    // The node (203.0.113.10) is outside the range: no rule for the VIP as a source.
    expect(chainRules(payload, "nat", FW1)).toEqual([
      `-A ${FW1} -m comment --comment "ns1/svc1:p80 loadbalancer IP" -s 198.51.100.0/25 -j ${EXT1}`,
      `-A ${FW1} -m comment --comment "other traffic to ns1/svc1:p80 will be dropped by KUBE-PROXY-FIREWALL"`,
    ]);
    expect(chainRules(payload, "filter", "KUBE-PROXY-FIREWALL")).toEqual([
      `-A KUBE-PROXY-FIREWALL -m comment --comment "ns1/svc1:p80 traffic not accepted by ${FW1}" -m tcp -p tcp -d 203.0.113.100 --dport 80 -j DROP`,
    ]);
    // NodePorts are not subject to the source ranges.
    expect(chainRules(payload, "nat", "KUBE-NODEPORTS")).toEqual([
      `-A KUBE-NODEPORTS -m comment --comment ns1/svc1:p80 -m tcp -p tcp --dport 3001 -j ${EXT1}`,
    ]);
  });

  test("a range covering the node also lets the node reach its own VIP", async () => {
    const { payload } = await rulesFor([
      lbService(["203.0.113.0/24"]),
      endpointSlice("ns1", "svc1", [ep("192.0.2.130")]),
    ]);
    expect(chainRules(payload, "nat", FW1)).toContain(
      `-A ${FW1} -m comment --comment "ns1/svc1:p80 loadbalancer IP" -s 203.0.113.100 -j ${EXT1}`,
    );
  });

  test("without source ranges the VIP goes straight to KUBE-EXT", async () => {
    const { payload } = await rulesFor([lbService([]), endpointSlice("ns1", "svc1", [ep("192.0.2.130")])]);
    expect(payload).not.toContain(FW1);
    expect(chainRules(payload, "filter", "KUBE-PROXY-FIREWALL")).toEqual([]);
  });

  test("health check node port is accepted whether or not this node has endpoints", async () => {
    const objects = (node: string) => [
      service(
        "ns1",
        "svc1",
        {
          type: "LoadBalancer",
          clusterIP: "198.51.100.41",
          externalTrafficPolicy: "Local",
          healthCheckNodePort: 31000,
          ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3001 }],
        },
        lb("203.0.113.100"),
      ),
      endpointSlice("ns1", "svc1", [ep("192.0.2.130", { node })]),
    ];
    const accept = `-A KUBE-NODEPORTS -m comment --comment "ns1/svc1:p80 health check node port" -m tcp -p tcp --dport 31000 -j ACCEPT`;
    for (const node of [NODE, "node-b"]) {
      const { payload } = await rulesFor(objects(node));
      expect(chainRules(payload, "filter", "KUBE-NODEPORTS")).toEqual([accept]);
    }
  });
});

describe("node ports and localhost", () => {
  const nodePort = () => [
    service("ns1", "svc1", {
      type: "NodePort",
      clusterIP: "198.51.100.41",
      ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3001 }],
    }),
    endpointSlice("ns1", "svc1", [ep("192.0.2.130")]),
  ];
  const tail = (payload: string) =>
    chainRules(payload, "nat", "KUBE-SERVICES").filter((r) => r.includes("nodeports;"));
  const TAIL = `-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain"`;

  test("no nodePortAddresses: every local address, localhost included (route_localnet)", async () => {
    const { payload } = await rulesFor(nodePort());
    expect(tail(payload)).toEqual([`${TAIL} -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS`]);
    expect(chainRules(payload, "filter", "KUBE-FIREWALL")).toHaveLength(1);
    expect(chainRules(payload, "nat", EXT1)).toEqual([
      `-A ${EXT1} -m comment --comment "masquerade traffic for ns1/svc1:p80 external destinations" -j KUBE-MARK-MASQ`,
      `-A ${EXT1} -j ${SVC1}`,
    ]);
  });

  test("localhost NodePorts off: loopback excluded and no localnet guard", async () => {
    const { payload } = await rulesFor(nodePort(), {
      config: (c) => {
        c.iptables.localhostNodePorts = false;
      },
      deps: { nfacct },
    });
    expect(tail(payload)).toEqual([
      `${TAIL} -m addrtype --dst-type LOCAL ! -d 127.0.0.0/8 -j KUBE-NODEPORTS`,
    ]);
    expect(tableSection(payload, "filter")).not.toContain(":KUBE-FIREWALL - [0:0]");
    expect(payload).not.toContain("localhost_nps_accepted_pkts");
  });

  test("nodePortAddresses: one tail rule per matching node address", async () => {
    const { payload } = await rulesFor(nodePort(), {
      config: (c) => {
        c.nodePortAddresses = ["203.0.113.0/24", "198.51.100.0/24"];
      },
      localAddresses: ["127.0.0.1/8", "203.0.113.10/24", "203.0.113.11/24", "192.0.2.1/24"],
    });
    expect(tail(payload)).toEqual([
      `${TAIL} -d 203.0.113.10 -j KUBE-NODEPORTS`,
      `${TAIL} -d 203.0.113.11 -j KUBE-NODEPORTS`,
    ]);
    // No loopback among the addresses: localhost NodePorts and their guard are off.
    expect(tableSection(payload, "filter")).not.toContain(":KUBE-FIREWALL - [0:0]");
  });

  test("nodePortAddresses with loopback: 127.0.0.1 is a NodePort address only with localhost NodePorts", async () => {
    const addresses = ["127.0.0.1/8", "203.0.113.10/24"];
    const on = await rulesFor(nodePort(), {
      config: (c) => {
        c.nodePortAddresses = ["127.0.0.0/8"];
      },
      localAddresses: addresses,
    });
    expect(tail(on.payload)).toEqual([`${TAIL} -d 127.0.0.1 -j KUBE-NODEPORTS`]);
    const off = await rulesFor(nodePort(), {
      config: (c) => {
        c.nodePortAddresses = ["127.0.0.0/8"];
        c.iptables.localhostNodePorts = false;
      },
      localAddresses: addresses,
    });
    expect(tail(off.payload)).toEqual([]);
  });

  test('"primary" uses the node IP of the family', async () => {
    const { payload } = await rulesFor(nodePort(), {
      config: (c) => {
        c.nodePortAddresses = ["primary"];
      },
      localAddresses: ["127.0.0.1/8", "203.0.113.10/24", "203.0.113.11/24"],
    });
    expect(tail(payload)).toEqual([`${TAIL} -d 203.0.113.10 -j KUBE-NODEPORTS`]);
  });

  test("IPv6 never serves NodePorts on ::1", async () => {
    const v6 = [
      service("ns1", "svc1", {
        type: "NodePort",
        clusterIP: "2001:db8:100::41",
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3001 }],
      }),
    ];
    const all = await rulesFor(v6, { family: "IPv6" });
    expect(tail(all.payload)).toEqual([
      `${TAIL} -m addrtype --dst-type LOCAL ! -d ::1/128 -j KUBE-NODEPORTS`,
    ]);
    const listed = await rulesFor(v6, {
      family: "IPv6",
      config: (c) => {
        c.nodePortAddresses = ["::1/128", "2001:db8:ffff::/64"];
      },
    });
    expect(tail(listed.payload)).toEqual([`${TAIL} -d 2001:db8:ffff::10 -j KUBE-NODEPORTS`]);
  });
});

describe("local traffic detection modes", () => {
  const objects = () => [
    service("ns1", "svc1", {
      clusterIP: "198.51.100.41",
      externalIPs: ["203.0.113.20"],
      externalTrafficPolicy: "Local",
    }),
    endpointSlice("ns1", "svc1", [ep("192.0.2.131", { node: NODE })]),
  ];
  const masqRule = (payload: string) => chainRules(payload, "nat", SVC1)[0]!;
  const podRule = (payload: string) => chainRules(payload, "nat", EXT1)[0]!;

  test("ClusterCIDR: the cluster CIDR of the family", async () => {
    const { payload } = await rulesFor(objects());
    expect(masqRule(payload)).toEndWith("--dport 80 ! -s 192.0.2.0/24 -j KUBE-MARK-MASQ");
    expect(podRule(payload)).toContain(`external destinations" -s 192.0.2.0/24 -j ${SVC1}`);
  });

  test("NodeCIDR: the node's pod CIDR", async () => {
    const { payload } = await rulesFor(objects(), {
      config: (c) => {
        c.detectLocalMode = "NodeCIDR";
      },
    });
    expect(masqRule(payload)).toEndWith("! -s 192.0.2.0/25 -j KUBE-MARK-MASQ");
    expect(podRule(payload)).toContain("-s 192.0.2.0/25 -j");
  });

  test("BridgeInterface: packets from the bridge", async () => {
    const { payload } = await rulesFor(objects(), {
      config: (c) => {
        c.detectLocalMode = "BridgeInterface";
        c.detectLocal.bridgeInterface = "cbr0";
      },
    });
    expect(masqRule(payload)).toEndWith("! -i cbr0 -j KUBE-MARK-MASQ");
    expect(podRule(payload)).toContain("-i cbr0 -j");
  });

  test("InterfaceNamePrefix: packets from interfaces with the prefix", async () => {
    const { payload } = await rulesFor(objects(), {
      config: (c) => {
        c.detectLocalMode = "InterfaceNamePrefix";
        c.detectLocal.interfaceNamePrefix = "veth";
      },
    });
    expect(masqRule(payload)).toEndWith("! -i veth+ -j KUBE-MARK-MASQ");
    expect(podRule(payload)).toContain("-i veth+ -j");
  });

  test("no CIDR for the family: no masquerade rule and no pod short-circuit", async () => {
    const { payload } = await rulesFor(objects(), {
      config: (c) => {
        c.clusterCIDRs = ["2001:db8:1::/48"];
      },
    });
    expect(chainRules(payload, "nat", SVC1).every((r) => !r.includes("KUBE-MARK-MASQ"))).toBe(true);
    expect(chainRules(payload, "nat", EXT1)[0]).toContain("masquerade LOCAL traffic");
  });
});

describe("global rules", () => {
  const objects = () => [
    service("ns1", "svc1", { clusterIP: "198.51.100.41" }),
    endpointSlice("ns1", "svc1", [ep("192.0.2.130")]),
  ];

  test("masquerade bit sets the mark everywhere it is used", async () => {
    const { payload } = await rulesFor(objects(), {
      config: (c) => {
        c.iptables.masqueradeBit = 16;
      },
    });
    expect(chainRules(payload, "nat", "KUBE-MARK-MASQ")).toEqual([
      "-A KUBE-MARK-MASQ -j MARK --or-mark 0x00010000",
    ]);
    expect(chainRules(payload, "nat", "KUBE-POSTROUTING")[0]).toBe(
      "-A KUBE-POSTROUTING -m mark ! --mark 0x00010000/0x00010000 -j RETURN",
    );
    expect(chainRules(payload, "filter", "KUBE-FORWARD")[1]).toContain(
      "--mark 0x00010000/0x00010000 -j ACCEPT",
    );
  });

  test("MASQUERADE gets --random-fully when iptables supports it", async () => {
    const s = setup();
    s.ipt.randomFully = true;
    s.cluster.apply(...objects());
    expect(chainRules(await s.sync(), "nat", "KUBE-POSTROUTING")[2]).toBe(
      `-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully`,
    );
    const plain = await rulesFor(objects());
    expect(chainRules(plain.payload, "nat", "KUBE-POSTROUTING")[2]).toEndWith("-j MASQUERADE");
  });

  test("KUBE-FORWARD drops INVALID packets unless conntrack is liberal", async () => {
    const strict = await rulesFor(objects());
    expect(chainRules(strict.payload, "filter", "KUBE-FORWARD")).toEqual([
      "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP",
      `-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x00004000/0x00004000 -j ACCEPT`,
      `-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
    ]);
    const liberal = await rulesFor(objects(), { deps: { conntrackTCPLiberal: true } });
    expect(chainRules(liberal.payload, "filter", "KUBE-FORWARD")).toHaveLength(2);
    const viaConfig = await rulesFor(objects(), {
      config: (c) => {
        c.conntrack.tcpBeLiberal = true;
      },
    });
    expect(viaConfig.payload).not.toContain("--ctstate INVALID");
  });

  test("nfacct counters are matched only when the counters could be created", async () => {
    const np = [
      service("ns1", "svc1", {
        type: "NodePort",
        clusterIP: "198.51.100.41",
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3001 }],
      }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.130")]),
    ];
    const absent = await rulesFor(np);
    expect(absent.payload).not.toContain("-m nfacct");
    const present = await rulesFor(np, { deps: { nfacct } });
    expect(chainRules(present.payload, "filter", "KUBE-FORWARD")[0]).toBe(
      "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP",
    );
    expect(chainRules(present.payload, "nat", "KUBE-NODEPORTS")[0]).toBe(
      `-A KUBE-NODEPORTS -m comment --comment ns1/svc1:p80 -m tcp -p tcp -d 127.0.0.0/8 --dport 3001 -m nfacct --nfacct-name localhost_nps_accepted_pkts -j ${EXT1}`,
    );
    const failing = await rulesFor(np, {
      deps: {
        nfacct: {
          async ensure(name) {
            if (name === "localhost_nps_accepted_pkts") throw new Error("nfacct: name too long");
          },
        },
      },
    });
    const unsupported = fakeNfacct();
    unsupported.fake.supported = false;
    const none = await rulesFor(np, { deps: { nfacct: unsupported.client } });
    expect(none.payload).not.toContain("-m nfacct");
    expect(failing.payload).toContain("--nfacct-name ct_state_invalid_dropped_pkts");
    expect(failing.payload).not.toContain("localhost_nps_accepted_pkts");
  });

  test("large clusters drop the per-endpoint comments only", async () => {
    const objects = [];
    for (let i = 0; i < 11; i++) {
      objects.push(service("ns", `s${i}`, { clusterIP: `198.51.100.${i + 1}` }));
      const eps = [];
      for (let j = 0; j < 100; j++) eps.push(ep(`192.0.${i}.${j + 1}`));
      objects.push(endpointSlice("ns", `s${i}`, eps));
    }
    const { payload, s } = await rulesFor(objects);
    expect(s.proxier.inLargeClusterMode).toBe(true);
    const svc = servicePortChains("ns/s0:p80", "tcp").svc;
    const rules = chainRules(payload, "nat", svc);
    expect(rules[0]).toContain(`-m comment --comment "ns/s0:p80 cluster IP"`);
    // Endpoints sort as "ip:port" strings, so 192.0.0.100 comes first.
    expect(rules[1]).toBe(
      `-A ${svc} -m statistic --mode random --probability 0.0100000000 -j ${sep("ns/s0:p80", "192.0.0.100:8080")}`,
    );
    const first = sep("ns/s0:p80", "192.0.0.1:8080");
    expect(chainRules(payload, "nat", first)).toEqual([
      `-A ${first} -s 192.0.0.1 -j KUBE-MARK-MASQ`,
      `-A ${first} -m tcp -p tcp -j DNAT --to-destination 192.0.0.1:8080`,
    ]);
    expect(chainRules(payload, "nat", "KUBE-SERVICES")[0]).toContain(`--comment "ns/s0:p80 cluster IP"`);
  });

  test("a dual-stack Service: each family sees only its own addresses", async () => {
    const dual = [
      service("ns1", "svc1", {
        clusterIP: "198.51.100.41",
        clusterIPs: ["198.51.100.41", "2001:db8:100::41"],
        ipFamilies: ["IPv4", "IPv6"],
        externalIPs: ["2001:db8:200::20"],
      }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.130")]),
      endpointSlice("ns1", "svc1", [ep("2001:db8:1::130")], { addressType: "IPv6", suffix: "v6" }),
    ];
    const v4 = await rulesFor(dual);
    expect(v4.payload).not.toContain("2001:db8");
    // The only external IP is IPv6, so the IPv4 side is not externally reachable at all.
    expect(v4.payload).not.toContain(EXT1);
    const v6 = await rulesFor(dual, { family: "IPv6" });
    expect(v6.payload).not.toContain("192.0.2.130");
    expect(chainRules(v6.payload, "nat", "KUBE-SERVICES")).toContain(
      `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 external IP" -m tcp -p tcp -d 2001:db8:200::20 --dport 80 -j ${EXT1}`,
    );
  });
});
