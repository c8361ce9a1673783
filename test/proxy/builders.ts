// Small builders for the Service and EndpointSlice objects the tracker tests feed in. Addresses
// come from the documentation ranges: 198.51.100.0/24 cluster IPs, 192.0.2.0/24 pods,
// 203.0.113.0/24 external and load balancer IPs, 2001:db8::/32 for IPv6.

import type { EndpointSliceObject, ServiceObject } from "../../src/k8s/objects.ts";

type Spec = NonNullable<ServiceObject["spec"]>;

export function service(name: string, spec: Spec, extra: Partial<ServiceObject> = {}): ServiceObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: "ns", name, uid: `uid-${name}`, ...extra.metadata },
    spec: { type: "ClusterIP", ports: [{ name: "http", port: 80, protocol: "TCP" }], ...spec },
    ...(extra.status ? { status: extra.status } : {}),
  };
}

type Endpoint = NonNullable<EndpointSliceObject["endpoints"]>[number];
type Port = NonNullable<EndpointSliceObject["ports"]>[number];

export interface SliceOptions {
  readonly service?: string;
  readonly addressType?: string;
  readonly ports?: Port[] | null;
  readonly annotations?: Record<string, string>;
  readonly labels?: Record<string, string>;
}

export function slice(name: string, endpoints: Endpoint[], opts: SliceOptions = {}): EndpointSliceObject {
  const labels = opts.labels ?? { "kubernetes.io/service-name": opts.service ?? "web" };
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      namespace: "ns",
      name,
      labels,
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    addressType: opts.addressType ?? "IPv4",
    ports: opts.ports === undefined ? [{ name: "http", port: 8080, protocol: "TCP" }] : opts.ports,
    endpoints,
  };
}

/** A ready endpoint on `node` (conditions given explicitly, as the controller writes them). */
export function ep(
  ip: string,
  node = "node-b",
  conditions: Endpoint["conditions"] = { ready: true, serving: true, terminating: false },
): Endpoint {
  return { addresses: [ip], nodeName: node, conditions };
}

export const udpPorts: Port[] = [{ name: "dns", port: 53, protocol: "UDP" }];
