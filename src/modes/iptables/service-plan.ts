// What one service port needs, decided before any rule is written: which endpoint lists apply,
// which chains exist, where each kind of traffic goes, and what the filter table does when a
// policy leaves no endpoint (REJECT when there is none anywhere, DROP when only none here).

import { comment } from "../../host/iptables/restore-text.ts";
import type { FamilyServicePort } from "../../proxy/family-view.ts";
import type { TopologyContext } from "../../proxy/topology.ts";
import { planTrafficPolicy, type TrafficPolicyPlan } from "../../proxy/traffic-policy.ts";
import type { EndpointInfo } from "../../proxy/types.ts";
import type { ServicePortNames } from "./port-names.ts";

export interface FilterVerdict {
  readonly target: "REJECT" | "DROP";
  /** Already a restore-file argument (restore-text's comment()), as upstream writes it. */
  readonly comment: string;
}

export interface ServicePlan extends TrafficPolicyPlan {
  readonly internalTrafficChain: string;
  readonly externalPolicyChain: string;
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
    const reject: FilterVerdict = { target: "REJECT", comment: comment(`${name} has no endpoints`) };
    return { internal: reject, external: reject };
  }
  const drop: FilterVerdict = { target: "DROP", comment: comment(`${name} has no local endpoints`) };
  return { internal: hasInternal ? undefined : drop, external: hasExternal ? undefined : drop };
}

export function planServicePort(
  svc: FamilyServicePort,
  endpoints: readonly EndpointInfo[],
  names: ServicePortNames,
  topology: TopologyContext,
): ServicePlan {
  const policy = planTrafficPolicy(svc, endpoints, topology);
  // The chains other than KUBE-SVC- are made when read: only the ones this port uses.
  const chains = names.chains;
  // Source ranges only matter for load balancer IPs, and only when traffic can be served.
  const usesFirewallChain =
    policy.hasEndpoints && svc.loadBalancerVIPs.length > 0 && svc.loadBalancerSourceRanges.length > 0;
  const filters = verdicts(
    names.nameString,
    policy.hasEndpoints,
    policy.hasInternalEndpoints,
    policy.hasExternalEndpoints,
  );
  return {
    ...policy,
    internalTrafficChain: svc.internalPolicyLocal ? chains.svl : chains.svc,
    externalPolicyChain: svc.externalPolicyLocal ? chains.svl : chains.svc,
    usesFirewallChain,
    loadBalancerTrafficChain: usesFirewallChain ? chains.fw : chains.ext,
    internalFilter: filters.internal,
    externalFilter: filters.external,
  };
}
