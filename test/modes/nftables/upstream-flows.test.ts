// Upstream v1.37's nftables packet-flow tests, transcribed (research: test-PacketFlowTests.txt,
// proxier_test.go @ e467a91f): TestNoEndpointsReject, TestClusterIPGeneral, TestLoadBalancer,
// TestNodePorts (four cases), TestExternalTrafficPolicyLocal/Cluster, TestInternalTrafficPolicy
// and TestTerminatingEndpointsTrafficPolicyLocal/Cluster. Each builds upstream's Services and
// EndpointSlices on a proxier set up as upstream's NewFakeProxier, syncs, and traces every row's
// new connection through the table our proxier wrote; output and masquerade must be upstream's.

import { beforeAll, describe } from "bun:test";
import type { FakeNftTable } from "../../../src/host/nft/testing/fake.ts";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { type EpOpts, ep as endpoint, endpointSlice, NODE, service } from "../../support/proxy-cluster.ts";
import { flows, traceFlows } from "./flows.ts";
import {
  type FakeProxierOptions,
  newFakeProxier,
  TRACER_NODE_IPS,
  tableSnapshot,
} from "./upstream-fake-proxier.ts";

/** Upstream's "test-node" is ours. */
const TEST_NODE = NODE;

type Objects = (ServiceObject | EndpointSliceObject)[];

const ips = (ip: string, family: IPFamily = "IPv4") => ({
  clusterIP: ip,
  clusterIPs: [ip],
  ipFamilies: [family],
});
const tcp = (name: string, port: number) => ({ name, port, protocol: "TCP" });

/** Syncs `objects` on a fresh fake proxier; the table after it (and after the `andThen` step). */
function synced(
  family: IPFamily,
  objects: () => Objects,
  o: FakeProxierOptions & { andThen?: (s: ReturnType<typeof newFakeProxier>) => void } = {},
): { first: () => FakeNftTable; after: () => FakeNftTable } {
  let first: FakeNftTable | undefined;
  let after: FakeNftTable | undefined;
  beforeAll(async () => {
    const s = newFakeProxier(family, o);
    s.cluster.apply(...objects());
    await s.sync();
    first = tableSnapshot(s, family);
    if (o.andThen) {
      o.andThen(s);
      await s.sync();
      after = tableSnapshot(s, family);
    }
  });
  return { first: () => first!, after: () => after! };
}

describe("upstream TestNoEndpointsReject", () => {
  const t = synced("IPv4", () => [
    service(
      "ns1",
      "svc1",
      {
        type: "LoadBalancer",
        ...ips("172.30.0.41"),
        externalIPs: ["192.168.99.11"],
        ports: [{ ...tcp("p80", 80), nodePort: 3001 }],
      },
      { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } },
    ),
  ]);
  traceFlows(
    t.first,
    "IPv4",
    TRACER_NODE_IPS,
    flows(`
      pod to cluster IP with no endpoints           | 10.0.0.2    | 172.30.0.41:80   | REJECT | -
      external to external IP with no endpoints     | 203.0.113.2 | 192.168.99.11:80 | REJECT | -
      pod to NodePort with no endpoints             | 10.0.0.2    | 192.168.0.2:3001 | REJECT | -
      external to NodePort with no endpoints        | 203.0.113.2 | 192.168.0.2:3001 | REJECT | -
      pod to LoadBalancer IP with no endpoints      | 10.0.0.2    | 1.2.3.4:80       | REJECT | -
      external to LoadBalancer IP with no endpoints | 203.0.113.2 | 1.2.3.4:80       | REJECT | -
    `),
  );
});

