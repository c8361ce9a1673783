// Upstream v1.37's packet-flow expectations (runPacketFlowTests in kubernetes/kubernetes
// pkg/proxy/iptables/proxier_test.go @ 531be81208e2274ef42e72525a26610a9622bcdf), transcribed:
// each upstream test's Services and EndpointSlices go through our proxier on upstream's test
// node (upstream-proxier.ts), and every row's packet is traced through the kernel state our
// sync leaves (tracer.ts). A row's output is the DNAT targets reachable (in rule order),
// "DROP", "REJECT", "ACCEPT", or "" when kube-proxy's rules leave the packet alone; masq is
// whether it leaves masqueraded. Row names, addresses and expectations are upstream's.

import { describe, expect, test } from "bun:test";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { type EpOpts, endpointSlice, ep, NODE, service } from "./harness.ts";
import { upstreamOverallSetup } from "./upstream-overall.ts";
import {
  TEST_EXTERNAL_CLIENT as EXT,
  TEST_EXTERNAL_CLIENT_BLOCKED as EXT_BLOCKED,
  type FlowRow,
  flowMismatches,
  TEST_NODE_IP as NODE_IP,
  TEST_NODE_IP_ALT as NODE_IP_ALT,
  type UpstreamProxierOptions,
  upstreamProxier,
} from "./upstream-proxier.ts";

/** Upstream leaves NodeName unset (or names another node): not this node. */
const REMOTE = "remote";
const POD = "10.0.0.2";

type Port = { name: string; port: number; protocol: string };
const tcp = (name: string, port: number): Port => ({ name, port, protocol: "TCP" });

function slice(
  ns: string,
  name: string,
  eps: EndpointSliceObject["endpoints"],
  ports: Port[],
  family = "IPv4",
) {
  return endpointSlice(ns, name, eps ?? [], { ports, addressType: family, suffix: "1" });
}

/** Endpoint on `node` (default remote) with upstream's conditions. */
const at = (ip: string, node: string = REMOTE, o: EpOpts = {}) => ep(ip, { ...o, node });

async function check(
  objects: (ServiceObject | EndpointSliceObject)[],
  rows: FlowRow[],
  opts: UpstreamProxierOptions = {},
): Promise<void> {
  const s = upstreamProxier(opts);
  s.cluster.apply(...objects);
  await s.sync();
  expect(await flowMismatches(s, rows)).toEqual([]);
}

describe("upstream v1.37 packet flows: TestTracePacket's rows on TestOverallIPTablesRules' sync", () => {
  test("7 rows", async () => {
    const s = upstreamOverallSetup();
    await s.sync();
    expect(
      await flowMismatches(s, [
        { name: "no match", source: POD, destination: "10.0.0.3", port: 80, output: "" },
        {
          name: "single endpoint",
          source: POD,
          destination: "172.30.0.41",
          port: 80,
          output: "10.180.0.1:80",
        },
        {
          name: "multiple endpoints",
          source: POD,
          destination: "172.30.0.44",
          port: 80,
          output: "10.180.0.4:80, 10.180.0.5:80",
        },
        {
          name: "LOCAL, KUBE-MARK-MASQ",
          source: NODE_IP,
          destination: "192.168.99.22",
          port: 80,
          output: "10.180.0.2:80",
          masq: true,
        },
        { name: "DROP", source: EXT, destination: "192.168.99.22", port: 80, output: "DROP" },
        {
          name: "ACCEPT (NodePortHealthCheck)",
          source: NODE_IP,
          destination: NODE_IP,
          port: 30000,
          output: "ACCEPT",
        },
        { name: "REJECT", source: POD, destination: "172.30.0.46", port: 80, output: "REJECT" },
      ]),
    ).toEqual([]);
  });
});

describe("upstream v1.37 packet flows: TestNoEndpointsReject", () => {
  test("6 rows", async () => {
    const svcIP = "172.30.0.41";
    const extIP = "192.168.99.11";
    const lbIP = "1.2.3.4";
    await check(
      [
        service(
          "ns1",
          "svc1",
          {
            type: "LoadBalancer",
            clusterIP: svcIP,
            externalIPs: [extIP],
            ports: [{ ...tcp("p80", 80), nodePort: 3001 }],
          },
          { loadBalancer: { ingress: [{ ip: lbIP }] } },
        ),
      ],
      [
        {
          name: "pod to cluster IP with no endpoints",
          source: POD,
          destination: svcIP,
          port: 80,
          output: "REJECT",
        },
        {
          name: "external to external IP with no endpoints",
          source: EXT,
          destination: extIP,
          port: 80,
          output: "REJECT",
        },
        {
          name: "pod to NodePort with no endpoints",
          source: POD,
          destination: NODE_IP,
          port: 3001,
          output: "REJECT",
        },
        {
          name: "external to NodePort with no endpoints",
          source: EXT,
          destination: NODE_IP,
          port: 3001,
          output: "REJECT",
        },
        {
          name: "pod to LoadBalancer IP with no endpoints",
          source: POD,
          destination: lbIP,
          port: 80,
          output: "REJECT",
        },
        {
          name: "external to LoadBalancer IP with no endpoints",
          source: EXT,
          destination: lbIP,
          port: 80,
          output: "REJECT",
        },
      ],
    );
  });
});

