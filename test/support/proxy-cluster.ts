// The cluster as a proxier's sync sees it, for every mode's tests: Service and EndpointSlice
// objects go through the real change trackers and maps, and each sync gets their update
// results. Addresses follow the documentation ranges: 198.51.100.0/24 cluster IPs,
// 192.0.2.0/24 pods (192.0.2.0/25 is this node's pod CIDR), 203.0.113.0/24 node, external and
// load balancer IPs, 2001:db8::/32 for IPv6.

import type { NodeInfo } from "../../src/k8s/node-info.ts";
import type { EndpointSliceObject, ServiceObject } from "../../src/k8s/objects.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { EndpointsMap } from "../../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../../src/proxy/endpoints-tracker.ts";
import type { SyncInput } from "../../src/proxy/proxier.ts";
import { ServiceMap } from "../../src/proxy/service-map.ts";
import { ServiceChangeTracker } from "../../src/proxy/service-tracker.ts";

export const NODE = "node-a";
export const NODE_IP = "203.0.113.10";
export const NODE_IPV6 = "2001:db8:ffff::10";

type Spec = NonNullable<ServiceObject["spec"]>;
type Endpoint = NonNullable<EndpointSliceObject["endpoints"]>[number];
type Port = NonNullable<EndpointSliceObject["ports"]>[number];

/** A Service in namespace `ns`. Defaults: ClusterIP with one TCP port "p80". */
export function service(
  ns: string,
  name: string,
  spec: Spec,
  status?: ServiceObject["status"],
): ServiceObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: ns, name },
    spec: { type: "ClusterIP", ports: [{ name: "p80", port: 80, protocol: "TCP" }], ...spec },
    ...(status ? { status } : {}),
  };
}

/** An EndpointSlice for Service ns/name. Defaults: IPv4, port "p80" -> 8080/TCP. */
export function endpointSlice(
  ns: string,
  name: string,
  endpoints: Endpoint[],
  opts: { ports?: Port[]; addressType?: string; suffix?: string } = {},
): EndpointSliceObject {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      namespace: ns,
      name: `${name}-${opts.suffix ?? "a"}`,
      labels: { "kubernetes.io/service-name": name },
    },
    addressType: opts.addressType ?? "IPv4",
    ports: opts.ports ?? [{ name: "p80", port: 8080, protocol: "TCP" }],
    endpoints,
  };
}

export interface EpOpts {
  node?: string;
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
  zone?: string;
  hints?: string[];
  /** hints.forNodes (PreferSameNode). */
  nodeHints?: string[];
}

export function ep(ip: string, o: EpOpts = {}): Endpoint {
  const ready = o.ready ?? true;
  return {
    addresses: [ip],
    nodeName: o.node ?? "node-b",
    ...(o.zone ? { zone: o.zone } : {}),
    conditions: { ready, serving: o.serving ?? ready, terminating: o.terminating ?? false },
    ...(o.hints || o.nodeHints
      ? {
          hints: {
            ...(o.hints ? { forZones: o.hints.map((z) => ({ name: z })) } : {}),
            ...(o.nodeHints ? { forNodes: o.nodeHints.map((n) => ({ name: n })) } : {}),
          },
        }
      : {}),
  };
}

/** The cluster as the trackers see it; `input()` folds pending changes like a sync does. */
export class Cluster {
  readonly services = new ServiceMap();
  readonly endpoints = new EndpointsMap();
  private readonly serviceTracker = new ServiceChangeTracker({ logger: nullLogger });
  private readonly endpointsTracker = new EndpointsChangeTracker({ nodeName: NODE, logger: nullLogger });
  private readonly known = new Map<string, ServiceObject>();
  node: NodeInfo | undefined = {
    name: NODE,
    labels: {},
    podCIDRs: ["192.0.2.0/25", "2001:db8:1::/64"],
    ips: { ordered: [NODE_IP, NODE_IPV6], ipv4: NODE_IP, ipv6: NODE_IPV6 },
  };
  /** The ServiceCIDRs' CIDRs a sync is given (canonical, sorted). */
  serviceCIDRs: readonly string[] = [];

  apply(...objects: (ServiceObject | EndpointSliceObject)[]): this {
    for (const o of objects) {
      if (o.kind === "Service") {
        const s = o as ServiceObject;
        const key = `${s.metadata?.namespace}/${s.metadata?.name}`;
        this.serviceTracker.serviceChanged(this.known.get(key), s);
        this.known.set(key, s);
      } else {
        this.endpointsTracker.endpointSliceChanged(o as EndpointSliceObject, false);
      }
    }
    return this;
  }

  remove(...objects: (ServiceObject | EndpointSliceObject)[]): this {
    for (const o of objects) {
      if (o.kind === "Service") {
        const key = `${o.metadata?.namespace}/${o.metadata?.name}`;
        this.serviceTracker.serviceChanged(this.known.get(key), undefined);
        this.known.delete(key);
      } else {
        this.endpointsTracker.endpointSliceChanged(o as EndpointSliceObject, true);
      }
    }
    return this;
  }

  input(): SyncInput {
    return {
      services: this.services,
      endpoints: this.endpoints,
      serviceUpdate: this.services.update(this.serviceTracker),
      endpointsUpdate: this.endpoints.update(this.endpointsTracker),
      node: this.node,
      nodeName: NODE,
      serviceCIDRs: this.serviceCIDRs,
    };
  }
}
