// Upstream v1.37's TestNodePortIPv4 (pkg/proxy/ipvs/proxier_test.go @
// 531be81208e2274ef42e72525a26610a9622bcdf), transcribed: each case's Services, EndpointSlices,
// node addresses and nodePortAddresses go through our proxier's first sync on a fake node, and
// the IPVS table (every virtual server, scheduler, real servers and weights), the ipset members
// and the KUBE-* iptables chains it checks must be upstream's expectations. Upstream's iptables
// expectations name a rule's target and match-set only and its ipset expectations the members;
// they are checked the same way here (rules in upstream's order, as a subsequence of the chain's
// rules in nat then filter, as upstream's fake lists a chain name).
// The addresses are upstream's own (no local-traffic detector: upstream's fake has none).

import { describe, expect, test } from "bun:test";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { endpointSlice, ep, fakeHost, type Host, NODE, service, setup } from "./harness.ts";

interface VS {
  proto: string;
  ip: string;
  port: number;
  reals: string[];
}
interface Rule {
  jump: string;
  set?: string;
  source?: string;
}
interface Case {
  name: string;
  objects: (ServiceObject | EndpointSliceObject)[];
  nodeIPs: string[];
  nodePortAddresses: string[];
  ipvs: VS[];
  ipsets?: Record<string, string[]>;
  chains?: Record<string, Rule[]>;
}

const svc1 = (protocol: string, extra: Record<string, unknown> = {}) =>
  service("ns1", "svc1", {
    type: "NodePort",
    clusterIP: "10.20.30.41",
    ports: [{ name: "p80", port: 80, protocol, nodePort: 3001 }],
    ...extra,
  });
const slice = (protocol: string, eps: [string, string?][], addressType = "IPv4", n = 1) =>
  endpointSlice(
    "ns1",
    "svc1",
    eps.map(([ip, node]) => ep(ip, { node: node ?? "" })),
    { ports: [{ name: "p80", port: 80, protocol }], addressType, suffix: String(n) },
  );
const vs = (proto: string, ip: string, port: number, reals: string[]): VS => ({ proto, ip, port, reals });
const r = (ip: string) => `${ip}:80 w1`;

const CASES: Case[] = [
  {
    name: "1 service with node port, has 2 endpoints",
    objects: [svc1("TCP"), slice("TCP", [["10.180.0.1"]]), slice("TCP", [["1002:ab8::2:10"]], "IPv6", 2)],
    nodeIPs: ["100.101.102.103", "2001:db8::1:1"],
    nodePortAddresses: [],
    ipvs: [
      vs("TCP", "10.20.30.41", 80, [r("10.180.0.1")]),
      vs("TCP", "100.101.102.103", 3001, [r("10.180.0.1")]),
    ],
  },
  {
    name: "1 UDP service with node port, has endpoints",
    objects: [svc1("UDP"), slice("UDP", [["10.180.0.1"]])],
    nodeIPs: ["100.101.102.103"],
    nodePortAddresses: ["0.0.0.0/0"],
    ipvs: [
      vs("UDP", "10.20.30.41", 80, [r("10.180.0.1")]),
      vs("UDP", "100.101.102.103", 3001, [r("10.180.0.1")]),
    ],
    ipsets: { "KUBE-NODE-PORT-UDP": ["3001"] },
    chains: {
      "KUBE-NODE-PORT": [
        { jump: "KUBE-MARK-MASQ", set: "KUBE-NODE-PORT-UDP" },
        { jump: "ACCEPT", set: "KUBE-HEALTH-CHECK-NODE-PORT" },
      ],
      "KUBE-SERVICES": [
        { jump: "RETURN", source: "127.0.0.0/8" },
        { jump: "KUBE-MARK-MASQ", set: "KUBE-CLUSTER-IP" },
        { jump: "KUBE-NODE-PORT" },
        { jump: "ACCEPT", set: "KUBE-CLUSTER-IP" },
      ],
    },
  },
  {
    name: "service has node port but no endpoints",
    objects: [svc1("TCP")],
    nodeIPs: ["100.101.102.103"],
    nodePortAddresses: [],
    ipvs: [vs("TCP", "10.20.30.41", 80, []), vs("TCP", "100.101.102.103", 3001, [])],
  },
  {
    name: "node port service with protocol sctp on a node with multiple nodeIPs",
    objects: [svc1("SCTP"), slice("SCTP", [["10.180.0.1"]])],
    nodeIPs: [
      "100.101.102.103",
      "100.101.102.104",
      "100.101.102.105",
      "2001:db8::1:1",
      "2001:db8::1:2",
      "2001:db8::1:3",
    ],
    nodePortAddresses: [],
    ipvs: [
      vs("SCTP", "10.20.30.41", 80, [r("10.180.0.1")]),
      vs("SCTP", "100.101.102.103", 3001, [r("10.180.0.1")]),
      vs("SCTP", "100.101.102.104", 3001, [r("10.180.0.1")]),
      vs("SCTP", "100.101.102.105", 3001, [r("10.180.0.1")]),
    ],
    ipsets: {
      "KUBE-NODE-PORT-SCTP-HASH": [
        "100.101.102.103,sctp:3001",
        "100.101.102.104,sctp:3001",
        "100.101.102.105,sctp:3001",
      ],
    },
  },
  {
    name: "node port service with protocol sctp and externalTrafficPolicy local",
    objects: [
      svc1("SCTP", { externalTrafficPolicy: "Local" }),
      slice("SCTP", [
        ["10.180.0.1", NODE],
        ["10.180.1.1", "other-node"],
      ]),
    ],
    nodeIPs: ["100.101.102.103"],
    nodePortAddresses: [],
    ipvs: [
      vs("SCTP", "10.20.30.41", 80, [r("10.180.0.1"), r("10.180.1.1")]),
      vs("SCTP", "100.101.102.103", 3001, [r("10.180.0.1")]),
    ],
    ipsets: {
      "KUBE-NODE-PORT-SCTP-HASH": ["100.101.102.103,sctp:3001"],
      "KUBE-NODE-PORT-LOCAL-SCTP-HASH": ["100.101.102.103,sctp:3001"],
    },
    chains: {
      "KUBE-NODE-PORT": [
        { jump: "RETURN", set: "KUBE-NODE-PORT-LOCAL-SCTP-HASH" },
        { jump: "KUBE-MARK-MASQ", set: "KUBE-NODE-PORT-SCTP-HASH" },
        { jump: "ACCEPT", set: "KUBE-HEALTH-CHECK-NODE-PORT" },
      ],
    },
  },
];