describe("upstream v1.37 packet flows: TestClusterIPGeneral", () => {
  test("9 rows", async () => {
    const src = "10.180.0.2";
    await check(
      [
        service("ns1", "svc1", { clusterIP: "172.30.0.41", ports: [tcp("http", 80)] }),
        service("ns2", "svc2", {
          clusterIP: "172.30.0.42",
          ports: [
            tcp("http", 80),
            { ...tcp("https", 443), targetPort: 8443 },
            { name: "dns-udp", port: 53, protocol: "UDP" },
            { ...tcp("dns-tcp", 53), targetPort: 5353 },
            { name: "dns-sctp", port: 53, protocol: "SCTP" },
          ],
        }),
        slice("ns1", "svc1", [at("10.180.0.1", NODE)], [tcp("http", 80)]),
        slice(
          "ns2",
          "svc2",
          [at("10.180.0.1", NODE), at("10.180.2.1", "node2")],
          [
            tcp("http", 80),
            tcp("https", 8443),
            { name: "dns-udp", port: 53, protocol: "UDP" },
            tcp("dns-tcp", 5353),
            { name: "dns-sctp", port: 53, protocol: "SCTP" },
          ],
        ),
      ],
      [
        {
          name: "simple clusterIP",
          source: src,
          destination: "172.30.0.41",
          port: 80,
          output: "10.180.0.1:80",
        },
        {
          name: "hairpin to cluster IP",
          source: "10.180.0.1",
          destination: "172.30.0.41",
          port: 80,
          output: "10.180.0.1:80",
          masq: true,
        },
        {
          name: "clusterIP with multiple endpoints",
          source: src,
          destination: "172.30.0.42",
          port: 80,
          output: "10.180.0.1:80, 10.180.2.1:80",
        },
        {
          name: "clusterIP with TargetPort",
          source: src,
          destination: "172.30.0.42",
          port: 443,
          output: "10.180.0.1:8443, 10.180.2.1:8443",
        },
        {
          name: "clusterIP with TCP, UDP, and SCTP on same port (TCP)",
          source: src,
          protocol: "tcp",
          destination: "172.30.0.42",
          port: 53,
          output: "10.180.0.1:5353, 10.180.2.1:5353",
        },
        {
          name: "clusterIP with TCP, UDP, and SCTP on same port (UDP)",
          source: src,
          protocol: "udp",
          destination: "172.30.0.42",
          port: 53,
          output: "10.180.0.1:53, 10.180.2.1:53",
        },
        {
          name: "clusterIP with TCP, UDP, and SCTP on same port (SCTP)",
          source: src,
          protocol: "sctp",
          destination: "172.30.0.42",
          port: 53,
          output: "10.180.0.1:53, 10.180.2.1:53",
        },
        {
          name: "TCP-only port does not match UDP traffic",
          source: src,
          protocol: "udp",
          destination: "172.30.0.42",
          port: 80,
          output: "",
        },
        {
          name: "svc1 does not accept svc2's ports",
          source: src,
          destination: "172.30.0.41",
          port: 443,
          output: "",
        },
      ],
    );
  });
});

describe("upstream v1.37 packet flows: TestLoadBalancer", () => {
  test("13 rows", async () => {
    const svcIP = "172.30.0.41";
    const lb1 = "1.2.3.4";
    const lb2 = "5.6.7.8";
    const out = "10.180.0.1:80";
    await check(
      [
        service(
          "ns1",
          "svc1",
          {
            type: "LoadBalancer",
            clusterIP: svcIP,
            ports: [{ ...tcp("p80", 80), nodePort: 3001 }],
            loadBalancerSourceRanges: ["192.168.0.0/24", " 203.0.113.0/25"],
          },
          { loadBalancer: { ingress: [{ ip: lb1 }, { ip: lb2 }] } },
        ),
        slice("ns1", "svc1", [at("10.180.0.1")], [tcp("p80", 80)]),
      ],
      [
        { name: "pod to cluster IP", source: POD, destination: svcIP, port: 80, output: out },
        {
          name: "external to nodePort",
          source: EXT,
          destination: NODE_IP,
          port: 3001,
          output: out,
          masq: true,
        },
        {
          name: "nodePort bypasses LoadBalancerSourceRanges",
          source: EXT_BLOCKED,
          destination: NODE_IP,
          port: 3001,
          output: out,
          masq: true,
        },
        {
          name: "accepted external to LB1",
          source: EXT,
          destination: lb1,
          port: 80,
          output: out,
          masq: true,
        },
        {
          name: "accepted external to LB2",
          source: EXT,
          destination: lb2,
          port: 80,
          output: out,
          masq: true,
        },
        { name: "blocked external to LB1", source: EXT_BLOCKED, destination: lb1, port: 80, output: "DROP" },
        { name: "blocked external to LB2", source: EXT_BLOCKED, destination: lb2, port: 80, output: "DROP" },
        {
          name: "pod to LB1 (blocked by LoadBalancerSourceRanges)",
          source: POD,
          destination: lb1,
          port: 80,
          output: "DROP",
        },
        {
          name: "pod to LB2 (blocked by LoadBalancerSourceRanges)",
          source: POD,
          destination: lb2,
          port: 80,
          output: "DROP",
        },
        {
          name: "node to LB1 (allowed by LoadBalancerSourceRanges)",
          source: NODE_IP,
          destination: lb1,
          port: 80,
          output: out,
          masq: true,
        },
        {
          name: "node to LB2 (allowed by LoadBalancerSourceRanges)",
          source: NODE_IP,
          destination: lb2,
          port: 80,
          output: out,
          masq: true,
        },
        {
          name: "same node to LB1, SNATted to LB1 (implicitly allowed)",
          source: lb1,
          destination: lb1,
          port: 80,
          output: out,
          masq: true,
        },
        {
          name: "same node to LB2, SNATted to LB2 (implicitly allowed)",
          source: lb2,
          destination: lb2,
          port: 80,
          output: out,
          masq: true,
        },
      ],
    );
  });
});