describe("upstream TestClusterIPGeneral", () => {
  const t = synced("IPv4", () => [
    service("ns1", "svc1", { ...ips("172.30.0.41"), ports: [tcp("http", 80)] }),
    endpointSlice("ns1", "svc1", [endpoint("10.180.0.1", { node: TEST_NODE })], {
      ports: [tcp("http", 80)],
      suffix: "1",
    }),
    service("ns2", "svc2", {
      ...ips("172.30.0.42"),
      ports: [
        tcp("http", 80),
        { ...tcp("https", 443), targetPort: 8443 },
        { name: "dns-udp", port: 53, protocol: "UDP" },
        { ...tcp("dns-tcp", 53), targetPort: 5353 },
        { name: "dns-sctp", port: 53, protocol: "SCTP" },
      ],
    }),
    endpointSlice(
      "ns2",
      "svc2",
      [endpoint("10.180.0.1", { node: TEST_NODE }), endpoint("10.180.2.1", { node: "node2" })],
      {
        ports: [
          tcp("http", 80),
          tcp("https", 8443),
          { name: "dns-udp", port: 53, protocol: "UDP" },
          tcp("dns-tcp", 5353),
          { name: "dns-sctp", port: 53, protocol: "SCTP" },
        ],
        suffix: "1",
      },
    ),
  ]);
  traceFlows(
    t.first,
    "IPv4",
    TRACER_NODE_IPS,
    flows(`
      simple clusterIP                  | 10.180.0.2 | 172.30.0.41:80  | 10.180.0.1:80                    | false
      hairpin to cluster IP             | 10.180.0.1 | 172.30.0.41:80  | 10.180.0.1:80                    | true
      clusterIP with multiple endpoints | 10.180.0.2 | 172.30.0.42:80  | 10.180.0.1:80, 10.180.2.1:80     | false
      clusterIP with TargetPort         | 10.180.0.2 | 172.30.0.42:443 | 10.180.0.1:8443, 10.180.2.1:8443 | false
      clusterIP with TCP, UDP, and SCTP on same port (TCP)  | 10.180.0.2 | 172.30.0.42:53 TCP  | 10.180.0.1:5353, 10.180.2.1:5353 | false
      # upstream's name says TCP for the UDP row
      clusterIP with TCP, UDP, and SCTP on same port (TCP)  | 10.180.0.2 | 172.30.0.42:53 UDP  | 10.180.0.1:53, 10.180.2.1:53     | false
      clusterIP with TCP, UDP, and SCTP on same port (SCTP) | 10.180.0.2 | 172.30.0.42:53 SCTP | 10.180.0.1:53, 10.180.2.1:53     | false
      TCP-only port does not match UDP traffic | 10.180.0.2 | 172.30.0.42:80 UDP | REJECT | -
      svc1 does not accept svc2's ports        | 10.180.0.2 | 172.30.0.41:443    | REJECT | -
      packet to unallocated cluster ip         | 10.180.0.2 | 172.30.0.50:80     | DROP   | -
    `),
  );
});

describe("upstream TestLoadBalancer", () => {
  const t = synced("IPv4", () => [
    service(
      "ns1",
      "svc1",
      {
        type: "LoadBalancer",
        ...ips("172.30.0.41"),
        ports: [{ ...tcp("p80", 80), nodePort: 3001 }],
        loadBalancerSourceRanges: ["192.168.0.0/24", " 203.0.113.0/25"],
      },
      { loadBalancer: { ingress: [{ ip: "1.2.3.4" }, { ip: "5.6.7.8" }] } },
    ),
    endpointSlice("ns1", "svc1", [endpoint("10.180.0.1", { node: TEST_NODE })], {
      ports: [tcp("p80", 80)],
      suffix: "1",
    }),
  ]);
  traceFlows(
    t.first,
    "IPv4",
    TRACER_NODE_IPS,
    flows(`
      pod to cluster IP                                 | 10.0.0.2      | 172.30.0.41:80   | 10.180.0.1:80 | false
      external to nodePort                              | 203.0.113.2   | 192.168.0.2:3001 | 10.180.0.1:80 | true
      nodePort bypasses LoadBalancerSourceRanges        | 203.0.113.130 | 192.168.0.2:3001 | 10.180.0.1:80 | true
      accepted external to LB1                          | 203.0.113.2   | 1.2.3.4:80       | 10.180.0.1:80 | true
      accepted external to LB2                          | 203.0.113.2   | 5.6.7.8:80       | 10.180.0.1:80 | true
      blocked external to LB1                           | 203.0.113.130 | 1.2.3.4:80       | DROP          | -
      blocked external to LB2                           | 203.0.113.130 | 5.6.7.8:80       | DROP          | -
      pod to LB1 (blocked by LoadBalancerSourceRanges)  | 10.0.0.2      | 1.2.3.4:80       | DROP          | -
      pod to LB2 (blocked by LoadBalancerSourceRanges)  | 10.0.0.2      | 5.6.7.8:80       | DROP          | -
      node to LB1 (allowed by LoadBalancerSourceRanges) | 192.168.0.2   | 1.2.3.4:80       | 10.180.0.1:80 | true
      node to LB2 (allowed by LoadBalancerSourceRanges) | 192.168.0.2   | 5.6.7.8:80       | 10.180.0.1:80 | true
      same node to LB1, SNATted to LB1 (implicitly allowed) | 1.2.3.4 | 1.2.3.4:80 | 10.180.0.1:80 | true | 1.2.3.4
      same node to LB2, SNATted to LB2 (implicitly allowed) | 5.6.7.8 | 5.6.7.8:80 | 10.180.0.1:80 | true | 5.6.7.8
    `),
  );
});

