// The chains private to one service port: KUBE-EXT- (external destinations), KUBE-FW-
// (source ranges), KUBE-SVC-/KUBE-SVL- (pick an endpoint, Cluster or Local policy) and one
// KUBE-SEP- per endpoint (DNAT). A partial sync writes these only for service ports that changed.
// Their names and the number of their rules are known from the plan alone, so a sync can declare
// the chains and count the rules first and write the rules later, as the restore reads them.

import { bareComment, comment } from "../../host/iptables/restore-text.ts";
import type { FamilyServicePort } from "../../proxy/family-view.ts";
import type { LocalTrafficDetector } from "../../proxy/local-detect.ts";
import { KUBE_MARK_MASQ } from "../../proxy/netfilter/chains.ts";
import type { EndpointInfo } from "../../proxy/types.ts";
import { cidrContains } from "../../util/net/address.ts";
import type { LineSink } from "./line-blocks.ts";
import { joinedLineSteps } from "./port-lines.ts";
import type { ServicePortNames } from "./port-names.ts";
import type { ProbabilityCache } from "./probability.ts";
import type { ServicePlan } from "./service-plan.ts";

export interface ChainRuleSettings {
  readonly masqueradeAll: boolean;
  readonly localDetector: LocalTrafficDetector;
  /** This node's IP of the proxier's family (for source ranges that include the node). */
  readonly nodeIP: string | undefined;
  /** Above the endpoint threshold per-endpoint comments are left out (smaller restores). */
  readonly largeClusterMode: boolean;
  readonly probabilities: ProbabilityCache;
}

/** Where chain declarations and rules go; `active` collects every chain declared. */
export interface ChainSink {
  /** The names of the chains declared (chain-declarations.ts makes them declaration lines). */
  readonly chains: LineSink;
  readonly rules: LineSink;
  readonly active: string[];
}

/**
 * "-m comment --comment TEXT " or nothing in large-cluster mode (trailing blank included); the
 * text quoted, or bare where upstream writes it bare.
 */
function endpointComment(settings: ChainRuleSettings, text: string, bare = false): string {
  if (settings.largeClusterMode) return "";
  return `-m comment --comment ${bare ? bareComment(text) : comment(text)} `;
}

// Off-cluster traffic to the cluster IP may bounce off-node, so it is masqueraded.
function writeInternalMasquerade(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  settings: ChainRuleSettings,
  out: LineSink,
) {
  if (!plan.hasInternalEndpoints) return;
  const p = names.protocol;
  const head = `-A ${plan.internalTrafficChain} -m comment --comment ${comment(`${names.nameString} cluster IP`)} -m ${p} -p ${p} -d ${svc.clusterIP} --dport ${svc.port}`;
  if (settings.masqueradeAll) out.push(`${head} -j ${KUBE_MARK_MASQ}`);
  else if (settings.localDetector.implemented) {
    out.push(`${head} ${settings.localDetector.ifNotLocal.join(" ")} -j ${KUBE_MARK_MASQ}`);
  }
}

function writeExternalChain(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  settings: ChainRuleSettings,
  out: LineSink,
) {
  if (!plan.usesExternalTrafficChain) return;
  const ext = names.chains.ext;
  const name = names.nameString;
  if (!svc.externalPolicyLocal) {
    // Cluster policy may send the packet to another node: masquerade so replies come back.
    out.push(
      `-A ${ext} -m comment --comment ${comment(`masquerade traffic for ${name} external destinations`)} -j ${KUBE_MARK_MASQ}`,
    );
  } else {
    const cluster = names.chains.svc;
    if (settings.localDetector.implemented) {
      // Pods reaching an external IP behave as if they went out to the LB and came back.
      const local = settings.localDetector.ifLocal.join(" ");
      out.push(
        `-A ${ext} -m comment --comment ${comment(`pod traffic for ${name} external destinations`)} ${local} -j ${cluster}`,
      );
    }
    // The host's own traffic has a local source address (maybe the LB IP): masquerade and
    // send it through Cluster policy.
    out.push(
      `-A ${ext} -m comment --comment ${comment(`masquerade LOCAL traffic for ${name} external destinations`)} -m addrtype --src-type LOCAL -j ${KUBE_MARK_MASQ}`,
    );
    out.push(
      `-A ${ext} -m comment --comment ${comment(`route LOCAL traffic for ${name} external destinations`)} -m addrtype --src-type LOCAL -j ${cluster}`,
    );
  }
  if (plan.hasExternalEndpoints) out.push(`-A ${ext} -j ${plan.externalPolicyChain}`);
}