describe("upstream v1.37 packet flows: TestNodePorts", () => {
  const cases: {
    name: string;
    family: "IPv4" | "IPv6";
    localhostNodePorts: boolean;
    nodePortAddresses?: string[];
    allowAltNodeIP: boolean;
  }[] = [
    {
      name: "ipv4, localhost-nodeports enabled",
      family: "IPv4",
      localhostNodePorts: true,
      allowAltNodeIP: true,
    },
    {
      name: "ipv4, localhost-nodeports disabled",
      family: "IPv4",
      localhostNodePorts: false,
      allowAltNodeIP: true,
    },
    {
      name: "ipv4, localhost-nodeports disabled, localhost in nodeport-addresses",
      family: "IPv4",
      localhostNodePorts: false,
      nodePortAddresses: ["192.168.0.0/24", "127.0.0.1/32"],
      allowAltNodeIP: false,
    },
    {
      name: "ipv4, localhost-nodeports enabled, multiple nodeport-addresses",
      family: "IPv4",
      localhostNodePorts: false,
      nodePortAddresses: ["192.168.0.0/24", "192.168.1.0/24", "2001:db8::/64"],
      allowAltNodeIP: true,
    },
    {
      name: "ipv6, localhost-nodeports enabled",
      family: "IPv6",
      localhostNodePorts: true,
      allowAltNodeIP: true,
    },
    {
      name: "ipv6, localhost-nodeports disabled",
      family: "IPv6",
      localhostNodePorts: false,
      allowAltNodeIP: true,
    },
    {
      name: "ipv6, localhost-nodeports disabled, multiple nodeport-addresses",
      family: "IPv6",
      localhostNodePorts: false,
      nodePortAddresses: ["192.168.0.0/24", "192.168.1.0/24", "2001:db8::/64"],
      allowAltNodeIP: false,
    },
  ];
  for (const tc of cases) {
    test(`${tc.name}: 5 rows`, async () => {
      const v4 = tc.family === "IPv4";
      const svcIP = v4 ? "172.30.0.41" : "fd00:172:30::41";
      const ep1 = v4 ? "10.180.0.1" : "fd00:10:180::1";
      const ep2 = v4 ? "10.180.2.1" : "fd00:10:180::2:1";
      const pod = v4 ? POD : "fd00:10::2";
      const ext = v4 ? EXT : "2600:5200::1";
      const nodeIP = v4 ? NODE_IP : "2001:db8::1";
      const altIP = v4 ? NODE_IP_ALT : "2001:db8:1::2";
      const lo = v4 ? "127.0.0.1" : "::1";
      const output = v4 ? `${ep1}:80, ${ep2}:80` : `[${ep1}]:80, [${ep2}]:80`;
      const rows: FlowRow[] = [
        { name: "pod to cluster IP", source: pod, destination: svcIP, port: 80, output },
        { name: "external to nodePort", source: ext, destination: nodeIP, port: 3001, output, masq: true },
        { name: "node to nodePort", source: nodeIP, destination: nodeIP, port: 3001, output, masq: true },
        v4 && tc.localhostNodePorts
          ? {
              name: "localhost to nodePort gets masqueraded",
              source: lo,
              destination: lo,
              port: 3001,
              output,
              masq: true,
            }
          : { name: "localhost to nodePort is ignored", source: lo, destination: lo, port: 3001, output: "" },
        tc.allowAltNodeIP
          ? {
              name: "external to nodePort on secondary IP",
              source: ext,
              destination: altIP,
              port: 3001,
              output,
              masq: true,
            }
          : {
              name: "secondary nodeIP ignores NodePorts",
              source: ext,
              destination: altIP,
              port: 3001,
              output: "",
            },
      ];
      await check(
        [
          service("ns1", "svc1", {
            type: "NodePort",
            clusterIP: svcIP,
            ports: [{ ...tcp("p80", 80), nodePort: 3001 }],
          }),
          slice("ns1", "svc1", [at(ep1), at(ep2, NODE)], [tcp("p80", 80)], tc.family),
        ],
        rows,
        {
          family: tc.family,
          localhostNodePorts: tc.localhostNodePorts,
          ...(tc.nodePortAddresses ? { nodePortAddresses: tc.nodePortAddresses } : {}),
        },
      );
    });
  }
});

