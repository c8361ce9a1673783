// Upstream v1.37's ipvs proxier tests beyond the NodePort ones (pkg/proxy/ipvs/proxier_test.go @
// 531be81208e2274ef42e72525a26610a9622bcdf), transcribed: TestIPv4Proxier and TestIPv6Proxier
// (ClusterIP Services with and without endpoints), TestExternalIPsNoEndpoint, TestExternalIPs,
// TestOnlyLocalExternalIPs, TestLoadBalancer, TestOnlyLocalNodePorts, TestHealthCheckNodePort,
// TestLoadBalancerSourceRanges, TestAcceptIPVSTraffic, TestOnlyLocalLoadBalancing,
// TestSessionAffinity, TestLoadBalancerIngressRouteTypeProxy and TestMultiPortServiceBindAddr.
// Inputs are upstream's, quirks included (some of its EndpointSlices carry a protocol no Service
// port has, so those Services get no real servers); the expectations are what upstream asserts.
// Where upstream asserts only a count of virtual servers, the servers that count must be (the
// Service's cluster IP and the IPs the test gives it) are named. Upstream's buildFakeProxier gives
// the node no address, so no NodePort virtual server appears unless a test adds one; its fake has
// no local-traffic detector (clusterCIDRs empty here). See upstream-checks.ts for how ipsets and
// chains are compared.

import { describe, expect, test } from "bun:test";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { boundAddresses, endpointSlice, ep, type Host, NODE, type Setup, service, setup } from "./harness.ts";
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

type Obj = ServiceObject | EndpointSliceObject;

/** Upstream's NewFakeProxier / buildFakeProxier: a node whose eth0 carries `nodeIPs`. */
function proxierOn(nodeIPs: string[], family: IPFamily = "IPv4", nodePortAddresses: string[] = []) {
  const host = nodeWith(nodeIPs);
  const s = setup({
    host,
    family,
    config: (cfg) => {
      cfg.clusterCIDRs = [];
      cfg.nodePortAddresses = nodePortAddresses;
    },
    deps: {
      nodeIPs: {
        IPv4: nodeIPs.find((a) => !a.includes(":")) ?? "",
        IPv6: nodeIPs.find((a) => a.includes(":")) ?? "",
      },
    },
  });
  return { host, s };
}

async function firstSync(s: Setup, ...objects: Obj[]): Promise<void> {
  s.cluster.apply(...objects);
  await s.sync();
}

function expectSets(host: Host, sets: Record<string, string[]>): void {
  for (const [set, members] of Object.entries(sets)) {
    expect({ set, members: [...(host.ipset.entries(set) ?? [])].sort() }).toEqual({
      set,
      members: [...members].sort(),
    });
  }
}

function expectChains(host: Host, chains: Record<string, Rule[]>, family: IPFamily = "IPv4"): void {
  for (const [chain, rules] of Object.entries(chains)) {
    const got = chainRules(host, chain, family);
    expect({ chain, rules: got, matches: matchesExactly(got, rules) }).toMatchObject({ matches: true });
  }
}

/** "PROTO ip:port" of every virtual server. */
const keys = (host: Host) => ipvsTable(host).map((v) => `${v.proto} ${v.ip}:${v.port}`);
const realsOf = (host: Host, ip: string, port: number) =>
  ipvsTable(host).find((v) => v.ip === ip && v.port === port && v.proto === "TCP")?.reals;

/** An EndpointSlice "<name>-<n>" of ns1/<name> whose one port is p80 -> 80 with `protocol`. */
const slice80 = (name: string, eps: [string, string?][], protocol = "TCP", addressType = "IPv4", n = 1) =>
  endpointSlice(
    "ns1",
    name,
    eps.map(([ip, node]) => ep(ip, { node: node ?? "" })),
    { ports: [{ name: "p80", port: 80, protocol }], addressType, suffix: String(n) },
  );

const port80 = (extra: Record<string, unknown> = {}) => [
  { name: "p80", port: 80, protocol: "TCP", ...extra },
];

