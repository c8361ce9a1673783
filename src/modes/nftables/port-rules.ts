// Everything one service port puts into a `kube-proxy` table, computed from its family view and
// endpoints alone: the map and set elements that dispatch its addresses (or drop and reject
// them when no endpoint can serve), its local endpoints in the hairpin set, and its chains with
// their rules: policy chains that DNAT to an endpoint picked with numgen (with ClientIP
// affinity: that jump to one chain per endpoint, which records the client and DNATs), the
// external chain with its masquerade and short-circuit rules, and the source-range firewall.
// Pure. What nft could not read as meant (a name or address from text no API server would
// accept) is refused here, before anything is written, so the caller can skip just this port.

import { nftElementPart, nftStatement } from "../../host/nft/script-text.ts";
import type { NftSet } from "../../host/nft/types.ts";
import { EndpointMemo } from "../../proxy/endpoint-memo.ts";
import type { FamilyServicePort } from "../../proxy/family-view.ts";
import type { LocalTrafficDetector } from "../../proxy/local-detect.ts";
import type { TopologyContext } from "../../proxy/topology.ts";
import { planTrafficPolicy } from "../../proxy/traffic-policy.ts";
import type { EndpointInfo } from "../../proxy/types.ts";
import { servicePortNameString } from "../../proxy/types.ts";
import { flatString } from "../../util/flat-string.ts";
import { cidrContains } from "../../util/net/address.ts";
import { lowerProtocol } from "../../util/net/protocol.ts";
import * as N from "./names.ts";
import type { FamilyWords } from "./setup.ts";

/**
 * Elements of one container whose keys differ only in their first part, one per first part: a
 * port's externalIPs are one run holding the Service's own list, not an element per address
 * (a Service may list 100,000).
 */
export interface PortElements {
  readonly container: string;
  /** Each element's first key part, in order. */
  readonly firsts: readonly string[];
  /** The key parts after the first, the same for each element (none in a set of addresses). */
  readonly rest: readonly string[];
  readonly value?: readonly string[];
  readonly comment?: string;
}

export interface RuleText {
  readonly rule: string;
  readonly comment?: string;
}

export interface ChainContent {
  readonly name: string;
  readonly rules: readonly RuleText[];
}

export interface PortRules {
  readonly elements: readonly PortElements[];
  /** Chains in the order they are written; each is emptied and refilled. */
  readonly chains: readonly ChainContent[];
  readonly affinitySets: readonly NftSet[];
  /** Cluster IP traffic found no local endpoint under a Local internal policy. */
  readonly noLocalInternal: boolean;
  /** External traffic found no local endpoint under a Local external policy. */
  readonly noLocalExternal: boolean;
}

export interface PortRuleSettings {
  readonly words: FamilyWords;
  /** The masquerade mark, e.g. "0x00004000". */
  readonly mark: string;
  readonly localDetector: LocalTrafficDetector;
  /** This node's IP of the family: a source range containing it also admits the LB IPs. */
  readonly nodeIP: string | undefined;
  readonly topology: TopologyContext;
}

/**
 * The chains PortNames makes when read, on a class of their own: JSC gives every instance of a
 * class whose prototype holds getters room for six fields (64 bytes); PortNames holds its four
 * in 48.
 */
abstract class PortNamesReads implements N.PortChainNames {
  abstract readonly cluster: string;

  /** Endpoints for Local traffic policy (made on each read). */
  get local(): string {
    return N.otherPortChain("local", this.cluster);
  }
  /** Where NodePort, external IP and load balancer traffic goes first (made on each read). */
  get external(): string {
    return N.otherPortChain("external", this.cluster);
  }
  /** loadBalancerSourceRanges filtering (made on each read). */
  get firewall(): string {
    return N.otherPortChain("firewall", this.cluster);
  }
  /** The port's four chains (this object). */
  get chains(): N.PortChainNames {
    return this;
  }
}

/**
 * Per-port names, hashed once while the port exists (hashing dominates a full sync). Kept per
 * service port between syncs, so it holds little: the Cluster-policy chain (the other three
 * share its hashed base and are made from it when read) and its endpoints' chains.
 */
export class PortNames extends PortNamesReads {
  readonly protocol: string;
  readonly nameString: string;
  readonly cluster: string;
  /** Endpoint (IP and port) -> its chain; affinity set names are derived only when needed. */
  private endpoints: EndpointMemo<string> | undefined;

  constructor(svc: FamilyServicePort) {
    super();
    this.protocol = lowerProtocol(svc.protocol);
    const nameString = servicePortNameString(svc.name);
    // The port's id is that string: one copy of it.
    this.nameString = nameString === svc.id ? svc.id : nameString;
    // Kept while the port exists: flat, not the tree of the parts it was made from.
    this.cluster = flatString(N.clusterChainName(svc.name, this.protocol));
  }