describe("upstream v1.37 packet flows: TestHealthCheckNodePort", () => {
  test("2 rows (before and after the Service is deleted)", async () => {
    const s = upstreamProxier({ nodePortAddresses: ["127.0.0.0/8"] });
    const svc = service("ns1", "svc1", {
      type: "LoadBalancer",
      clusterIP: "172.30.0.42",
      ports: [{ ...tcp("p80", 80), nodePort: 3001 }],
      healthCheckNodePort: 30000,
      externalTrafficPolicy: "Local",
    });
    s.cluster.apply(svc);
    await s.sync();
    const row = { source: "1.2.3.4", destination: NODE_IP, port: 30000 };
    expect(
      await flowMismatches(s, [{ name: "firewall accepts HealthCheckNodePort", ...row, output: "ACCEPT" }]),
    ).toEqual([]);
    s.cluster.remove(svc);
    await s.sync();
    expect(
      await flowMismatches(s, [{ name: "HealthCheckNodePort no longer has any rule", ...row, output: "" }]),
    ).toEqual([]);
  });
});

/** The LoadBalancer Service of TestExternalTrafficPolicyLocal / ...Cluster. */
function policyObjects(policy: "Local" | "Cluster") {
  return [
    service(
      "ns1",
      "svc1",
      {
        type: "LoadBalancer",
        externalTrafficPolicy: policy,
        clusterIP: "172.30.0.41",
        externalIPs: ["192.168.99.11"],
        ports: [{ ...tcp("p80", 80), nodePort: 3001, targetPort: 80 }],
        ...(policy === "Local" ? { healthCheckNodePort: 30000 } : {}),
      },
      { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } },
    ),
    slice("ns1", "svc1", [at("10.180.0.1"), at("10.180.2.1", NODE)], [tcp("p80", 80)]),
  ];
}

describe("upstream v1.37 packet flows: TestExternalTrafficPolicyLocal", () => {
  test("7 rows", async () => {
    const both = "10.180.0.1:80, 10.180.2.1:80";
    const local = "10.180.2.1:80";
    await check(policyObjects("Local"), [
      {
        name: "pod to cluster IP hits both endpoints, unmasqueraded",
        source: POD,
        destination: "172.30.0.41",
        port: 80,
        output: both,
      },
      {
        name: "pod to external IP hits both endpoints, unmasqueraded",
        source: POD,
        destination: "192.168.99.11",
        port: 80,
        output: both,
      },
      {
        name: "external to external IP hits only local endpoint, unmasqueraded",
        source: EXT,
        destination: "192.168.99.11",
        port: 80,
        output: local,
      },
      {
        name: "pod to LB IP hits only both endpoints, unmasqueraded",
        source: POD,
        destination: "1.2.3.4",
        port: 80,
        output: both,
      },
      {
        name: "external to LB IP hits only local endpoint, unmasqueraded",
        source: EXT,
        destination: "1.2.3.4",
        port: 80,
        output: local,
      },
      {
        name: "pod to NodePort hits both endpoints, unmasqueraded",
        source: POD,
        destination: NODE_IP,
        port: 3001,
        output: both,
      },
      {
        name: "external to NodePort hits only local endpoint, unmasqueraded",
        source: EXT,
        destination: NODE_IP,
        port: 3001,
        output: local,
      },
    ]);
  });
});

describe("upstream v1.37 packet flows: TestExternalTrafficPolicyCluster", () => {
  test("7 rows", async () => {
    const both = "10.180.0.1:80, 10.180.2.1:80";
    await check(policyObjects("Cluster"), [
      {
        name: "pod to cluster IP hits both endpoints, unmasqueraded",
        source: POD,
        destination: "172.30.0.41",
        port: 80,
        output: both,
      },
      {
        name: "pod to external IP hits both endpoints, masqueraded",
        source: POD,
        destination: "192.168.99.11",
        port: 80,
        output: both,
        masq: true,
      },
      {
        name: "external to external IP hits both endpoints, masqueraded",
        source: EXT,
        destination: "192.168.99.11",
        port: 80,
        output: both,
        masq: true,
      },
      {
        name: "pod to LB IP hits both endpoints, masqueraded",
        source: POD,
        destination: "1.2.3.4",
        port: 80,
        output: both,
        masq: true,
      },
      {
        name: "external to LB IP hits both endpoints, masqueraded",
        source: EXT,
        destination: "1.2.3.4",
        port: 80,
        output: both,
        masq: true,
      },
      {
        name: "pod to NodePort hits both endpoints, masqueraded",
        source: POD,
        destination: NODE_IP,
        port: 3001,
        output: both,
        masq: true,
      },
      {
        name: "external to NodePort hits both endpoints, masqueraded",
        source: EXT,
        destination: NODE_IP,
        port: 3001,
        output: both,
        masq: true,
      },
    ]);
  });
});