// The rules KUBE-SERVICES holds for a LoadBalancer Service with no externalIPs (upstream's
// TestLoadBalancer, TestLoadBalancerSourceRanges, TestOnlyLocalLoadBalancing).
const LB_SERVICES_CHAIN: Rule[] = [
  { jump: "RETURN", source: "127.0.0.0/8" },
  { jump: "KUBE-LOAD-BALANCER", set: "KUBE-LOAD-BALANCER" },
  { jump: "KUBE-MARK-MASQ", set: "KUBE-CLUSTER-IP" },
  { jump: "KUBE-NODE-PORT" },
  { jump: "ACCEPT", set: "KUBE-CLUSTER-IP" },
  { jump: "ACCEPT", set: "KUBE-LOAD-BALANCER" },
];

describe("ipvs: upstream v1.37's TestIPv4Proxier and TestIPv6Proxier (ClusterIP Services)", () => {
  const twoServices = (): Obj[] => [
    service("ns1", "svc1", { clusterIP: "10.20.30.41", ports: port80() }),
    service("ns2", "svc2", {
      clusterIP: "1002:ab8::2:1",
      ports: [{ name: "p8080", port: 8080, protocol: "TCP" }],
    }),
    slice80("svc1", [["10.180.0.1"]]),
    endpointSlice("ns2", "svc2", [ep("1009:ab8::5:6", { node: "" })], {
      ports: [{ name: "p8080", port: 8080, protocol: "TCP" }],
      addressType: "IPv6",
      suffix: "1",
    }),
  ];
  const cases: { family: IPFamily; name: string; objects: () => Obj[]; ipvs: VS[] }[] = [
    {
      family: "IPv4",
      name: "2 services with Cluster IP, each with endpoints",
      objects: twoServices,
      ipvs: [vs("TCP", "10.20.30.41", 80, [r80("10.180.0.1")])],
    },
    {
      family: "IPv4",
      name: "cluster IP service with no endpoints",
      objects: () => [service("ns1", "svc1", { clusterIP: "10.20.30.41", ports: port80() })],
      ipvs: [vs("TCP", "10.20.30.41", 80, [])],
    },
    {
      family: "IPv6",
      name: "2 services with Cluster IP, each with endpoints",
      objects: twoServices,
      ipvs: [vs("TCP", "1002:ab8::2:1", 8080, ["1009:ab8::5:6:8080 w1"])],
    },
    {
      family: "IPv6",
      name: "cluster IP service with no endpoints",
      objects: () => [service("ns1", "svc1", { clusterIP: "2001::1", ports: port80() })],
      ipvs: [vs("TCP", "2001::1", 80, [])],
    },
  ];
  for (const c of cases) {
    test(`${c.family}: ${c.name}`, async () => {
      const { host, s } = proxierOn([], c.family);
      await firstSync(s, ...c.objects());
      expect(ipvsTable(host)).toEqual(expectedTable(c.ipvs));
    });
  }
});