/** A node whose eth0 carries exactly the case's addresses (upstream's fake netlink handle). */
const nodeWith = (addresses: string[]): Host =>
  fakeHost(addresses.map((a) => (a.includes(":") ? `${a}/64` : `${a}/24`)));

/** Whether `rules` holds each expected rule, in order. */
function holdsInOrder(rules: string[], expected: Rule[]): boolean {
  let i = 0;
  for (const rule of rules) {
    const e = expected[i];
    if (!e) break;
    const jump = new RegExp(`-j ${e.jump}(\\s|$)`).test(rule);
    const set = e.set ? rule.includes(`--match-set ${e.set} `) : !rule.includes("--match-set");
    const source = e.source ? rule.includes(`-s ${e.source}`) : true;
    if (jump && set && source) i++;
  }
  return i === expected.length;
}

describe("ipvs: upstream v1.37's TestNodePortIPv4", () => {
  for (const c of CASES) {
    test(c.name, async () => {
      const host = nodeWith(c.nodeIPs);
      const s = setup({
        host,
        config: (cfg) => {
          cfg.clusterCIDRs = [];
          cfg.nodePortAddresses = c.nodePortAddresses;
        },
        deps: { nodeIPs: { IPv4: c.nodeIPs[0]!, IPv6: c.nodeIPs.find((a) => a.includes(":")) ?? "" } },
      });
      s.cluster.apply(...c.objects);
      await s.sync();
      const got = host.ipvs
        .services()
        .map((v) => ({
          proto: v.server.protocol.toUpperCase(),
          ip: v.server.address,
          port: v.server.port,
          scheduler: v.server.scheduler,
          reals: v.reals.map((x) => `${x.address}:${x.port} w${x.weight}`).sort(),
        }))
        .sort((a, b) => `${a.proto} ${a.ip} ${a.port}`.localeCompare(`${b.proto} ${b.ip} ${b.port}`));
      const want = c.ipvs
        .map((v) => ({ ...v, scheduler: "rr", reals: [...v.reals].sort() }))
        .sort((a, b) => `${a.proto} ${a.ip} ${a.port}`.localeCompare(`${b.proto} ${b.ip} ${b.port}`));
      expect(got).toEqual(want);
      for (const [set, members] of Object.entries(c.ipsets ?? {})) {
        expect([...(host.ipset.entries(set) ?? [])].sort()).toEqual([...members].sort());
      }
      for (const [chain, rules] of Object.entries(c.chains ?? {})) {
        // Upstream's fake answers a chain's rules across tables (nat first, then filter).
        const table = [...host.ipt.IPv4.rules("nat", chain), ...host.ipt.IPv4.rules("filter", chain)];
        expect({ chain, rules: table, holds: holdsInOrder(table, rules) }).toMatchObject({ holds: true });
      }
    });
  }
});