/** The firewall chain's rules, pausing after each joined entry of a long list of ranges. */
function* firewallChainSteps(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  settings: ChainRuleSettings,
  out: LineSink,
): Generator<number> {
  if (!plan.usesFirewallChain) return;
  const { fw, ext } = names.chains;
  const head = `-A ${fw} -m comment --comment ${comment(`${names.nameString} loadbalancer IP`)}`;
  // One entry may hold many of these lines (a Service may list 100,000 ranges).
  yield* joinedLineSteps(out, `${head} -s `, svc.loadBalancerSourceRanges, ` -j ${ext}`);
  // A VIP bound on the node loops the node's own requests back with the VIP as source.
  if (rangesHoldNode(svc, settings))
    yield* joinedLineSteps(out, `${head} -s `, svc.loadBalancerVIPs, ` -j ${ext}`);
  // Falling off the end means no DNAT; KUBE-PROXY-FIREWALL drops it in the filter table.
  out.push(
    `-A ${fw} -m comment --comment ${comment(`other traffic to ${names.nameString} will be dropped by KUBE-PROXY-FIREWALL`)}`,
  );
}

/** Session-affinity checks first, then one probabilistic jump per endpoint (1/n, 1/(n-1), ...). */
export function writeServiceToEndpointRules(
  svc: FamilyServicePort,
  names: ServicePortNames,
  chain: string,
  endpoints: readonly EndpointInfo[],
  settings: ChainRuleSettings,
  out: LineSink,
): void {
  const name = names.nameString;
  if (svc.sessionAffinity.type === "ClientIP") {
    const seconds = svc.sessionAffinity.timeoutSeconds;
    for (const ep of endpoints) {
      const sep = names.endpointChain(ep);
      const text = endpointComment(settings, `${name} -> ${ep.endpoint}`);
      out.push(`-A ${chain} ${text}-m recent --name ${sep} --rcheck --seconds ${seconds} --reap -j ${sep}`);
    }
  }
  const n = endpoints.length;
  for (let i = 0; i < n; i++) {
    const ep = endpoints[i]!;
    const text = endpointComment(settings, `${name} -> ${ep.endpoint}`);
    const chance =
      i < n - 1 ? `-m statistic --mode random --probability ${settings.probabilities.get(n - i)} ` : "";
    out.push(`-A ${chain} ${text}${chance}-j ${names.endpointChain(ep)}`);
  }
}

function writeEndpointChains(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  settings: ChainRuleSettings,
  out: LineSink,
) {
  const p = names.protocol;
  const text = endpointComment(settings, names.nameString, true);
  const affinity = svc.sessionAffinity.type === "ClientIP";
  for (const ep of plan.allReachableEndpoints) {
    const sep = names.endpointChain(ep);
    // Hairpin: a pod reaching itself through the service must be masqueraded.
    out.push(`-A ${sep} ${text}-s ${ep.ip} -j ${KUBE_MARK_MASQ}`);
    const recent = affinity ? `-m recent --name ${sep} --set ` : "";
    out.push(`-A ${sep} ${text}${recent}-m ${p} -p ${p} -j DNAT --to-destination ${ep.endpoint}`);
  }
}

/** Whether a source range holds this node's IP: the node may then reach its own LB VIPs. */
function rangesHoldNode(svc: FamilyServicePort, settings: ChainRuleSettings): boolean {
  const nodeIP = settings.nodeIP;
  if (!nodeIP) return false;
  for (const cidr of svc.loadBalancerSourceRanges) if (cidrContains(cidr, nodeIP)) return true;
  return false;
}

