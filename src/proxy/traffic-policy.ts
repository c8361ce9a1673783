// Where one family's traffic to a service port can go, decided once from its endpoints and its
// traffic policies, before any mode writes a rule: the cluster and local endpoint lists, whether
// internal (ClusterIP) and external (NodePort, external and load balancer IP) traffic can be
// served, and which per-port policy chains a rule-based mode needs.

import type { FamilyServicePort } from "./family-view.ts";
import { usesClusterEndpoints, usesLocalEndpoints } from "./service-port.ts";
import { categorizeEndpoints, type TopologyContext } from "./topology.ts";
import type { EndpointInfo } from "./types.ts";

export interface TrafficPolicyPlan {
  readonly clusterEndpoints: readonly EndpointInfo[];
  readonly localEndpoints: readonly EndpointInfo[];
  /** Every endpoint either policy can send traffic to (one endpoint chain each). */
  readonly allReachableEndpoints: readonly EndpointInfo[];
  /** Some endpoint anywhere can serve: without one, traffic is rejected. */
  readonly hasEndpoints: boolean;
  /** ClusterIP traffic has somewhere to go (Local internal policy needs a local endpoint). */
  readonly hasInternalEndpoints: boolean;
  /** External traffic has somewhere to go (Local external policy needs a local endpoint). */
  readonly hasExternalEndpoints: boolean;
  readonly usesClusterPolicyChain: boolean;
  readonly usesLocalPolicyChain: boolean;
  /** Needed even without externally usable endpoints: it holds the short-circuit rules. */
  readonly usesExternalTrafficChain: boolean;
}

export function planTrafficPolicy(
  svc: FamilyServicePort,
  endpoints: readonly EndpointInfo[],
  topology: TopologyContext,
): TrafficPolicyPlan {
  const cat = categorizeEndpoints(endpoints, svc, topology);
  const clusterEndpoints = cat.clusterEndpoints ?? [];
  const localEndpoints = cat.localEndpoints ?? [];
  const hasEndpoints = cat.hasAnyEndpoints;
  return {
    clusterEndpoints,
    localEndpoints,
    allReachableEndpoints: cat.allReachableEndpoints,
    hasEndpoints,
    hasInternalEndpoints: hasEndpoints && !(svc.internalPolicyLocal && localEndpoints.length === 0),
    hasExternalEndpoints: hasEndpoints && !(svc.externalPolicyLocal && localEndpoints.length === 0),
    usesClusterPolicyChain: clusterEndpoints.length > 0 && usesClusterEndpoints(svc),
    usesLocalPolicyChain: localEndpoints.length > 0 && usesLocalEndpoints(svc),
    usesExternalTrafficChain: hasEndpoints && svc.isExternal,
  };
}
