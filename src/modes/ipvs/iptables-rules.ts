// The small iptables rule set ipvs mode still needs (upstream writeIptablesRules, v1.31):
// masquerading decided by ipset matches, the NodePort and LoadBalancer marks, source-range
// filtering, and the filters that keep VIPs from exposing host ports. Its size does not depend
// on the number of Services — the sets carry that — so it is rewritten whole on every sync.

import { chainName, comment } from "../../host/iptables/restore-text.ts";
import type { RulePosition, Table } from "../../host/iptables/types.ts";
import type { LocalTrafficDetector } from "../../proxy/local-detect.ts";
import {
  chainLine,
  chainsInSave,
  KUBE_FORWARD,
  KUBE_MARK_MASQ,
  KUBE_POSTROUTING,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
} from "../../proxy/netfilter/chains.ts";
import type { JumpChain } from "../../proxy/netfilter/jumps.ts";
import { masqueradeRules } from "../../proxy/netfilter/masquerade.ts";
import type { IPFamily } from "../../util/net/family.ts";
import type { SetCatalog, SetId } from "./ipsets.ts";

export const KUBE_NODE_PORT = "KUBE-NODE-PORT";
export const KUBE_LOAD_BALANCER = "KUBE-LOAD-BALANCER";
export const KUBE_SOURCE_RANGES_FIREWALL = "KUBE-SOURCE-RANGES-FIREWALL";
export const KUBE_IPVS_FILTER = "KUBE-IPVS-FILTER";
export const KUBE_IPVS_OUT_FILTER = "KUBE-IPVS-OUT-FILTER";

/** Chains ipvs mode owns, per table, in upstream's order (iptablesChains). */
export const NAT_CHAINS = [
  KUBE_SERVICES,
  KUBE_POSTROUTING,
  KUBE_NODE_PORT,
  KUBE_LOAD_BALANCER,
  KUBE_MARK_MASQ,
];
export const FILTER_CHAINS = [
  KUBE_FORWARD,
  KUBE_NODE_PORT,
  KUBE_PROXY_FIREWALL,
  KUBE_SOURCE_RANGES_FIREWALL,
  KUBE_IPVS_FILTER,
  KUBE_IPVS_OUT_FILTER,
];

/** Jumps from the built-in chains (iptablesJumpChain), prepended on full syncs. */
export const IPVS_JUMP_CHAINS: readonly JumpChain[] = [
  jump("nat", "OUTPUT", KUBE_SERVICES, "kubernetes service portals"),
  jump("nat", "PREROUTING", KUBE_SERVICES, "kubernetes service portals"),
  jump("nat", "POSTROUTING", KUBE_POSTROUTING, "kubernetes postrouting rules"),
  jump("filter", "FORWARD", KUBE_FORWARD, "kubernetes forwarding rules"),
  jump("filter", "INPUT", KUBE_NODE_PORT, "kubernetes health check rules"),
  jump("filter", "INPUT", KUBE_PROXY_FIREWALL, "kube-proxy firewall rules"),
  jump("filter", "FORWARD", KUBE_PROXY_FIREWALL, "kube-proxy firewall rules"),
  jump("filter", "INPUT", KUBE_IPVS_FILTER, "kubernetes ipvs access filter"),
  jump("filter", "OUTPUT", KUBE_IPVS_OUT_FILTER, "kubernetes ipvs access filter"),
];

/** Jump rules are prepended, as upstream's EnsureRule(Prepend, ...) does. */
export const JUMP_POSITION: RulePosition = "prepend";

/** Whether one table's iptables-save output (its ":CHAIN" lines will do) declares a chain of ours. */
export function declaresOurChains(table: Table, save: string): boolean {
  const ours = new Set(table === "nat" ? NAT_CHAINS : table === "filter" ? FILTER_CHAINS : []);
  return chainsInSave(save).some((chain) => ours.has(chain));
}

/**
 * The baseline of a node that has none of our chains, as one `iptables-restore --noflush`
 * input: our chains declared (so created), then the jumps into them in the order, and at the
 * position, ensureRule would add them. None can exist already: no rule can jump to a chain
 * that does not exist.
 */
export function freshBaselineRestore(): string {
  const verb = JUMP_POSITION === "prepend" ? "-I" : "-A";
  const jumpLine = (j: JumpChain) => {
    const args = [...j.extraArgs];
    if (j.comment !== "") args.push("-m", "comment", "--comment", comment(j.comment));
    return `${verb} ${chainName(j.srcChain)} ${[...args, "-j", chainName(j.dstChain)].join(" ")}`;
  };
  const table = (name: Table, chains: readonly string[]) => [
    `*${name}`,
    ...chains.map(chainLine),
    ...IPVS_JUMP_CHAINS.filter((j) => j.table === name).map(jumpLine),
    "COMMIT",
  ];
  return [...table("nat", NAT_CHAINS), ...table("filter", FILTER_CHAINS), ""].join("\n");
}