describe("upstream TestNodePorts", () => {
  const v4 = {
    svc: "172.30.0.41",
    ep1: "10.180.0.1",
    ep2: "10.180.2.1",
    pod: "10.0.0.2",
    client: "203.0.113.2",
  };
  const v6 = {
    svc: "fd00:172:30::41",
    ep1: "fd00:10:180::1",
    ep2: "fd00:10:180::2:1",
    pod: "fd00:10::2",
    client: "2600:5200::1",
  };
  const cases: {
    name: string;
    family: IPFamily;
    a: typeof v4;
    node: string;
    alt: string;
    nodePortAddresses?: string[];
  }[] = [
    { name: "ipv4", family: "IPv4", a: v4, node: "192.168.0.2", alt: "192.168.1.2" },
    {
      name: "ipv4, multiple nodeport-addresses",
      family: "IPv4",
      a: v4,
      node: "192.168.0.2",
      alt: "192.168.1.2",
      nodePortAddresses: ["192.168.0.0/24", "192.168.1.0/24", "2001:db8::/64"],
    },
    { name: "ipv6", family: "IPv6", a: v6, node: "2001:db8::1", alt: "2001:db8:1::2" },
    {
      name: "ipv6, multiple nodeport-addresses",
      family: "IPv6",
      a: v6,
      node: "2001:db8::1",
      alt: "2001:db8:1::2",
      nodePortAddresses: ["192.168.0.0/24", "192.168.1.0/24", "2001:db8::/64", "2001:db8:1::2/128"],
    },
  ];
  for (const c of cases) {
    describe(c.name, () => {
      const { a } = c;
      const hostPort = (ip: string, port: number) =>
        c.family === "IPv6" ? `[${ip}]:${port}` : `${ip}:${port}`;
      const t = synced(
        c.family,
        () => [
          service("ns1", "svc1", {
            type: "NodePort",
            ...ips(a.svc, c.family),
            ports: [{ ...tcp("p80", 80), nodePort: 3001 }],
          }),
          endpointSlice(
            "ns1",
            "svc1",
            [endpoint(a.ep1, { node: "other-node" }), endpoint(a.ep2, { node: TEST_NODE })],
            { ports: [tcp("p80", 80)], addressType: c.family, suffix: "1" },
          ),
        ],
        c.nodePortAddresses ? { nodePortAddresses: c.nodePortAddresses } : {},
      );
      const both = `${hostPort(a.ep1, 80)}, ${hostPort(a.ep2, 80)}`;
      const secondary = c.nodePortAddresses
        ? `external to nodePort on secondary IP | ${a.client} | ${hostPort(c.alt, 3001)} | ${both} | true`
        : `secondary nodeIP ignores NodePorts   | ${a.client} | ${hostPort(c.alt, 3001)} | "" | -`;
      traceFlows(
        t.first,
        c.family,
        TRACER_NODE_IPS,
        flows(`
          pod to cluster IP    | ${a.pod}    | ${hostPort(a.svc, 80)}     | ${both} | false
          external to nodePort | ${a.client} | ${hostPort(c.node, 3001)}  | ${both} | true
          node to nodePort     | ${c.node}   | ${hostPort(c.node, 3001)}  | ${both} | true
          ${secondary}
        `),
      );
    });
  }
});