/** Sync with `slice`, trace `rows`; delete the slice, sync, trace `afterDelete`. */
async function checkWithDelete(
  svc: ServiceObject,
  eps: EndpointSliceObject,
  rows: FlowRow[],
  afterDelete: FlowRow[],
): Promise<void> {
  const s = upstreamProxier();
  s.cluster.apply(svc, eps);
  await s.sync();
  expect(await flowMismatches(s, rows)).toEqual([]);
  s.cluster.remove(eps);
  await s.sync();
  expect(await flowMismatches(s, afterDelete)).toEqual([]);
}

const UNNAMED = tcp("", 80);
const CIP = "172.30.1.1";

describe("upstream v1.37 packet flows: TestInternalTrafficPolicy", () => {
  const cases: {
    name: string;
    itp?: "Cluster" | "Local";
    eps: [string, string][];
    row: Omit<FlowRow, "source" | "destination" | "port">;
  }[] = [
    {
      name: "internalTrafficPolicy is cluster",
      itp: "Cluster",
      eps: [
        ["10.0.1.1", NODE],
        ["10.0.1.2", "node1"],
        ["10.0.1.3", "node2"],
      ],
      row: { name: "pod to ClusterIP hits all endpoints", output: "10.0.1.1:80, 10.0.1.2:80, 10.0.1.3:80" },
    },
    {
      name: "internalTrafficPolicy is local and there is one local endpoint",
      itp: "Local",
      eps: [
        ["10.0.1.1", NODE],
        ["10.0.1.2", "node1"],
        ["10.0.1.3", "node2"],
      ],
      row: { name: "pod to ClusterIP hits only local endpoint", output: "10.0.1.1:80" },
    },
    {
      name: "internalTrafficPolicy is local and there are multiple local endpoints",
      itp: "Local",
      eps: [
        ["10.0.1.1", NODE],
        ["10.0.1.2", NODE],
        ["10.0.1.3", "node2"],
      ],
      row: { name: "pod to ClusterIP hits all local endpoints", output: "10.0.1.1:80, 10.0.1.2:80" },
    },
    {
      name: "internalTrafficPolicy is local and there are no local endpoints",
      itp: "Local",
      eps: [
        ["10.0.1.1", "node0"],
        ["10.0.1.2", "node1"],
        ["10.0.1.3", "node2"],
      ],
      row: { name: "no endpoints", output: "DROP" },
    },
  ];
  for (const tc of cases) {
    test(`${tc.name}: 2 rows`, async () => {
      const pkt = { source: POD, destination: CIP, port: 80 };
      await checkWithDelete(
        service("ns1", "svc1", {
          clusterIP: CIP,
          selector: { foo: "bar" },
          ports: [UNNAMED],
          ...(tc.itp ? { internalTrafficPolicy: tc.itp } : {}),
        }),
        slice(
          "ns1",
          "svc1",
          tc.eps.map(([ip, node]) => at(ip, node)),
          [UNNAMED],
        ),
        [{ ...pkt, ...tc.row }],
        [{ name: "endpoints deleted", ...pkt, output: "REJECT" }],
      );
    });
  }
});

/** The Service of the two terminating-endpoints tests. */
function terminatingService(policy: "Local" | "Cluster"): ServiceObject {
  return service(
    "ns1",
    "svc1",
    {
      type: "LoadBalancer",
      clusterIP: CIP,
      externalTrafficPolicy: policy,
      ports: [{ ...UNNAMED, targetPort: 80 }],
      healthCheckNodePort: 30000,
    },
    { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } },
  );
}

const READY: EpOpts = { ready: true, serving: true, terminating: false };
const TERMINATING_SERVING: EpOpts = { ready: false, serving: true, terminating: true };
const TERMINATING: EpOpts = { ready: false, serving: false, terminating: true };

/** Rows of one terminating-endpoints case: pod to the ClusterIP, external client to the LB IP. */
function podAndExternal(
  podOut: string,
  extOut: string,
  extMasq: boolean,
  names = ["pod to clusterIP", "external to LB"],
) {
  return [
    { name: names[0]!, source: POD, destination: CIP, port: 80, output: podOut },
    { name: names[1]!, source: EXT, destination: "1.2.3.4", port: 80, output: extOut, masq: extMasq },
  ];
}

const AFTER_DELETE = podAndExternal("REJECT", "REJECT", false, [
  "pod to clusterIP after endpoints deleted",
  "external to LB after endpoints deleted",
]);

