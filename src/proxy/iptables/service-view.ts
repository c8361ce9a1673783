// One IP family's view of a service port. The shared model carries both families; upstream's
// per-family trackers only ever see one, and that changes more than addresses: a dual-stack
// Service whose only external IP is IPv6 is not "externally accessible" to the IPv4 proxier,
// so it gets no KUBE-EXT- chain there. The view recomputes those family-dependent facts.

import { familyOf } from "../net.ts";
import type { EndpointInfo, IPFamily, ServicePortInfo } from "../types.ts";
import { endpointChain, type ServicePortChains, servicePortChains } from "./chains.ts";

export interface FamilyServicePort extends ServicePortInfo {
  /** The cluster IP of this family. */
  readonly clusterIP: string;
}

function sameFamily(list: readonly string[], family: IPFamily): readonly string[] {
  for (const item of list) if (familyOf(item) !== family) return list.filter((x) => familyOf(x) === family);
  return list;
}

/** undefined when the service port has no cluster IP of this family (the family skips it). */
export function familyView(svc: ServicePortInfo, family: IPFamily): FamilyServicePort | undefined {
  const clusterIP = svc.clusterIPs[family];
  if (!clusterIP) return undefined;
  const externalIPs = sameFamily(svc.externalIPs, family);
  const loadBalancerVIPs = sameFamily(svc.loadBalancerVIPs, family);
  const loadBalancerSourceRanges = sameFamily(svc.loadBalancerSourceRanges, family);
  const isExternal = svc.nodePort !== 0 || externalIPs.length > 0 || loadBalancerVIPs.length > 0;
  return { ...svc, clusterIP, externalIPs, loadBalancerVIPs, loadBalancerSourceRanges, isExternal };
}

/** The endpoints of this family; the input array itself when it has no other (the usual case). */
export function familyEndpoints(
  endpoints: readonly EndpointInfo[],
  family: IPFamily,
): readonly EndpointInfo[] {
  for (const ep of endpoints) if (ep.family !== family) return endpoints.filter((e) => e.family === family);
  return endpoints;
}

/** Hash-derived names of one service port, computed once and reused while the port exists. */
export class ServicePortNames {
  readonly protocol: string;
  readonly chains: ServicePortChains;
  private endpointChains = new Map<string, string>();

  constructor(
    readonly nameString: string,
    protocol: string,
  ) {
    this.protocol = protocol.toLowerCase();
    this.chains = servicePortChains(nameString, this.protocol);
  }

  /** KUBE-SEP- chain of an endpoint ("ip:port"); hashing is the costly part of a full sync. */
  endpointChain(endpoint: string): string {
    let chain = this.endpointChains.get(endpoint);
    if (chain === undefined) {
      chain = endpointChain(this.nameString, this.protocol, endpoint);
      this.endpointChains.set(endpoint, chain);
    }
    return chain;
  }

  /** Forgets endpoints no longer present, so the memo does not grow with churn. */
  retainEndpoints(endpoints: readonly EndpointInfo[]): void {
    if (this.endpointChains.size <= endpoints.length) return;
    const kept = new Map<string, string>();
    for (const ep of endpoints) {
      const chain = this.endpointChains.get(ep.endpoint);
      if (chain !== undefined) kept.set(ep.endpoint, chain);
    }
    this.endpointChains = kept;
  }
}