/** TestExternalTrafficPolicyLocal/Cluster's Service and endpoints (10.180.2.1 is on this node). */
function externalPolicyObjects(policy: "Local" | "Cluster"): Objects {
  return [
    service(
      "ns1",
      "svc1",
      {
        type: "LoadBalancer",
        ...ips("172.30.0.41"),
        externalTrafficPolicy: policy,
        ...(policy === "Local" ? { healthCheckNodePort: 30000 } : {}),
        externalIPs: ["192.168.99.11"],
        ports: [{ ...tcp("p80", 80), nodePort: 3001, targetPort: 80 }],
      },
      { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } },
    ),
    endpointSlice(
      "ns1",
      "svc1",
      [endpoint("10.180.0.1", { node: "other-node" }), endpoint("10.180.2.1", { node: TEST_NODE })],
      { ports: [tcp("p80", 80)], suffix: "1" },
    ),
  ];
}

describe("upstream TestExternalTrafficPolicyLocal", () => {
  const t = synced("IPv4", () => externalPolicyObjects("Local"));
  traceFlows(
    t.first,
    "IPv4",
    TRACER_NODE_IPS,
    flows(`
      pod to cluster IP hits both endpoints, unmasqueraded            | 10.0.0.2    | 172.30.0.41:80   | 10.180.0.1:80, 10.180.2.1:80 | false
      pod to external IP hits both endpoints, unmasqueraded           | 10.0.0.2    | 192.168.99.11:80 | 10.180.0.1:80, 10.180.2.1:80 | false
      external to external IP hits only local endpoint, unmasqueraded | 203.0.113.2 | 192.168.99.11:80 | 10.180.2.1:80                | false
      pod to LB IP hits only both endpoints, unmasqueraded            | 10.0.0.2    | 1.2.3.4:80       | 10.180.0.1:80, 10.180.2.1:80 | false
      external to LB IP hits only local endpoint, unmasqueraded       | 203.0.113.2 | 1.2.3.4:80       | 10.180.2.1:80                | false
      pod to NodePort hits both endpoints, unmasqueraded              | 10.0.0.2    | 192.168.0.2:3001 | 10.180.0.1:80, 10.180.2.1:80 | false
      external to NodePort hits only local endpoint, unmasqueraded    | 203.0.113.2 | 192.168.0.2:3001 | 10.180.2.1:80                | false
    `),
  );
});

describe("upstream TestExternalTrafficPolicyCluster", () => {
  const t = synced("IPv4", () => externalPolicyObjects("Cluster"));
  traceFlows(
    t.first,
    "IPv4",
    TRACER_NODE_IPS,
    flows(`
      pod to cluster IP hits both endpoints, unmasqueraded    | 10.0.0.2    | 172.30.0.41:80   | 10.180.0.1:80, 10.180.2.1:80 | false
      pod to external IP hits both endpoints, masqueraded     | 10.0.0.2    | 192.168.99.11:80 | 10.180.0.1:80, 10.180.2.1:80 | true
      external to external IP hits both endpoints, masqueraded | 203.0.113.2 | 192.168.99.11:80 | 10.180.0.1:80, 10.180.2.1:80 | true
      pod to LB IP hits both endpoints, masqueraded           | 10.0.0.2    | 1.2.3.4:80       | 10.180.0.1:80, 10.180.2.1:80 | true
      external to LB IP hits both endpoints, masqueraded      | 203.0.113.2 | 1.2.3.4:80       | 10.180.0.1:80, 10.180.2.1:80 | true
      pod to NodePort hits both endpoints, masqueraded        | 10.0.0.2    | 192.168.0.2:3001 | 10.180.0.1:80, 10.180.2.1:80 | true
      external to NodePort hits both endpoints, masqueraded   | 203.0.113.2 | 192.168.0.2:3001 | 10.180.0.1:80, 10.180.2.1:80 | true
    `),
  );
});

