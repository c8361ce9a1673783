// The inputs of upstream v1.37's TestOverallIPTablesRules (pkg/proxy/iptables/proxier_test.go):
// six Services and their EndpointSlices, and the node they are synced on as upstream's
// NewFakeProxier sets it up (pod CIDR 10.0.0.0/8 as the local-traffic CIDR, node IP
// 192.168.0.2, every local address a NodePort address, localhost NodePorts on, both nfacct
// counters present). The addresses are upstream's own: the expected dump is a fact about them.

import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { UPSTREAM_NODE_ADDRESSES } from "../../support/upstream-test-node.ts";
import { endpointSlice, ep, fakeNfacct, NODE, type Setup, service, setup } from "./harness.ts";

/** Upstream leaves NodeName unset on most endpoints: not this node. */
const OTHER = "other-node";

export function upstreamOverallObjects(): (ServiceObject | EndpointSliceObject)[] {
  const p80 = { name: "p80", port: 80, protocol: "TCP" };
  const slice = (ns: string, name: string, eps: [string, string][]) =>
    endpointSlice(
      ns,
      name,
      eps.map(([ip, node]) => ep(ip, { node })),
      { ports: [p80], suffix: "1" },
    );
  return [
    service("ns1", "svc1", { clusterIP: "172.30.0.41", ports: [p80] }),
    slice("ns1", "svc1", [["10.180.0.1", OTHER]]),
    service(
      "ns2",
      "svc2",
      {
        type: "LoadBalancer",
        externalTrafficPolicy: "Local",
        clusterIP: "172.30.0.42",
        ports: [{ ...p80, nodePort: 3001 }],
        externalIPs: ["192.168.99.22"],
        healthCheckNodePort: 30000,
      },
      { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } },
    ),
    slice("ns2", "svc2", [["10.180.0.2", OTHER]]),
    service("ns3", "svc3", {
      type: "NodePort",
      clusterIP: "172.30.0.43",
      ports: [{ ...p80, nodePort: 3003 }],
    }),
    slice("ns3", "svc3", [["10.180.0.3", OTHER]]),
    service("ns4", "svc4", {
      type: "NodePort",
      clusterIP: "172.30.0.44",
      externalIPs: ["192.168.99.33"],
      ports: [{ ...p80, targetPort: 80 }],
    }),
    slice("ns4", "svc4", [
      ["10.180.0.4", OTHER],
      ["10.180.0.5", NODE],
    ]),
    service(
      "ns5",
      "svc5",
      {
        type: "LoadBalancer",
        externalTrafficPolicy: "Cluster",
        clusterIP: "172.30.0.45",
        ports: [{ ...p80, nodePort: 3002 }],
        healthCheckNodePort: 30000,
        // Upstream's leading space: a sloppy value must not crash the proxier.
        loadBalancerSourceRanges: [" 203.0.113.0/25"],
        sessionAffinity: "ClientIP",
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } },
      },
      { loadBalancer: { ingress: [{ ip: "5.6.7.8" }] } },
    ),
    slice("ns5", "svc5", [["10.180.0.3", OTHER]]),
    service("ns6", "svc6", {
      type: "ClusterIP",
      clusterIP: "172.30.0.46",
      ports: [{ ...p80, targetPort: 80 }],
    }),
  ];
}

/**
 * An iptables proxier set up as upstream's NewFakeProxier (IPv4), with the objects applied.
 * `nfacct: false` is the node of the v1.31-era test, whose fake proxier had no counters.
 */
export function upstreamOverallSetup(opts: { nfacct?: boolean } = {}): Setup {
  const s = setup({
    config: (c) => {
      c.clusterCIDRs = ["10.0.0.0/8", "fd00:10::/64"];
      c.iptables.localhostNodePorts = true;
    },
    deps: {
      ...(opts.nfacct === false ? {} : { nfacct: fakeNfacct().client }),
      nodeIPs: { IPv4: "192.168.0.2", IPv6: "2001:db8::1" },
    },
    localAddresses: [...UPSTREAM_NODE_ADDRESSES],
  });
  s.cluster.apply(...upstreamOverallObjects());
  return s;
}
