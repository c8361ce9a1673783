// One IP family's view of a service port and its endpoints: what every mode's proxier for that
// family works from. The shared model carries both families; upstream's per-family trackers only
// ever see one, and that changes more than addresses: a dual-stack Service whose only external
// IP is IPv6 is not "externally accessible" to the IPv4 proxier. The view computes those
// family-dependent facts once per family.

import type { IPFamily } from "../util/net/family.ts";
import { familyOf } from "../util/net/family.ts";
import { ITEMS_PER_STEP, type Steps } from "../util/time-slice.ts";
import type { EndpointInfo, ServicePortInfo } from "./types.ts";

export interface FamilyServicePort extends ServicePortInfo {
  /** The cluster IP of this family. */
  readonly clusterIP: string;
  /** Reachable from outside in this family: a NodePort, or an external or LoadBalancer IP of it. */
  readonly isExternal: boolean;
}

function sameFamily(list: readonly string[], family: IPFamily): readonly string[] {
  for (const item of list) if (familyOf(item) !== family) return list.filter((x) => familyOf(x) === family);
  return list;
}

/**
 * A family's view of a port: the family's addresses of its own, every other field read through
 * the port it views (a view is made per port and family on each render; ipvs keeps one per port).
 */
class FamilyPortView implements FamilyServicePort {
  constructor(
    private readonly source: ServicePortInfo,
    readonly clusterIP: string,
    readonly externalIPs: readonly string[],
    readonly loadBalancerVIPs: readonly string[],
    readonly loadBalancerSourceRanges: readonly string[],
    readonly isExternal: boolean,
  ) {}

  get name(): ServicePortInfo["name"] {
    return this.source.name;
  }
  get id(): string {
    return this.source.id;
  }
  get clusterIPs(): ServicePortInfo["clusterIPs"] {
    return this.source.clusterIPs;
  }
  get port(): number {
    return this.source.port;
  }
  get protocol(): ServicePortInfo["protocol"] {
    return this.source.protocol;
  }
  get nodePort(): number {
    return this.source.nodePort;
  }
  get sessionAffinity(): ServicePortInfo["sessionAffinity"] {
    return this.source.sessionAffinity;
  }
  get externalPolicyLocal(): boolean {
    return this.source.externalPolicyLocal;
  }
  get internalPolicyLocal(): boolean {
    return this.source.internalPolicyLocal;
  }
  get healthCheckNodePort(): number {
    return this.source.healthCheckNodePort;
  }
  get topologyMode(): string {
    return this.source.topologyMode;
  }
  get trafficDistribution(): string {
    return this.source.trafficDistribution;
  }
  get serviceType(): ServicePortInfo["serviceType"] {
    return this.source.serviceType;
  }
  get createdAtMs(): number | undefined {
    return this.source.createdAtMs;
  }
}

/** undefined when the service port has no cluster IP of this family (the family skips it). */
export function familyView(svc: ServicePortInfo, family: IPFamily): FamilyServicePort | undefined {
  const clusterIP = svc.clusterIPs[family];
  if (!clusterIP) return undefined;
  const externalIPs = sameFamily(svc.externalIPs, family);
  const loadBalancerVIPs = sameFamily(svc.loadBalancerVIPs, family);
  const loadBalancerSourceRanges = sameFamily(svc.loadBalancerSourceRanges, family);
  const isExternal = svc.nodePort !== 0 || externalIPs.length > 0 || loadBalancerVIPs.length > 0;
  return new FamilyPortView(
    svc,
    clusterIP,
    externalIPs,
    loadBalancerVIPs,
    loadBalancerSourceRanges,
    isExternal,
  );
}

/**
 * The ids of the ports a family serves (their Service has a ClusterIP of it), sorted: a
 * dual-stack node's IPv6 proxier then never visits an IPv4 Service of 100,000 ports.
 */
export function* familyPortIds(
  ports: { entries(): Iterable<[string, ServicePortInfo]> },
  family: IPFamily,
): Steps<string[]> {
  const ids: string[] = [];
  let seen = 0;
  for (const [id, port] of ports.entries()) {
    if (++seen % ITEMS_PER_STEP === 0) yield;
    if (port.clusterIPs[family]) ids.push(id);
  }
  // One block, but a short one: ~20 ms for 100,000 ids.
  return ids.sort();
}

/** The endpoints of this family; the input array itself when it has no other (the usual case). */
export function familyEndpoints(
  endpoints: readonly EndpointInfo[],
  family: IPFamily,
): readonly EndpointInfo[] {
  for (const ep of endpoints) if (ep.family !== family) return endpoints.filter((e) => e.family === family);
  return endpoints;
}

const NO_ENDPOINTS: readonly EndpointInfo[] = Object.freeze([]);

/** The endpoints a family's port uses: same protocol as the port, same family. */
export function usableEndpoints(
  source: ServicePortInfo,
  endpointsSource: readonly EndpointInfo[] | undefined,
  endpointProtocol: string | undefined,
  family: IPFamily,
): readonly EndpointInfo[] {
  if (!endpointsSource || endpointProtocol !== source.protocol) return NO_ENDPOINTS;
  return familyEndpoints(endpointsSource, family);
}

/** usableEndpoints(...).length, without allocating. */
export function usableEndpointCount(
  source: ServicePortInfo,
  endpointsSource: readonly EndpointInfo[] | undefined,
  endpointProtocol: string | undefined,
  family: IPFamily,
): number {
  if (!source.clusterIPs[family] || !endpointsSource || endpointProtocol !== source.protocol) return 0;
  let n = 0;
  for (const ep of endpointsSource) if (ep.family === family) n++;
  return n;
}