describe("upstream v1.37 packet flows: TestTerminatingEndpointsTrafficPolicyLocal", () => {
  const cases: { name: string; eps: ReturnType<typeof at>[]; rows: FlowRow[] }[] = [
    {
      name: "ready endpoints exist",
      eps: [
        at("10.0.1.1", NODE, READY),
        at("10.0.1.2", NODE, READY),
        at("10.0.1.3", NODE, TERMINATING_SERVING),
        at("10.0.1.4", NODE, TERMINATING),
        at("10.0.1.5", "node-1", READY),
      ],
      rows: podAndExternal("10.0.1.1:80, 10.0.1.2:80, 10.0.1.5:80", "10.0.1.1:80, 10.0.1.2:80", false),
    },
    {
      name: "only terminating endpoints exist",
      eps: [
        at("10.0.1.2", NODE, TERMINATING_SERVING),
        at("10.0.1.3", NODE, TERMINATING_SERVING),
        at("10.0.1.4", NODE, TERMINATING),
        at("10.0.1.5", "node-1", READY),
      ],
      rows: podAndExternal("10.0.1.5:80", "10.0.1.2:80, 10.0.1.3:80", false),
    },
    {
      name: "terminating endpoints on remote node",
      eps: [at("10.0.1.5", "node-1", TERMINATING_SERVING)],
      rows: podAndExternal("10.0.1.5:80", "DROP", false, [
        "pod to clusterIP",
        "external to LB, no locally-usable endpoints",
      ]),
    },
    {
      name: "no usable endpoints on any node",
      eps: [at("10.0.1.5", NODE, TERMINATING), at("10.0.1.5", "node-1", TERMINATING)],
      rows: podAndExternal("REJECT", "REJECT", false, [
        "pod to clusterIP, no usable endpoints",
        "external to LB, no usable endpoints",
      ]),
    },
  ];
  for (const tc of cases) {
    test(`${tc.name}: 4 rows`, async () => {
      await checkWithDelete(
        terminatingService("Local"),
        slice("ns1", "svc1", tc.eps, [UNNAMED]),
        tc.rows,
        AFTER_DELETE,
      );
    });
  }
});

describe("upstream v1.37 packet flows: TestTerminatingEndpointsTrafficPolicyCluster", () => {
  const cases: { name: string; eps: ReturnType<typeof at>[]; rows: FlowRow[] }[] = [
    {
      name: "ready endpoints exist",
      eps: [
        at("10.0.1.1", NODE, READY),
        at("10.0.1.2", NODE, READY),
        at("10.0.1.3", "another-node", TERMINATING_SERVING),
        at("10.0.1.4", "another-node", TERMINATING),
        at("10.0.1.5", "another-node", READY),
      ],
      rows: podAndExternal(
        "10.0.1.1:80, 10.0.1.2:80, 10.0.1.5:80",
        "10.0.1.1:80, 10.0.1.2:80, 10.0.1.5:80",
        true,
      ),
    },
    {
      name: "only terminating endpoints exist",
      eps: [
        at("10.0.1.2", NODE, TERMINATING_SERVING),
        at("10.0.1.3", NODE, TERMINATING_SERVING),
        at("10.0.1.4", "another-node", TERMINATING),
        at("10.0.1.5", "another-node", TERMINATING_SERVING),
      ],
      rows: podAndExternal(
        "10.0.1.2:80, 10.0.1.3:80, 10.0.1.5:80",
        "10.0.1.2:80, 10.0.1.3:80, 10.0.1.5:80",
        true,
      ),
    },
    {
      name: "terminating endpoints on remote node",
      eps: [at("10.0.1.5", "node-1", TERMINATING_SERVING)],
      rows: podAndExternal("10.0.1.5:80", "10.0.1.5:80", true),
    },
    {
      name: "no usable endpoints on any node",
      eps: [at("10.0.1.5", NODE, TERMINATING), at("10.0.1.5", "node-1", TERMINATING)],
      rows: podAndExternal("REJECT", "REJECT", false),
    },
  ];
  for (const tc of cases) {
    test(`${tc.name}: 4 rows`, async () => {
      await checkWithDelete(
        terminatingService("Cluster"),
        slice("ns1", "svc1", tc.eps, [UNNAMED]),
        tc.rows,
        AFTER_DELETE,
      );
    });
  }
});