describe("upstream TestInternalTrafficPolicy", () => {
  const cases: {
    name: string;
    policy: "Cluster" | "Local";
    nodes: [string, string, string];
    output: string;
  }[] = [
    {
      name: "internalTrafficPolicy is cluster",
      policy: "Cluster",
      nodes: [TEST_NODE, "node1", "node2"],
      output: "10.0.1.1:80, 10.0.1.2:80, 10.0.1.3:80",
    },
    {
      name: "internalTrafficPolicy is local and there is one local endpoint",
      policy: "Local",
      nodes: [TEST_NODE, "node1", "node2"],
      output: "10.0.1.1:80",
    },
    {
      name: "internalTrafficPolicy is local and there are multiple local endpoints",
      policy: "Local",
      nodes: [TEST_NODE, TEST_NODE, "node2"],
      output: "10.0.1.1:80, 10.0.1.2:80",
    },
    {
      name: "internalTrafficPolicy is local and there are no local endpoints",
      policy: "Local",
      nodes: ["node0", "node1", "node2"],
      output: "DROP",
    },
  ];
  for (const c of cases) {
    describe(c.name, () => {
      const slice = endpointSlice(
        "ns1",
        "svc1",
        c.nodes.map((node, i) => endpoint(`10.0.1.${i + 1}`, { node, ready: true })),
        { ports: [tcp("", 80)], suffix: "1" },
      );
      const t = synced(
        "IPv4",
        () => [
          service("ns1", "svc1", {
            ...ips("172.30.1.1"),
            internalTrafficPolicy: c.policy,
            selector: { foo: "bar" },
            ports: [tcp("", 80)],
          }),
          slice,
        ],
        { andThen: (s) => s.cluster.remove(slice) },
      );
      const masq = c.output === "DROP" ? "-" : "false";
      traceFlows(
        t.first,
        "IPv4",
        TRACER_NODE_IPS,
        flows(`${c.name} | 10.0.0.2 | 172.30.1.1:80 | ${c.output} | ${masq}`),
      );
      describe("after the EndpointSlice is deleted", () => {
        traceFlows(
          t.after,
          "IPv4",
          TRACER_NODE_IPS,
          flows(`${c.name} | 10.0.0.2 | 172.30.1.1:80 | REJECT | -`),
        );
      });
    });
  }
});

/** ip(ready, serving, terminating, node) as the research notes endpoints. */
function e(
  ip: string,
  ready: boolean,
  serving: boolean,
  terminating: boolean,
  node: string,
): EpOpts & { ip: string } {
  return { ip, ready, serving, terminating, node };
}

const T = true;
const F = false;