function jump(table: Table, src: string, dst: string, comment: string): JumpChain {
  return { table, srcChain: src, dstChain: dst, comment, extraArgs: [] };
}

/**
 * Set-driven jumps (ipsetWithIptablesChain), written only while the set has members. The Local
 * sets come before their cluster-wide twins: RETURN must win before the masquerade mark.
 */
const SET_JUMPS: readonly {
  readonly set: SetId;
  readonly table: Table;
  readonly from: string;
  readonly to: string;
  readonly match: string;
  readonly protocol?: string;
}[] = [
  { set: "loopBack", table: "nat", from: KUBE_POSTROUTING, to: "MASQUERADE", match: "dst,dst,src" },
  { set: "loadBalancer", table: "nat", from: KUBE_SERVICES, to: KUBE_LOAD_BALANCER, match: "dst,dst" },
  { set: "loadBalancerLocal", table: "nat", from: KUBE_LOAD_BALANCER, to: "RETURN", match: "dst,dst" },
  {
    set: "nodePortLocalTCP",
    table: "nat",
    from: KUBE_NODE_PORT,
    to: "RETURN",
    match: "dst",
    protocol: "tcp",
  },
  {
    set: "nodePortTCP",
    table: "nat",
    from: KUBE_NODE_PORT,
    to: KUBE_MARK_MASQ,
    match: "dst",
    protocol: "tcp",
  },
  {
    set: "nodePortLocalUDP",
    table: "nat",
    from: KUBE_NODE_PORT,
    to: "RETURN",
    match: "dst",
    protocol: "udp",
  },
  {
    set: "nodePortUDP",
    table: "nat",
    from: KUBE_NODE_PORT,
    to: KUBE_MARK_MASQ,
    match: "dst",
    protocol: "udp",
  },
  {
    set: "nodePortLocalSCTP",
    table: "nat",
    from: KUBE_NODE_PORT,
    to: "RETURN",
    match: "dst,dst",
    protocol: "sctp",
  },
  {
    set: "nodePortSCTP",
    table: "nat",
    from: KUBE_NODE_PORT,
    to: KUBE_MARK_MASQ,
    match: "dst,dst",
    protocol: "sctp",
  },
  {
    set: "loadBalancerFW",
    table: "filter",
    from: KUBE_PROXY_FIREWALL,
    to: KUBE_SOURCE_RANGES_FIREWALL,
    match: "dst,dst",
  },
  {
    set: "loadBalancerSourceCIDR",
    table: "filter",
    from: KUBE_SOURCE_RANGES_FIREWALL,
    to: "RETURN",
    match: "dst,dst,src",
  },
  {
    set: "loadBalancerSourceIP",
    table: "filter",
    from: KUBE_SOURCE_RANGES_FIREWALL,
    to: "RETURN",
    match: "dst,dst,src",
  },
];

export interface IpvsRuleSettings {
  readonly family: IPFamily;
  readonly sets: SetCatalog;
  /** Sets with members this sync. */
  readonly nonEmpty: ReadonlySet<SetId>;
  /** "0x00004000". */
  readonly mark: string;
  readonly masqueradeAll: boolean;
  readonly localDetector: LocalTrafficDetector;
  readonly randomFully: boolean;
  /** KUBE-IPVS-OUT-FILTER drops, already rendered (sorted for a stable payload). */
  readonly noNodeAccessRules: readonly string[];
}

interface Tables {
  readonly nat: string[];
  readonly filter: string[];
}

/** The whole iptables-restore input (nat then filter), for one --noflush restore. */
export function renderIpvsRules(s: IpvsRuleSettings): string {
  const t: Tables = { nat: [], filter: [] };
  // Connections to localhost never reach a Service here.
  t.nat.push(`-A ${KUBE_SERVICES} -s ${s.family === "IPv6" ? "::1/128" : "127.0.0.0/8"} -j RETURN`);
  writeSetJumps(s, t);
  writeClusterIPMasquerade(s, t);
  writeExternalIPRules(s, t, "externalIP", true);
  writeExternalIPRules(s, t, "externalIPLocal", false);
  t.nat.push(`-A ${KUBE_SERVICES} -m addrtype --dst-type LOCAL -j ${KUBE_NODE_PORT}`);
  t.nat.push(`-A ${KUBE_LOAD_BALANCER} -j ${KUBE_MARK_MASQ}`);
  t.filter.push(`-A ${KUBE_SOURCE_RANGES_FIREWALL} -j DROP`);
  t.filter.push(...s.noNodeAccessRules);
  writeAcceptIPVSTraffic(s, t);
  writeFilterRules(s, t);
  t.nat.push(...masqueradeRules(s.mark, s.randomFully));
  return [
    "*nat",
    ...NAT_CHAINS.map(chainLine),
    ...t.nat,
    "COMMIT",
    "*filter",
    ...FILTER_CHAINS.map(chainLine),
    ...t.filter,
    "COMMIT",
    "",
  ].join("\n");
}