describe("upstream v1.37 packet flows: TestInternalExternalMasquerade", () => {
  const objects = () => {
    const lb = (ns: string, name: string, clusterIP: string, nodePort: number, lbIP: string, extra: object) =>
      service(
        ns,
        name,
        {
          type: "LoadBalancer",
          clusterIP,
          ports: [{ ...tcp("p80", 80), nodePort }],
          healthCheckNodePort: nodePort + 27000,
          ...extra,
        },
        { loadBalancer: { ingress: [{ ip: lbIP }] } },
      );
    return [
      lb("ns1", "svc1", "172.30.0.41", 3001, "1.2.3.4", {}),
      lb("ns2", "svc2", "172.30.0.42", 3002, "5.6.7.8", { externalTrafficPolicy: "Local" }),
      lb("ns3", "svc3", "172.30.0.43", 3003, "9.10.11.12", { internalTrafficPolicy: "Local" }),
      slice("ns1", "svc1", [at("10.180.0.1", NODE), at("10.180.1.1", REMOTE)], [tcp("p80", 80)]),
      slice("ns2", "svc2", [at("10.180.0.2", NODE), at("10.180.1.2", REMOTE)], [tcp("p80", 80)]),
      slice("ns3", "svc3", [at("10.180.0.3", NODE), at("10.180.1.3", REMOTE)], [tcp("p80", 80)]),
    ];
  };
  const all1 = "10.180.0.1:80, 10.180.1.1:80";
  const all2 = "10.180.0.2:80, 10.180.1.2:80";
  const all3 = "10.180.0.3:80, 10.180.1.3:80";
  const LO = "127.0.0.1";
  // The base expectations (working local detector, no masqueradeAll), upstream's order.
  const base: FlowRow[] = [
    {
      name: "pod to ClusterIP",
      source: POD,
      destination: "172.30.0.41",
      port: 80,
      output: all1,
      masq: false,
    },
    { name: "pod to NodePort", source: POD, destination: NODE_IP, port: 3001, output: all1, masq: true },
    { name: "pod to LB", source: POD, destination: "1.2.3.4", port: 80, output: all1, masq: true },
    {
      name: "node to ClusterIP",
      source: NODE_IP,
      destination: "172.30.0.41",
      port: 80,
      output: all1,
      masq: true,
    },
    { name: "node to NodePort", source: NODE_IP, destination: NODE_IP, port: 3001, output: all1, masq: true },
    { name: "localhost to NodePort", source: LO, destination: LO, port: 3001, output: all1, masq: true },
    { name: "node to LB", source: NODE_IP, destination: "1.2.3.4", port: 80, output: all1, masq: true },
    {
      name: "external to ClusterIP",
      source: EXT,
      destination: "172.30.0.41",
      port: 80,
      output: all1,
      masq: true,
    },
    { name: "external to NodePort", source: EXT, destination: NODE_IP, port: 3001, output: all1, masq: true },
    { name: "external to LB", source: EXT, destination: "1.2.3.4", port: 80, output: all1, masq: true },
    {
      name: "pod to ClusterIP with eTP:Local",
      source: POD,
      destination: "172.30.0.42",
      port: 80,
      output: all2,
      masq: false,
    },
    {
      name: "pod to NodePort with eTP:Local",
      source: POD,
      destination: NODE_IP,
      port: 3002,
      output: all2,
      masq: false,
    },
    {
      name: "pod to LB with eTP:Local",
      source: POD,
      destination: "5.6.7.8",
      port: 80,
      output: all2,
      masq: false,
    },
    {
      name: "node to ClusterIP with eTP:Local",
      source: NODE_IP,
      destination: "172.30.0.42",
      port: 80,
      output: all2,
      masq: true,
    },
    // Upstream's row sends this one to svc1's NodePort (3001), so svc1's endpoints.
    {
      name: "node to NodePort with eTP:Local",
      source: NODE_IP,
      destination: NODE_IP,
      port: 3001,
      output: all1,
      masq: true,
    },
    {
      name: "localhost to NodePort with eTP:Local",
      source: LO,
      destination: LO,
      port: 3002,
      output: all2,
      masq: true,
    },
    {
      name: "node to LB with eTP:Local",
      source: NODE_IP,
      destination: "5.6.7.8",
      port: 80,
      output: all2,
      masq: true,
    },
    {
      name: "external to ClusterIP with eTP:Local",
      source: EXT,
      destination: "172.30.0.42",
      port: 80,
      output: all2,
      masq: true,
    },
    {
      name: "external to NodePort with eTP:Local",
      source: EXT,
      destination: NODE_IP,
      port: 3002,
      output: "10.180.0.2:80",
      masq: false,
    },
    {
      name: "external to LB with eTP:Local",
      source: EXT,
      destination: "5.6.7.8",
      port: 80,
      output: "10.180.0.2:80",
      masq: false,
    },
    {
      name: "pod to ClusterIP with iTP:Local",
      source: POD,
      destination: "172.30.0.43",
      port: 80,
      output: "10.180.0.3:80",
      masq: false,
    },
    {
      name: "pod to NodePort with iTP:Local",
      source: POD,
      destination: NODE_IP,
      port: 3003,
      output: all3,
      masq: true,
    },
    {
      name: "pod to LB with iTP:Local",
      source: POD,
      destination: "9.10.11.12",
      port: 80,
      output: all3,
      masq: true,
    },
    {
      name: "node to ClusterIP with iTP:Local",
      source: NODE_IP,
      destination: "172.30.0.43",
      port: 80,
      output: "10.180.0.3:80",
      masq: true,
    },
    {
      name: "node to NodePort with iTP:Local",
      source: NODE_IP,
      destination: NODE_IP,
      port: 3003,
      output: all3,
      masq: true,
    },
    {
      name: "localhost to NodePort with iTP:Local",
      source: LO,
      destination: LO,
      port: 3003,
      output: all3,
      masq: true,
    },
    {
      name: "node to LB with iTP:Local",
      source: NODE_IP,
      destination: "9.10.11.12",
      port: 80,
      output: all3,
      masq: true,
    },
    {
      name: "external to ClusterIP with iTP:Local",
      source: EXT,
      destination: "172.30.0.43",
      port: 80,
      output: "10.180.0.3:80",
      masq: true,
    },
    {
      name: "external to NodePort with iTP:Local",
      source: EXT,
      destination: NODE_IP,
      port: 3003,
      output: all3,
      masq: true,
    },
    {
      name: "external to LB with iTP:Local",
      source: EXT,
      destination: "9.10.11.12",
      port: 80,
      output: all3,
      masq: true,
    },
  ];
  type Override = { output?: string; masq?: boolean };
  const noDetector: Record<string, Override> = {
    "node to ClusterIP": { masq: false },
    "node to ClusterIP with eTP:Local": { masq: false },
    "node to ClusterIP with iTP:Local": { masq: false },
    "external to ClusterIP": { masq: false },
    "external to ClusterIP with eTP:Local": { masq: false },
    "external to ClusterIP with iTP:Local": { masq: false },
    "pod to NodePort with eTP:Local": { output: "10.180.0.2:80" },
    "pod to LB with eTP:Local": { output: "10.180.0.2:80" },
  };
  const masqAll: Record<string, Override> = {
    "pod to ClusterIP": { masq: true },
    "pod to ClusterIP with eTP:Local": { masq: true },
    "pod to ClusterIP with iTP:Local": { masq: true },
  };
  const cases: {
    name: string;
    masqueradeAll: boolean;
    localDetector: boolean;
    overrides: Record<string, Override>;
  }[] = [
    { name: "base", masqueradeAll: false, localDetector: true, overrides: {} },
    { name: "no LocalTrafficDetector", masqueradeAll: false, localDetector: false, overrides: noDetector },
    { name: "masqueradeAll", masqueradeAll: true, localDetector: true, overrides: masqAll },
    {
      name: "masqueradeAll, no LocalTrafficDetector",
      masqueradeAll: true,
      localDetector: false,
      overrides: {
        ...masqAll,
        "pod to NodePort with eTP:Local": { output: "10.180.0.2:80" },
        "pod to LB with eTP:Local": { output: "10.180.0.2:80" },
      },
    },
  ];

  test("every override names a base row and changes it", () => {
    for (const c of cases) {
      for (const [name, o] of Object.entries(c.overrides)) {
        const row = base.find((r) => r.name === name);
        expect(row).toBeDefined();
        if (o.masq !== undefined) expect(o.masq).not.toBe(row?.masq);
        if (o.output !== undefined) expect(o.output).not.toBe(row?.output);
      }
    }
  });

  for (const c of cases) {
    test(`${c.name}: ${base.length} rows`, async () => {
      const rows = base.map((r) => ({ ...r, ...c.overrides[r.name] }));
      await check(objects(), rows, { masqueradeAll: c.masqueradeAll, localDetector: c.localDetector });
    });
  }
});

