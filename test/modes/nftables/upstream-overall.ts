// The inputs of upstream v1.37's TestOverallNFTablesRules (and its IPv6 variant): six Services
// and their EndpointSlices, in either family's addresses, and the node they are synced on
// (node IPs, pod CIDR, ServiceCIDRs, nodePortAddresses, local addresses), for the golden test
// and the takeover tests that start from an upstream-written table.

import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { endpointSlice, ep, NODE, service } from "../../support/proxy-cluster.ts";
import { UPSTREAM_NODE_ADDRESSES } from "../../support/upstream-test-node.ts";
import { type FakeNftHost, type NftSetup, setupNft } from "./harness.ts";

/** Upstream's node "test-node" is ours (NODE): endpoints there are local. */
const LOCAL = NODE;
const OTHER = "other-node";

interface Addresses {
  clusterIP: (n: number) => string;
  svc2Ingress: string;
  svc2ExternalIP: string;
  svc4ExternalIP: string;
  svc5Ingress: string;
  svc5SourceRange: string;
  endpoint: (n: number) => string;
  addressType: "IPv4" | "IPv6";
}

const V4: Addresses = {
  clusterIP: (n) => `172.30.0.${40 + n}`,
  svc2Ingress: "1.2.3.4",
  svc2ExternalIP: "192.168.99.22",
  svc4ExternalIP: "192.168.99.33",
  svc5Ingress: "5.6.7.8",
  svc5SourceRange: " 203.0.113.0/25",
  endpoint: (n) => `10.180.0.${n}`,
  addressType: "IPv4",
};

const V6: Addresses = {
  clusterIP: (n) => `fd00:172:30::${40 + n}`,
  svc2Ingress: "5555::1",
  svc2ExternalIP: "2001:db8:99::22",
  svc4ExternalIP: "2001:db8:99::33",
  svc5Ingress: "5555::2",
  svc5SourceRange: " 2001:db8:203::/64",
  endpoint: (n) => `fd00:10:180::${n}`,
  addressType: "IPv6",
};

/** The objects of upstream's test (overall-1.37-inputs.md), in one family's addresses. */
export function overallObjects(a: Addresses, family: IPFamily): (ServiceObject | EndpointSliceObject)[] {
  const ips = (n: number) => ({
    clusterIP: a.clusterIP(n),
    clusterIPs: [a.clusterIP(n)],
    ipFamilies: [family],
  });
  const p80 = { name: "p80", port: 80, protocol: "TCP" };
  const slice = (ns: string, name: string, eps: [number, string][]) =>
    endpointSlice(
      ns,
      name,
      eps.map(([n, node]) => ep(a.endpoint(n), { node })),
      { ports: [p80], addressType: a.addressType, suffix: "1" },
    );
  return [
    service("ns1", "svc1", { ...ips(1), ports: [p80] }),
    slice("ns1", "svc1", [[1, LOCAL]]),
    service(
      "ns2",
      "svc2",
      {
        type: "LoadBalancer",
        ...ips(2),
        externalIPs: [a.svc2ExternalIP],
        externalTrafficPolicy: "Local",
        healthCheckNodePort: 30000,
        ports: [{ ...p80, nodePort: 3001 }],
      },
      { loadBalancer: { ingress: [{ ip: a.svc2Ingress }] } },
    ),
    slice("ns2", "svc2", [[2, OTHER]]),
    service("ns3", "svc3", { type: "NodePort", ...ips(3), ports: [{ ...p80, nodePort: 3003 }] }),
    slice("ns3", "svc3", [[3, LOCAL]]),
    service("ns4", "svc4", {
      type: "NodePort",
      ...ips(4),
      externalIPs: [a.svc4ExternalIP],
      ports: [{ ...p80, targetPort: 80 }],
    }),
    slice("ns4", "svc4", [
      [4, OTHER],
      [5, LOCAL],
    ]),
    service(
      "ns5",
      "svc5",
      {
        type: "LoadBalancer",
        ...ips(5),
        externalTrafficPolicy: "Cluster",
        healthCheckNodePort: 30000,
        loadBalancerSourceRanges: [a.svc5SourceRange],
        sessionAffinity: "ClientIP",
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } },
        ports: [{ ...p80, nodePort: 3002 }],
      },
      { loadBalancer: { ingress: [{ ip: a.svc5Ingress }] } },
    ),
    slice("ns5", "svc5", [[3, LOCAL]]),
    service("ns6", "svc6", { ...ips(6), ports: [{ ...p80, targetPort: 80 }] }),
  ];
}

/** A proxier set up as upstream's NewFakeProxier, over `host` (a fresh fake by default), with the objects applied. */
export function overallSetup(family: IPFamily, host?: FakeNftHost): NftSetup {
  const s = setupNft({
    family,
    ...(host ? { host } : {}),
    config: (c) => {
      c.clusterCIDRs = ["10.0.0.0/8", "fd00:10::/64"];
      c.nftables.masqueradeBit = 14;
    },
    deps: {
      nodeIPs: { IPv4: "192.168.0.2", IPv6: "2001:db8::1" },
      nodePortAddresses: ["192.168.0.2/32", "2001:db8::1/128"],
    },
    localAddresses: [...UPSTREAM_NODE_ADDRESSES],
  });
  s.cluster.serviceCIDRs = ["172.30.0.0/16", "fd00:10:96::/112"];
  s.cluster.apply(...overallObjects(family === "IPv4" ? V4 : V6, family));
  return s;
}