function terminatingCases(policy: "Local" | "Cluster") {
  const other = policy === "Local" ? "node-1" : "another-node";
  const local = policy === "Local";
  return [
    {
      name: "ready endpoints exist",
      eps: [
        e("10.0.1.1", T, T, F, TEST_NODE),
        e("10.0.1.2", T, T, F, TEST_NODE),
        e("10.0.1.3", F, T, T, local ? TEST_NODE : other),
        e("10.0.1.4", F, F, T, local ? TEST_NODE : other),
        e("10.0.1.5", T, T, F, local ? "node-1" : other),
      ],
      rows: local
        ? `pod to clusterIP | 10.0.0.2    | 172.30.1.1:80 | 10.0.1.1:80, 10.0.1.2:80, 10.0.1.5:80 | false
           external to LB   | 203.0.113.2 | 1.2.3.4:80    | 10.0.1.1:80, 10.0.1.2:80              | false`
        : `pod to clusterIP | 10.0.0.2    | 172.30.1.1:80 | 10.0.1.1:80, 10.0.1.2:80, 10.0.1.5:80 | false
           external to LB   | 203.0.113.2 | 1.2.3.4:80    | 10.0.1.1:80, 10.0.1.2:80, 10.0.1.5:80 | true`,
    },
    {
      name: "only terminating endpoints exist",
      eps: local
        ? [
            e("10.0.1.2", F, T, T, TEST_NODE),
            e("10.0.1.3", F, T, T, TEST_NODE),
            e("10.0.1.4", F, F, T, TEST_NODE),
            e("10.0.1.5", T, T, F, "node-1"),
          ]
        : [
            e("10.0.1.2", F, T, T, TEST_NODE),
            e("10.0.1.3", F, T, T, TEST_NODE),
            e("10.0.1.4", F, F, T, other),
            e("10.0.1.5", F, T, T, other),
          ],
      rows: local
        ? `pod to clusterIP | 10.0.0.2    | 172.30.1.1:80 | 10.0.1.5:80              | false
           external to LB   | 203.0.113.2 | 1.2.3.4:80    | 10.0.1.2:80, 10.0.1.3:80 | false`
        : `pod to clusterIP | 10.0.0.2    | 172.30.1.1:80 | 10.0.1.2:80, 10.0.1.3:80, 10.0.1.5:80 | false
           external to LB   | 203.0.113.2 | 1.2.3.4:80    | 10.0.1.2:80, 10.0.1.3:80, 10.0.1.5:80 | true`,
    },
    {
      name: "terminating endpoints on remote node",
      eps: [e("10.0.1.5", F, T, T, "node-1")],
      rows: local
        ? `pod to clusterIP                            | 10.0.0.2    | 172.30.1.1:80 | 10.0.1.5:80 | false
           external to LB, no locally-usable endpoints | 203.0.113.2 | 1.2.3.4:80    | DROP        | -`
        : `pod to clusterIP | 10.0.0.2    | 172.30.1.1:80 | 10.0.1.5:80 | false
           external to LB   | 203.0.113.2 | 1.2.3.4:80    | 10.0.1.5:80 | true`,
    },
    {
      name: "no usable endpoints on any node",
      eps: [e("10.0.1.5", F, F, T, TEST_NODE), e("10.0.1.5", F, F, T, "node-1")],
      rows: `pod to clusterIP, no usable endpoints | 10.0.0.2    | 172.30.1.1:80 | REJECT | -
             external to LB, no usable endpoints   | 203.0.113.2 | 1.2.3.4:80    | REJECT | -`,
    },
  ];
}

for (const policy of ["Local", "Cluster"] as const) {
  describe(`upstream TestTerminatingEndpointsTrafficPolicy${policy}`, () => {
    for (const c of terminatingCases(policy)) {
      describe(c.name, () => {
        const slice = endpointSlice(
          "ns1",
          "svc1",
          c.eps.map(({ ip, ...o }) => endpoint(ip, o)),
          { ports: [tcp("", 80)], suffix: "1" },
        );
        const t = synced(
          "IPv4",
          () => [
            service(
              "ns1",
              "svc1",
              {
                type: "LoadBalancer",
                ...ips("172.30.1.1"),
                externalTrafficPolicy: policy,
                ...(policy === "Local" ? { healthCheckNodePort: 30000 } : {}),
                ports: [{ ...tcp("", 80), targetPort: 80 }],
              },
              { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } },
            ),
            slice,
          ],
          { andThen: (s) => s.cluster.remove(slice) },
        );
        traceFlows(t.first, "IPv4", TRACER_NODE_IPS, flows(c.rows));
        describe("after the EndpointSlice is deleted", () => {
          traceFlows(
            t.after,
            "IPv4",
            TRACER_NODE_IPS,
            flows(`
              pod to clusterIP after endpoints deleted | 10.0.0.2    | 172.30.1.1:80 | REJECT | -
              external to LB after endpoints deleted   | 203.0.113.2 | 1.2.3.4:80    | REJECT | -
            `),
          );
        });
      });
    }
  });
}