describe("upstream v1.37: TestLoadBalancerIngressRouteTypeProxy (a rule for the LB IP, or none)", () => {
  const cases: {
    name: string;
    svcIP: string;
    lbIP: string;
    ipMode?: "Proxy" | "VIP";
    expectRule: boolean;
  }[] = [
    { name: "ipMode Proxy", svcIP: "10.20.30.41", lbIP: "1.2.3.4", ipMode: "Proxy", expectRule: false },
    { name: "ipMode VIP", svcIP: "10.20.30.42", lbIP: "1.2.3.5", ipMode: "VIP", expectRule: true },
    { name: "ipMode nil", svcIP: "10.20.30.43", lbIP: "1.2.3.6", expectRule: true },
  ];
  for (const tc of cases) {
    test(tc.name, async () => {
      const s = upstreamProxier();
      s.cluster.apply(
        service(
          "ns1",
          "svc1",
          { type: "LoadBalancer", clusterIP: tc.svcIP, ports: [{ ...tcp("p80", 80), nodePort: 3001 }] },
          { loadBalancer: { ingress: [{ ip: tc.lbIP, ...(tc.ipMode ? { ipMode: tc.ipMode } : {}) }] } },
        ),
        slice("ns1", "svc1", [at("10.180.0.1")], [tcp("p80", 80)]),
      );
      await s.sync();
      const rules = s.ipt.rules("nat", "KUBE-SERVICES");
      expect(rules.some((r) => r.includes(` -d ${tc.lbIP}/32 `))).toBe(tc.expectRule);
      // And as a flow: an external client to the LB IP is load-balanced only in VIP mode.
      expect(
        await flowMismatches(s, [
          {
            name: "external to LB",
            source: EXT,
            destination: tc.lbIP,
            port: 80,
            output: tc.expectRule ? "10.180.0.1:80" : "",
            masq: tc.expectRule,
          },
        ]),
      ).toEqual([]);
    });
  }
});