/** The chains private to the service port, in the order upstream declares them. */
export function serviceChainNames(names: ServicePortNames, plan: ServicePlan): string[] {
  const out: string[] = [];
  if (plan.usesExternalTrafficChain) out.push(names.chains.ext);
  if (plan.usesFirewallChain) out.push(names.chains.fw);
  if (plan.usesClusterPolicyChain) out.push(names.chains.svc);
  if (plan.usesLocalPolicyChain) out.push(names.chains.svl);
  for (const ep of plan.allReachableEndpoints) out.push(names.endpointChain(ep));
  return out;
}

/**
 * How many lines writeServiceChainRules writes for the port, worked out from the plan without
 * writing them: the rule-count metrics and the sync's log give it before the restore. It follows
 * the writers above rule for rule (test/modes/iptables/deferred-chains.test.ts compares them).
 */
export function serviceChainRuleCount(
  svc: FamilyServicePort,
  plan: ServicePlan,
  settings: ChainRuleSettings,
): number {
  let n = 0;
  if (plan.hasInternalEndpoints && (settings.masqueradeAll || settings.localDetector.implemented)) n++;
  if (plan.usesExternalTrafficChain) {
    if (!svc.externalPolicyLocal) n++;
    else n += settings.localDetector.implemented ? 3 : 2;
    if (plan.hasExternalEndpoints) n++;
  }
  if (plan.usesFirewallChain) {
    n += svc.loadBalancerSourceRanges.length + 1;
    if (rangesHoldNode(svc, settings)) n += svc.loadBalancerVIPs.length;
  }
  const perEndpoint = svc.sessionAffinity.type === "ClientIP" ? 2 : 1;
  if (plan.usesClusterPolicyChain) n += perEndpoint * plan.clusterEndpoints.length;
  if (plan.usesLocalPolicyChain) n += perEndpoint * plan.localEndpoints.length;
  return n + 2 * plan.allReachableEndpoints.length;
}

/** The rules of every chain private to the service port, in upstream's order. */
export function writeServiceChainRules(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  settings: ChainRuleSettings,
  out: LineSink,
): void {
  writeInternalMasquerade(svc, names, plan, settings, out);
  writeExternalChain(svc, names, plan, settings, out);
  if (plan.usesFirewallChain) for (const _ of firewallChainSteps(svc, names, plan, settings, out));
  writePolicyAndEndpointChains(svc, names, plan, settings, out);
}

/**
 * writeServiceChainRules, pausing where a long list has just written one joined entry of its
 * lines: a reader can take each before the next is made (100,000 source ranges are 13 MB).
 */
export function* serviceChainRuleSteps(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  settings: ChainRuleSettings,
  out: LineSink,
): Generator<number> {
  writeInternalMasquerade(svc, names, plan, settings, out);
  writeExternalChain(svc, names, plan, settings, out);
  if (plan.usesFirewallChain) yield* firewallChainSteps(svc, names, plan, settings, out);
  writePolicyAndEndpointChains(svc, names, plan, settings, out);
}

/** What follows the firewall chain: the policy chains, then each endpoint's. */
function writePolicyAndEndpointChains(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  settings: ChainRuleSettings,
  out: LineSink,
): void {
  if (plan.usesClusterPolicyChain) {
    writeServiceToEndpointRules(svc, names, names.chains.svc, plan.clusterEndpoints, settings, out);
  }
  if (plan.usesLocalPolicyChain) {
    writeServiceToEndpointRules(svc, names, names.chains.svl, plan.localEndpoints, settings, out);
  }
  writeEndpointChains(svc, names, plan, settings, out);
}

/** Every chain private to the service port, declared and written at once, in upstream's order. */
export function writeServiceChains(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  settings: ChainRuleSettings,
  out: ChainSink,
): void {
  for (const chain of serviceChainNames(names, plan)) {
    out.chains.push(chain);
    out.active.push(chain);
  }
  writeServiceChainRules(svc, names, plan, settings, out.rules);
}