function setMatch(s: IpvsRuleSettings, id: SetId): string {
  const set = s.sets[id];
  return `-m comment --comment ${set.quotedComment} -m set --match-set ${set.spec.name}`;
}

function writeSetJumps(s: IpvsRuleSettings, t: Tables): void {
  for (const j of SET_JUMPS) {
    if (!s.nonEmpty.has(j.set)) continue;
    const proto = j.protocol ? ` -p ${j.protocol}` : "";
    t[j.table as keyof Tables].push(`-A ${j.from}${proto} ${setMatch(s, j.set)} ${j.match} -j ${j.to}`);
  }
}

/**
 * Off-node traffic to a cluster IP is masqueraded (replies must come back through this node).
 * Without a way to tell local Pods apart, upstream masquerades node-originated connections whose
 * source is itself a VIP (the kernel picks a kube-ipvs0 address as source for VIP-to-VIP).
 */
function writeClusterIPMasquerade(s: IpvsRuleSettings, t: Tables): void {
  if (!s.nonEmpty.has("clusterIP")) return;
  const head = `-A ${KUBE_SERVICES} ${setMatch(s, "clusterIP")}`;
  if (s.masqueradeAll) t.nat.push(`${head} dst,dst -j ${KUBE_MARK_MASQ}`);
  else if (s.localDetector.implemented)
    t.nat.push(`${head} dst,dst ${s.localDetector.ifNotLocal.join(" ")} -j ${KUBE_MARK_MASQ}`);
  else t.nat.push(`${head} src,dst -j ${KUBE_MARK_MASQ}`);
}

/**
 * External IPs: masqueraded unless Local policy, and accepted when they come from off the node
 * (not bridged from a Pod, not locally originated) or are addressed to a local IP.
 */
function writeExternalIPRules(s: IpvsRuleSettings, t: Tables, id: SetId, masquerade: boolean): void {
  if (!s.nonEmpty.has(id)) return;
  const head = `-A ${KUBE_SERVICES} ${setMatch(s, id)} dst,dst`;
  if (masquerade) t.nat.push(`${head} -j ${KUBE_MARK_MASQ}`);
  t.nat.push(`${head} -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT`);
  t.nat.push(`${head} -m addrtype --dst-type LOCAL -j ACCEPT`);
}

/** Last in KUBE-SERVICES: VIP traffic is accepted so later rules cannot break IPVS. */
function writeAcceptIPVSTraffic(s: IpvsRuleSettings, t: Tables): void {
  for (const id of ["clusterIP", "loadBalancer"] as const) {
    if (!s.nonEmpty.has(id)) continue;
    t.nat.push(`-A ${KUBE_SERVICES} -m set --match-set ${s.sets[id].spec.name} dst,dst -j ACCEPT`);
  }
}

function writeFilterRules(s: IpvsRuleSettings, t: Tables): void {
  const name = (id: SetId) => s.sets[id].spec.name;
  t.filter.push(
    `-A ${KUBE_FORWARD} -m comment --comment ${comment("kubernetes forwarding rules")} -m mark --mark ${s.mark}/${s.mark} -j ACCEPT`,
    `-A ${KUBE_FORWARD} -m comment --comment ${comment("kubernetes forwarding conntrack rule")} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
    `-A ${KUBE_NODE_PORT} ${setMatch(s, "healthCheckNodePort")} dst -j ACCEPT`,
    // VIPs are local addresses: without these, any host port would answer on every VIP
    // (kubernetes#72236). Service ports pass; anything else new to a VIP is refused.
    `-A ${KUBE_IPVS_FILTER} -m set --match-set ${name("loadBalancer")} dst,dst -j RETURN`,
    `-A ${KUBE_IPVS_FILTER} -m set --match-set ${name("clusterIP")} dst,dst -j RETURN`,
    `-A ${KUBE_IPVS_FILTER} -m set --match-set ${name("externalIP")} dst,dst -j RETURN`,
    `-A ${KUBE_IPVS_FILTER} -m set --match-set ${name("externalIPLocal")} dst,dst -j RETURN`,
    `-A ${KUBE_IPVS_FILTER} -m set --match-set ${name("healthCheckNodePort")} dst -j RETURN`,
    `-A ${KUBE_IPVS_FILTER} -m conntrack --ctstate NEW -m set --match-set ${name("ipvsIPs")} dst -j REJECT`,
  );
}
