// What one service port needs, decided before any rule is written: which endpoint lists apply,
// which chains exist, where each kind of traffic goes, and what the filter table does when a
// policy leaves no endpoint (REJECT when there is none anywhere, DROP when only none here).

import type { FamilyServicePort } from "../../proxy/family-view.ts";
import { usesClusterEndpoints, usesLocalEndpoints } from "../../proxy/service-port.ts";
import { categorizeEndpoints, type TopologyContext } from "../../proxy/topology.ts";
import type { EndpointInfo } from "../../proxy/types.ts";
import type { ServicePortNames } from "./port-names.ts";

export interface FilterVerdict {
  readonly target: "REJECT" | "DROP";
  /** Already quoted for the restore file, as upstream writes it. */
  readonly comment: string;
}

export interface ServicePlan {
  readonly clusterEndpoints: readonly EndpointInfo[];
  readonly localEndpoints: readonly EndpointInfo[];
  readonly allReachableEndpoints: readonly EndpointInfo[];
  readonly hasEndpoints: boolean;
  readonly usesClusterPolicyChain: boolean;
  readonly usesLocalPolicyChain: boolean;
  readonly internalTrafficChain: string;
  readonly hasInternalEndpoints: boolean;
  readonly externalPolicyChain: string;
  readonly hasExternalEndpoints: boolean;
  readonly usesExternalTrafficChain: boolean;
  readonly usesFirewallChain: boolean;
  /** KUBE-FW- when source ranges apply, else KUBE-EXT-. */
  readonly loadBalancerTrafficChain: string;
  /** Set when cluster IP traffic cannot be served (filter KUBE-SERVICES rule). */
  readonly internalFilter: FilterVerdict | undefined;
  /** Set when external traffic cannot be served (filter KUBE-EXTERNAL-SERVICES rules). */
  readonly externalFilter: FilterVerdict | undefined;
}

function verdicts(
  name: string,
  hasEndpoints: boolean,
  hasInternal: boolean,
  hasExternal: boolean,
): { internal: FilterVerdict | undefined; external: FilterVerdict | undefined } {
  if (!hasEndpoints) {
    const reject: FilterVerdict = { target: "REJECT", comment: `"${name} has no endpoints"` };
    return { internal: reject, external: reject };
  }
  const drop: FilterVerdict = { target: "DROP", comment: `"${name} has no local endpoints"` };
  return { internal: hasInternal ? undefined : drop, external: hasExternal ? undefined : drop };
}

export function planServicePort(
  svc: FamilyServicePort,
  endpoints: readonly EndpointInfo[],
  names: ServicePortNames,
  topology: TopologyContext,
): ServicePlan {
  const cat = categorizeEndpoints(endpoints, svc, topology);
  const clusterEndpoints = cat.clusterEndpoints ?? [];
  const localEndpoints = cat.localEndpoints ?? [];
  const hasEndpoints = cat.hasAnyEndpoints;
  const { svc: clusterChain, svl: localChain, ext, fw } = names.chains;

  const internalLocal = svc.internalPolicyLocal;
  const hasInternalEndpoints = hasEndpoints && !(internalLocal && localEndpoints.length === 0);
  const externalLocal = svc.externalPolicyLocal;
  const hasExternalEndpoints = hasEndpoints && !(externalLocal && localEndpoints.length === 0);
  // Source ranges only matter for load balancer IPs, and only when traffic can be served.
  const usesFirewallChain =
    hasEndpoints && svc.loadBalancerVIPs.length > 0 && svc.loadBalancerSourceRanges.length > 0;
  const filters = verdicts(names.nameString, hasEndpoints, hasInternalEndpoints, hasExternalEndpoints);
  return {
    clusterEndpoints,
    localEndpoints,
    allReachableEndpoints: cat.allReachableEndpoints,
    hasEndpoints,
    usesClusterPolicyChain: clusterEndpoints.length > 0 && usesClusterEndpoints(svc),
    usesLocalPolicyChain: localEndpoints.length > 0 && usesLocalEndpoints(svc),
    internalTrafficChain: internalLocal ? localChain : clusterChain,
    hasInternalEndpoints,
    externalPolicyChain: externalLocal ? localChain : clusterChain,
    hasExternalEndpoints,
    // Needed even without externally usable endpoints: it holds the short-circuit rules.
    usesExternalTrafficChain: hasEndpoints && svc.isExternal,
    usesFirewallChain,
    loadBalancerTrafficChain: usesFirewallChain ? fw : ext,
    internalFilter: filters.internal,
    externalFilter: filters.external,
  };
}
