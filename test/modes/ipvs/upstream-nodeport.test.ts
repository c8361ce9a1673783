// Upstream v1.37's TestNodePortIPv4 and TestNodePortIPv6 (pkg/proxy/ipvs/proxier_test.go @
// 531be81208e2274ef42e72525a26610a9622bcdf), transcribed: each case's Services, EndpointSlices,
// node addresses and nodePortAddresses go through our proxier's first sync on a fake node, and
// the IPVS table (every virtual server, scheduler, real servers and weights), the ipset members
// and the KUBE-* iptables chains it checks must be upstream's expectations. Upstream's iptables
// expectations name a rule's target and match-set only and its ipset expectations the members;
// they are checked the same way here (the chain's rules in nat then filter, as upstream's fake
// lists a chain name: the same count, each in upstream's order; see upstream-checks.ts).
// The addresses are upstream's own (no local-traffic detector: upstream's fake has none).

import { describe, expect, test } from "bun:test";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { endpointSlice, ep, NODE, service, setup } from "./harness.ts";
import {
  chainRules,
  expectedTable,
  ipvsTable,
  matchesExactly,
  nodeWith,
  type Rule,
  r80,
  type VS,
  vs,
} from "./upstream-checks.ts";

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
const r = r80;

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

/** One case through a first sync of the `family` proxier, checked as upstream checks it. */
async function runCase(c: Case, family: IPFamily): Promise<void> {
  const host = nodeWith(c.nodeIPs);
  const s = setup({
    host,
    family,
    config: (cfg) => {
      cfg.clusterCIDRs = [];
      cfg.nodePortAddresses = c.nodePortAddresses;
    },
    deps: {
      nodeIPs: {
        IPv4: c.nodeIPs.find((a) => !a.includes(":")) ?? "",
        IPv6: c.nodeIPs.find((a) => a.includes(":")) ?? "",
      },
    },
  });
  s.cluster.apply(...c.objects);
  await s.sync();
  expect(ipvsTable(host)).toEqual(expectedTable(c.ipvs));
  for (const [set, members] of Object.entries(c.ipsets ?? {})) {
    expect({ set, members: [...(host.ipset.entries(set) ?? [])].sort() }).toEqual({
      set,
      members: [...members].sort(),
    });
  }
  for (const [chain, rules] of Object.entries(c.chains ?? {})) {
    const got = chainRules(host, chain, family);
    expect({ chain, rules: got, matches: matchesExactly(got, rules) }).toMatchObject({ matches: true });
  }
}

describe("ipvs: upstream v1.37's TestNodePortIPv4", () => {
  for (const c of CASES) test(c.name, () => runCase(c, "IPv4"));
});

// TestNodePortIPv6. Upstream's fake proxier names its ipsets without the family prefix whatever
// the family; a real IPv6 proxier (upstream's and ours) names them KUBE-6-..., which is what is
// checked here, with upstream's members.
const svc6 = (protocol: string, clusterIP = "2020::1") =>
  service("ns1", "svc1", {
    type: "NodePort",
    clusterIP,
    ports: [{ name: "p80", port: 80, protocol, nodePort: 3001 }],
  });

const CASES_V6: Case[] = [
  {
    name: "1 service with node port, has 2 endpoints",
    objects: [svc6("TCP"), slice("TCP", [["10.180.0.1"]]), slice("TCP", [["1002:ab8::2:10"]], "IPv6", 2)],
    nodeIPs: ["100.101.102.103", "2001:db8::1:1"],
    nodePortAddresses: [],
    ipvs: [
      vs("TCP", "2001:db8::1:1", 3001, [r("1002:ab8::2:10")]),
      vs("TCP", "2020::1", 80, [r("1002:ab8::2:10")]),
    ],
  },
  {
    name: "1 UDP service with node port, has endpoints (no action on IPv6 Proxier)",
    objects: [svc6("UDP", "10.20.30.41"), slice("UDP", [["10.180.0.1"]], "IPv6")],
    nodeIPs: ["100.101.102.103"],
    nodePortAddresses: ["0.0.0.0/0"],
    ipvs: [],
  },
  {
    name: "service has node port but no endpoints",
    objects: [svc6("TCP")],
    nodeIPs: ["100.101.102.103", "2001:db8::1:1"],
    nodePortAddresses: [],
    ipvs: [vs("TCP", "2001:db8::1:1", 3001, []), vs("TCP", "2020::1", 80, [])],
  },
  {
    name: "node port service with protocol sctp on a node with multiple nodeIPs",
    objects: [svc6("SCTP"), slice("SCTP", [["2001::1"]], "IPv6")],
    nodeIPs: ["2001:db8::1:1", "2001:db8::1:2"],
    nodePortAddresses: [],
    ipvs: [
      vs("SCTP", "2001:db8::1:1", 3001, [r("2001::1")]),
      vs("SCTP", "2001:db8::1:2", 3001, [r("2001::1")]),
      vs("SCTP", "2020::1", 80, [r("2001::1")]),
    ],
    ipsets: { "KUBE-6-NODE-PORT-SCTP-HASH": ["2001:db8::1:1,sctp:3001", "2001:db8::1:2,sctp:3001"] },
  },
];

describe("ipvs: upstream v1.37's TestNodePortIPv6", () => {
  for (const c of CASES_V6) test(c.name, () => runCase(c, "IPv6"));
});