describe("ipvs: upstream v1.37's external IP tests", () => {
  test("TestExternalIPsNoEndpoint: two virtual servers, the external IP's without real servers", async () => {
    const { host, s } = proxierOn([]);
    await firstSync(
      s,
      service("ns1", "svc1", { clusterIP: "10.20.30.41", externalIPs: ["50.60.70.81"], ports: port80() }),
    );
    expect(keys(host)).toEqual(["TCP 10.20.30.41:80", "TCP 50.60.70.81:80"]);
    expect(realsOf(host, "50.60.70.81", 80)).toEqual([]);
  });

  test("TestExternalIPs: one virtual server per external IP of the family (127.0.0.1 too) beside the cluster IP's", async () => {
    const { host, s } = proxierOn([]);
    await firstSync(
      s,
      service("ns1", "svc1", {
        clusterIP: "10.20.30.41",
        externalIPs: ["50.60.70.81", "2012::51", "127.0.0.1"],
        ports: port80(),
      }),
      // Upstream's slice names the port's protocol UDP: no real server for the TCP port.
      slice80("svc1", [["10.180.0.1"]], "UDP"),
    );
    expect(keys(host)).toEqual(["TCP 10.20.30.41:80", "TCP 127.0.0.1:80", "TCP 50.60.70.81:80"]);
    for (const ip of ["50.60.70.81", "127.0.0.1"]) {
      for (const real of realsOf(host, ip, 80) ?? []) expect(real).toBe(r80("10.180.0.1"));
    }
  });

  test("TestOnlyLocalExternalIPs: each external IP's virtual server has only the local endpoint", async () => {
    const { host, s } = proxierOn([]);
    await firstSync(
      s,
      service("ns1", "svc1", {
        type: "NodePort",
        clusterIP: "10.20.30.41",
        externalIPs: ["50.60.70.81", "2012::51", "127.0.0.1"],
        externalTrafficPolicy: "Local",
        ports: port80(),
      }),
      slice80("svc1", [
        ["10.180.0.1", NODE],
        ["10.180.1.1", "other-node"],
      ]),
    );
    expect(keys(host)).toEqual(["TCP 10.20.30.41:80", "TCP 127.0.0.1:80", "TCP 50.60.70.81:80"]);
    // Upstream checks whichever external IP's server it meets first; each must hold.
    expect(realsOf(host, "50.60.70.81", 80)).toEqual([r80("10.180.0.1")]);
    expect(realsOf(host, "127.0.0.1", 80)).toEqual([r80("10.180.0.1")]);
  });

  test("TestAcceptIPVSTraffic: KUBE-SERVICES with a ClusterIP (with an external IP), a LoadBalancer and a NodePort Service", async () => {
    const { host, s } = proxierOn([]);
    const svcs: [string, string, string][] = [
      ["ClusterIP", "10.20.30.40", "svc1"],
      ["LoadBalancer", "10.20.30.41", "svc2"],
      ["NodePort", "10.20.30.42", "svc3"],
    ];
    for (const [type, clusterIP, name] of svcs) {
      s.cluster.apply(
        service(
          "ns1",
          name,
          {
            type,
            clusterIP,
            ports: port80({ nodePort: 80 }),
            ...(type === "ClusterIP" ? { externalIPs: ["5.6.7.8"] } : {}),
          },
          type === "LoadBalancer" ? { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } } : undefined,
        ),
      );
    }
    // Upstream's slices belong to a Service named "p80", which does not exist.
    s.cluster.apply(slice80("p80", [["10.180.0.3"]], "UDP"));
    await s.sync();
    expectChains(host, {
      "KUBE-SERVICES": [
        { jump: "RETURN", source: "127.0.0.0/8" },
        { jump: "KUBE-LOAD-BALANCER", set: "KUBE-LOAD-BALANCER" },
        { jump: "KUBE-MARK-MASQ", set: "KUBE-CLUSTER-IP" },
        { jump: "KUBE-MARK-MASQ", set: "KUBE-EXTERNAL-IP" },
        { jump: "ACCEPT", set: "KUBE-EXTERNAL-IP" },
        { jump: "ACCEPT", set: "KUBE-EXTERNAL-IP" },
        { jump: "KUBE-NODE-PORT" },
        { jump: "ACCEPT", set: "KUBE-CLUSTER-IP" },
        { jump: "ACCEPT", set: "KUBE-LOAD-BALANCER" },
      ],
    });
  });
});