  endpointChain(ep: EndpointInfo, svc: FamilyServicePort): string {
    // Made on first use: only ports with session affinity name their endpoint chains.
    this.endpoints ??= new EndpointMemo();
    let chain = this.endpoints.get(ep.ip, ep.port);
    if (chain === undefined) {
      chain = N.endpointChainName(svc.name, this.protocol, ep.ip, ep.port);
      this.endpoints.add(ep.ip, ep.port, chain);
    }
    return chain;
  }

  /** Forgets endpoints no longer present, so the memo does not grow with churn. */
  retain(endpoints: readonly EndpointInfo[]): void {
    if (this.endpoints && this.endpoints.size > endpoints.length) this.endpoints.retain(endpoints);
  }
}

/** The verdict of a port without endpoints: one string for every such port. */
const REJECT_VERDICT = `goto ${N.REJECT_CHAIN}`;

export function portRules(
  svc: FamilyServicePort,
  endpoints: readonly EndpointInfo[],
  names: PortNames,
  s: PortRuleSettings,
): PortRules {
  const p = planTrafficPolicy(svc, endpoints, s.topology);
  const { ipX } = s.words;
  const proto = names.protocol;
  const port = String(svc.port);
  const c = names.chains;
  const internalChain = svc.internalPolicyLocal ? c.local : c.cluster;
  const externalPolicyChain = svc.externalPolicyLocal ? c.local : c.cluster;
  const affinity = svc.sessionAffinity.type === "ClientIP";
  const comment = names.nameString;

  // What traffic that cannot be served meets: reject when there is no endpoint anywhere, drop
  // when a Local policy finds none on this node.
  const unservedVerdict = !p.hasEndpoints ? REJECT_VERDICT : "drop";

  const elements: PortElements[] = [{ container: N.CLUSTER_IPS_SET, firsts: [svc.clusterIP], rest: [] }];
  const rest = [proto, port];
  // A run of the port's addresses in `container`; none for an empty list.
  const addresses = (
    container: string,
    firsts: readonly string[],
    value: readonly string[],
    note?: string,
  ) => {
    if (firsts.length === 0) return;
    elements.push(
      note ? { container, firsts, rest, value, comment: note } : { container, firsts, rest, value },
    );
  };
  // One value per port, shared by its elements: the element store keeps each element's value
  // until the port changes, and a Service may have 20,000 externalIPs per port. Its verdict is
  // kept flat: a concatenation would be kept as a tree of its parts, twice the cells.
  const unserved = [unservedVerdict];
  // (Made only where used: a name of the port's other chains is made each time it is read.)
  const toExternal = svc.isExternal ? [flatString(`goto ${c.external}`)] : unserved;
  if (p.hasInternalEndpoints)
    addresses(N.SERVICE_IPS_MAP, [svc.clusterIP], [flatString(`goto ${internalChain}`)]);
  else addresses(N.NO_ENDPOINT_SERVICES_MAP, [svc.clusterIP], unserved, comment);
  if (p.hasEndpoints) addresses(N.SERVICE_IPS_MAP, svc.externalIPs, toExternal);
  if (!p.hasExternalEndpoints) addresses(N.NO_ENDPOINT_SERVICES_MAP, svc.externalIPs, unserved, comment);
  const usesFirewall = svc.loadBalancerVIPs.length > 0 && svc.loadBalancerSourceRanges.length > 0;
  const toFirewall = usesFirewall ? [flatString(`goto ${c.firewall}`)] : unserved;
  if (p.hasEndpoints) addresses(N.SERVICE_IPS_MAP, svc.loadBalancerVIPs, toExternal);
  if (usesFirewall) addresses(N.FIREWALL_IPS_MAP, svc.loadBalancerVIPs, toFirewall);
  if (!p.hasExternalEndpoints) addresses(N.NO_ENDPOINT_SERVICES_MAP, svc.loadBalancerVIPs, unserved, comment);
  if (svc.nodePort !== 0) {
    const nodePort = { firsts: [proto], rest: [String(svc.nodePort)] };
    // NodePorts are not subject to loadBalancerSourceRanges (as upstream).
    if (p.hasEndpoints) elements.push({ container: N.SERVICE_NODEPORTS_MAP, ...nodePort, value: toExternal });
    if (!p.hasExternalEndpoints)
      elements.push({ container: N.NO_ENDPOINT_NODEPORTS_MAP, ...nodePort, value: unserved, comment });
  }

  const chains: ChainContent[] = [];
  const rulesOf = new Map<string, RuleText[]>();
  const chain = (name: string): RuleText[] => {
    let rules = rulesOf.get(name);
    if (!rules) {
      rules = [];
      rulesOf.set(name, rules);
      chains.push({ name, rules });
    }
    return rules;
  };
  if (p.usesClusterPolicyChain) chain(c.cluster);
  if (p.usesLocalPolicyChain) chain(c.local);
  if (p.usesExternalTrafficChain) chain(c.external);
  if (usesFirewall) chain(c.firewall);

  if (p.usesExternalTrafficChain) {
    const ext = chain(c.external);
    if (!svc.externalPolicyLocal) {
      // Endpoints may be on other nodes: masquerade so replies come back through this one.
      ext.push({ rule: `mark set mark or ${s.mark}`, comment: "masquerade" });
    } else {
      if (s.localDetector.implemented) {
        // Pods on this node reach external addresses as if from outside, under neither policy.
        ext.push({
          rule: `${s.localDetector.ifLocalNFT.join(" ")} goto ${c.cluster}`,
          comment: "short-circuit pod traffic",
        });
      }
      // The node itself uses the external IP as source: masquerade, then any endpoint.
      ext.push({
        rule: `fib saddr type local mark set mark or ${s.mark}`,
        comment: "masquerade local traffic",
      });
      ext.push({ rule: `fib saddr type local goto ${c.cluster}`, comment: "short-circuit local traffic" });
    }
    if (p.hasExternalEndpoints) ext.push({ rule: `goto ${externalPolicyChain}` });
  }

  if (usesFirewall) {
    const sources = [...svc.loadBalancerSourceRanges];
    // A VIP bound on the node loops requests from the node back with the VIP as source.
    if (s.nodeIP && svc.loadBalancerSourceRanges.some((cidr) => cidrContains(cidr, s.nodeIP!)))
      sources.push(...svc.loadBalancerVIPs);
    chain(c.firewall).push({ rule: `${ipX} saddr != { ${sources.join(", ")} } drop` });
  }

  const affinitySets: NftSet[] = [];
  if (affinity) {
    for (const ep of p.allReachableEndpoints) {
      affinitySets.push({
        kind: "set",
        name: N.affinitySetOf(names.endpointChain(ep, svc)),
        type: s.words.addrType,
        // "dynamic" too: some kernels add it to a timeout set, and re-adding without it fails.
        flags: ["dynamic", "timeout"],
        timeoutSeconds: svc.sessionAffinity.timeoutSeconds,
      });
    }
  }

  const toEndpoints = (policyChain: string, eps: readonly EndpointInfo[]) => {
    const rules = chain(policyChain);
    const dnat = (ep: EndpointInfo) => `meta l4proto ${proto} dnat to ${ep.endpoint}`;
    if (affinity) {
      for (const ep of eps) {
        const chain = names.endpointChain(ep, svc);
        rules.push({ rule: `${ipX} saddr @${N.affinitySetOf(chain)} goto ${chain}` });
      }
    }
    // Endpoint i of n is taken with probability 1/(n-i) by the time its rule is reached, which
    // is 1/n overall. Upstream writes one `numgen random mod n map { ... }` (a vmap with
    // affinity) instead; every such anonymous map is a set of its own in the table, and loading
    // a table of them grows with the square of the Services (measured: 4,000 Services x 10 took
    // 22 s against 3.6 s as rules; 10,000 took over 200 s). Rules load in linear time and choose
    // the same way. One endpoint: its DNAT alone, as upstream's.
    eps.forEach((ep, i) => {
      const target = affinity ? `goto ${names.endpointChain(ep, svc)}` : dnat(ep);
      const left = eps.length - i;
      rules.push({ rule: left === 1 ? target : `numgen random mod ${left} 0 ${target}` });
    });
  };
  if (p.usesClusterPolicyChain) toEndpoints(c.cluster, p.clusterEndpoints);
  if (p.usesLocalPolicyChain) toEndpoints(c.local, p.localEndpoints);

  // With affinity, one chain per endpoint records the client before it DNATs.
  if (affinity) {
    for (const ep of p.allReachableEndpoints) {
      const epChain = names.endpointChain(ep, svc);
      chain(epChain).push(
        { rule: `update @${N.affinitySetOf(epChain)} { ${ipX} saddr }` },
        { rule: `meta l4proto ${proto} dnat to ${ep.endpoint}` },
      );
    }
  }
  // Hairpin: a local endpoint that reaches its own service is masqueraded (in postrouting, by
  // the set) so that its reply comes back through the DNAT.
  for (const ep of p.allReachableEndpoints) {
    if (ep.isLocal)
      elements.push({ container: N.HAIRPIN_SET, firsts: [ep.ip], rest: [ep.ip, proto, String(ep.port)] });
  }
  names.retain(p.allReachableEndpoints);

  const out: PortRules = {
    elements,
    chains,
    affinitySets,
    noLocalInternal: p.hasEndpoints && !p.hasInternalEndpoints,
    noLocalExternal: p.hasEndpoints && !p.hasExternalEndpoints,
  };
  checkWritable(out);
  return out;
}

/**
 * Throws HostInputError for any rule or element part the transaction would refuse, checked
 * with the same script-text functions it uses (chain and set names were checked when made).
 */
function checkWritable(out: PortRules): void {
  for (const c of out.chains) for (const r of c.rules) nftStatement(r.rule);
  for (const e of out.elements) {
    for (const k of e.firsts) nftElementPart(k, "element key");
    for (const k of e.rest) nftElementPart(k, "element key");
    for (const v of e.value ?? []) nftElementPart(v, "element value");
  }
}
