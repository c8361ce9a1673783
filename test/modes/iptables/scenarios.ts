// Service sets shared by the golden tests. They mirror the mix upstream's overall-rules test
// uses (ClusterIP, LoadBalancer with Local policy, NodePort, external IP, LoadBalancer with
// source ranges and affinity, no endpoints), in documentation address ranges.

import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { endpointSlice, ep, NODE, service } from "./harness.ts";

type Obj = ServiceObject | EndpointSliceObject;

export function overallIPv4(): Obj[] {
  const p80 = (nodePort?: number) => [
    { name: "p80", port: 80, protocol: "TCP", ...(nodePort ? { nodePort } : {}) },
  ];
  return [
    service("ns1", "svc1", { clusterIP: "198.51.100.41" }),
    endpointSlice("ns1", "svc1", [ep("192.0.2.130")]),
    service(
      "ns2",
      "svc2",
      {
        type: "LoadBalancer",
        clusterIP: "198.51.100.42",
        externalTrafficPolicy: "Local",
        externalIPs: ["203.0.113.22"],
        healthCheckNodePort: 30000,
        ports: p80(3001),
      },
      { loadBalancer: { ingress: [{ ip: "203.0.113.100" }] } },
    ),
    // Not on this node: external traffic under Local policy has nowhere to go here.
    endpointSlice("ns2", "svc2", [ep("192.0.2.140")]),
    service("ns3", "svc3", { type: "NodePort", clusterIP: "198.51.100.43", ports: p80(3003) }),
    endpointSlice("ns3", "svc3", [ep("192.0.2.150")]),
    service("ns4", "svc4", { clusterIP: "198.51.100.44", externalIPs: ["203.0.113.33"] }),
    endpointSlice("ns4", "svc4", [ep("192.0.2.160"), ep("192.0.2.161", { node: NODE })]),
    service(
      "ns5",
      "svc5",
      {
        type: "LoadBalancer",
        clusterIP: "198.51.100.45",
        externalTrafficPolicy: "Cluster",
        loadBalancerSourceRanges: [" 203.0.113.0/25"],
        sessionAffinity: "ClientIP",
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } },
        ports: p80(3002),
      },
      { loadBalancer: { ingress: [{ ip: "203.0.113.105" }] } },
    ),
    endpointSlice("ns5", "svc5", [ep("192.0.2.170")]),
    service("ns6", "svc6", { clusterIP: "198.51.100.46" }),
  ];
}

export function overallIPv6(): Obj[] {
  const v6 = { addressType: "IPv6" };
  const p80 = (nodePort?: number) => [
    { name: "p80", port: 80, protocol: "TCP", ...(nodePort ? { nodePort } : {}) },
  ];
  return [
    service("ns1", "svc1", { clusterIP: "2001:db8:100::41", ipFamilies: ["IPv6"] }),
    endpointSlice("ns1", "svc1", [ep("2001:db8:1::130"), ep("2001:db8:1::131", { node: NODE })], v6),
    service(
      "ns2",
      "svc2",
      {
        type: "LoadBalancer",
        clusterIP: "2001:db8:100::42",
        externalTrafficPolicy: "Local",
        healthCheckNodePort: 30000,
        loadBalancerSourceRanges: ["2001:db8:ffff::/48"],
        ports: p80(3001),
      },
      { loadBalancer: { ingress: [{ ip: "2001:db8:200::100" }] } },
    ),
    endpointSlice("ns2", "svc2", [ep("2001:db8:1::140", { node: NODE })], v6),
    service("ns3", "svc3", { clusterIP: "2001:db8:100::43" }),
  ];
}