describe("ipvs: upstream v1.37's load balancer tests", () => {
  const lb = (extra: Record<string, unknown>, ingress: Record<string, unknown> = { ip: "1.2.3.4" }) =>
    service(
      "ns1",
      "svc1",
      { type: "LoadBalancer", clusterIP: "10.20.30.41", ports: port80({ nodePort: 3001 }), ...extra },
      { loadBalancer: { ingress: [ingress] } },
    );

  test("TestLoadBalancer", async () => {
    const { host, s } = proxierOn([]);
    await firstSync(s, lb({}), slice80("svc1", [["10.180.0.1"]], "UDP"));
    expect(keys(host)).toEqual(["TCP 1.2.3.4:80", "TCP 10.20.30.41:80"]);
    expectSets(host, { "KUBE-LOAD-BALANCER": ["1.2.3.4,tcp:80"] });
    expectChains(host, {
      "KUBE-SERVICES": LB_SERVICES_CHAIN,
      "KUBE-LOAD-BALANCER": [{ jump: "KUBE-MARK-MASQ" }],
    });
  });

  test("TestLoadBalancerSourceRanges", async () => {
    const { host, s } = proxierOn([]);
    await firstSync(
      s,
      lb({ ports: port80(), loadBalancerSourceRanges: ["10.0.0.0/8"] }),
      slice80("svc1", [["10.180.0.1"]]),
    );
    expect(keys(host)).toEqual(["TCP 1.2.3.4:80", "TCP 10.20.30.41:80"]);
    expect(realsOf(host, "1.2.3.4", 80)).toEqual([r80("10.180.0.1")]);
    expectSets(host, {
      "KUBE-LOAD-BALANCER": ["1.2.3.4,tcp:80"],
      "KUBE-LOAD-BALANCER-FW": ["1.2.3.4,tcp:80"],
      "KUBE-LOAD-BALANCER-SOURCE-CIDR": ["1.2.3.4,tcp:80,10.0.0.0/8"],
    });
    expectChains(host, {
      "KUBE-SERVICES": LB_SERVICES_CHAIN,
      "KUBE-PROXY-FIREWALL": [{ jump: "KUBE-SOURCE-RANGES-FIREWALL", set: "KUBE-LOAD-BALANCER-FW" }],
      "KUBE-SOURCE-RANGES-FIREWALL": [
        { jump: "RETURN", set: "KUBE-LOAD-BALANCER-SOURCE-CIDR" },
        { jump: "DROP" },
      ],
    });
  });

  test("TestOnlyLocalLoadBalancing", async () => {
    const { host, s } = proxierOn([]);
    await firstSync(
      s,
      lb({ externalTrafficPolicy: "Local" }),
      slice80("svc1", [
        ["10.180.0.1", NODE],
        ["10.180.1.1", "other-node"],
      ]),
    );
    expect(keys(host)).toEqual(["TCP 1.2.3.4:80", "TCP 10.20.30.41:80"]);
    expect(realsOf(host, "1.2.3.4", 80)).toEqual([r80("10.180.0.1")]);
    expectSets(host, {
      "KUBE-LOAD-BALANCER": ["1.2.3.4,tcp:80"],
      "KUBE-LOAD-BALANCER-LOCAL": ["1.2.3.4,tcp:80"],
    });
    expectChains(host, {
      "KUBE-SERVICES": LB_SERVICES_CHAIN,
      "KUBE-LOAD-BALANCER": [{ jump: "RETURN", set: "KUBE-LOAD-BALANCER-LOCAL" }, { jump: "KUBE-MARK-MASQ" }],
    });
  });

  for (const [ipMode, count] of [
    ["Proxy", 1],
    ["VIP", 2],
    [undefined, 2],
  ] as const) {
    test(`TestLoadBalancerIngressRouteTypeProxy: ipMode ${ipMode ?? "nil"} -> ${count} virtual servers`, async () => {
      const { host, s } = proxierOn([]);
      await firstSync(
        s,
        lb({}, { ip: "1.2.3.4", ...(ipMode ? { ipMode } : {}) }),
        slice80("svc1", [["10.180.0.1"]]),
      );
      expect(keys(host)).toHaveLength(count);
    });
  }
});

describe("ipvs: upstream v1.37's NodePort policy tests", () => {
  // Both tests give the node eth0 100.101.102.103/24 and eth1 2001:db8::/64, and nodePortAddresses
  // 100.101.102.0/24.
  const node = () => proxierOn(["100.101.102.103", "2001:db8::"], "IPv4", ["100.101.102.0/24"]);
  const NODE_PORT_LOCAL: Rule[] = [
    { jump: "RETURN", set: "KUBE-NODE-PORT-LOCAL-TCP" },
    { jump: "KUBE-MARK-MASQ", set: "KUBE-NODE-PORT-TCP" },
    { jump: "ACCEPT", set: "KUBE-HEALTH-CHECK-NODE-PORT" },
  ];

  test("TestOnlyLocalNodePorts", async () => {
    const { host, s } = node();
    await firstSync(
      s,
      service("ns1", "svc1", {
        type: "NodePort",
        clusterIP: "10.20.30.41",
        ports: port80({ nodePort: 3001 }),
        externalTrafficPolicy: "Local",
      }),
      slice80("svc1", [
        ["10.180.0.1", NODE],
        ["10.180.1.1", "other-node"],
      ]),
    );
    expect(keys(host)).toEqual(["TCP 10.20.30.41:80", "TCP 100.101.102.103:3001"]);
    expect(realsOf(host, "100.101.102.103", 3001)).toEqual([r80("10.180.0.1")]);
    expectSets(host, { "KUBE-NODE-PORT-TCP": ["3001"], "KUBE-NODE-PORT-LOCAL-TCP": ["3001"] });
    expectChains(host, {
      "KUBE-SERVICES": [
        { jump: "RETURN", source: "127.0.0.0/8" },
        { jump: "KUBE-MARK-MASQ", set: "KUBE-CLUSTER-IP" },
        { jump: "KUBE-NODE-PORT" },
        { jump: "ACCEPT", set: "KUBE-CLUSTER-IP" },
      ],
      "KUBE-NODE-PORT": NODE_PORT_LOCAL,
    });
  });

  test("TestHealthCheckNodePort: only Local Services' health check node ports are in the set", async () => {
    const { host, s } = node();
    const svc = (name: string, hc: number, etp: string) =>
      service("ns1", name, {
        type: "LoadBalancer",
        clusterIP: "10.20.30.41",
        ports: port80({ nodePort: 3000 }),
        externalTrafficPolicy: etp,
        healthCheckNodePort: hc,
      });
    await firstSync(
      s,
      svc("valid-svc1", 30000, "Local"),
      svc("valid-svc2", 30001, "Local"),
      svc("invalid-svc3", 30002, "Cluster"),
    );
    expectSets(host, { "KUBE-HEALTH-CHECK-NODE-PORT": ["30000", "30001"] });
    expectChains(host, { "KUBE-NODE-PORT": NODE_PORT_LOCAL });
  });
});

describe("ipvs: upstream v1.37's TestSessionAffinity", () => {
  test("ClientIP affinity: every virtual server is persistent for the default 10800 s", async () => {
    const { host, s } = proxierOn(["100.101.102.103"]);
    await firstSync(
      s,
      service("ns1", "svc1", {
        type: "NodePort",
        clusterIP: "10.20.30.41",
        externalIPs: ["50.60.70.81"],
        sessionAffinity: "ClientIP",
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } },
        ports: port80({ nodePort: 3001 }),
      }),
    );
    const table = ipvsTable(host);
    expect(table.map((v) => `${v.proto} ${v.ip}:${v.port}`)).toEqual([
      "TCP 10.20.30.41:80",
      "TCP 100.101.102.103:3001",
      "TCP 50.60.70.81:80",
    ]);
    for (const v of table)
      expect({ vs: `${v.ip}:${v.port}`, timeout: v.timeout }).toEqual({
        vs: `${v.ip}:${v.port}`,
        timeout: 10800,
      });
  });
});

describe("ipvs: upstream v1.37's TestMultiPortServiceBindAddr", () => {
  test("a multi-port Service binds its cluster IP once, through port changes, and unbinds it when deleted", async () => {
    const { host, s } = proxierOn([]);
    const ports = (...ps: [string, string, number][]) =>
      ps.map(([name, protocol, port]) => ({ name, protocol, port }));
    const v = (p: ReturnType<typeof ports>) => service("ns1", "svc1", { clusterIP: "172.16.55.4", ports: p });
    const service1 = v(ports(["port1", "TCP", 1234], ["port2", "TCP", 1235]));
    const service2 = v(ports(["port1", "TCP", 1234]));
    const service3 = v(ports(["port1", "TCP", 1234], ["port2", "TCP", 1235], ["port3", "UDP", 1236]));
    for (const step of [service1, service2, service3]) {
      await firstSync(s, step);
      expect(boundAddresses(host)).toEqual(["172.16.55.4"]);
    }
    s.cluster.remove(service3);
    await s.sync();
    expect(boundAddresses(host)).toEqual([]);
  });
});
