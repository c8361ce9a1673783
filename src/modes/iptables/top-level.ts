// The rules that do not belong to any one service: masquerading (KUBE-POSTROUTING and
// KUBE-MARK-MASQ), forwarding (KUBE-FORWARD), kubelet's localnet guard (KUBE-FIREWALL), the
// tail rule of nat KUBE-SERVICES that hands NodePort traffic to KUBE-NODEPORTS, and the jumps
// from the built-in chains into ours.

import { comment } from "../../host/iptables/restore-text.ts";
import type { Table } from "../../host/iptables/types.ts";
import {
  chainLine,
  KUBE_EXTERNAL_SERVICES,
  KUBE_FIREWALL,
  KUBE_FORWARD,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
} from "../../proxy/netfilter/chains.ts";
import type { JumpChain } from "../../proxy/netfilter/jumps.ts";
import type { IPFamily } from "../../util/net/family.ts";

/** nfacct counter of packets KUBE-FORWARD drops as conntrack-INVALID (upstream's name). */
export const CT_STATE_INVALID_DROPPED_COUNTER = "ct_state_invalid_dropped_pkts";

/** Filter chains rewritten on every sync, in upstream's order. */
export const FILTER_TOP_LEVEL_CHAINS = [
  KUBE_SERVICES,
  KUBE_EXTERNAL_SERVICES,
  KUBE_FORWARD,
  KUBE_NODEPORTS,
  KUBE_PROXY_FIREWALL,
] as const;

/** Nat chains rewritten on every sync, in upstream's order. */
export const NAT_TOP_LEVEL_CHAINS = [
  KUBE_SERVICES,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_MARK_MASQ,
] as const;

export function topLevelChainLines(chains: readonly string[]): string[] {
  return chains.map(chainLine);
}

/**
 * route_localnet (needed for localhost NodePorts) would let off-node packets reach 127/8; this
 * rule, identical to kubelet's copy, drops them unless they belong to a NATed connection.
 */
export const BLOCK_LOCALNET_RULE = `-A ${KUBE_FIREWALL} -m comment --comment ${comment("block incoming localnet connections")} -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP`;

export interface ForwardSettings {
  readonly mark: string;
  /** nf_conntrack_tcp_be_liberal is set: INVALID packets are not dropped. */
  readonly conntrackTCPLiberal: boolean;
  /** The ct_state_invalid_dropped_pkts counter exists. */
  readonly countInvalidDrops: boolean;
}

export function forwardRules(s: ForwardSettings): string[] {
  const out: string[] = [];
  if (!s.conntrackTCPLiberal) {
    // Out-of-window packets would otherwise reach pods un-NATed and trigger resets.
    const counter = s.countInvalidDrops ? ` -m nfacct --nfacct-name ${CT_STATE_INVALID_DROPPED_COUNTER}` : "";
    out.push(`-A ${KUBE_FORWARD} -m conntrack --ctstate INVALID${counter} -j DROP`);
  }
  out.push(
    `-A ${KUBE_FORWARD} -m comment --comment ${comment("kubernetes forwarding rules")} -m mark --mark ${s.mark}/${s.mark} -j ACCEPT`,
  );
  out.push(
    `-A ${KUBE_FORWARD} -m comment --comment ${comment("kubernetes forwarding conntrack rule")} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
  );
  return out;
}

const NODEPORTS_TAIL_COMMENT = comment(
  "kubernetes service nodeports; NOTE: this must be the last rule in this chain",
);

/** With nodePortAddresses matching everything: any local destination, minus unusable loopback. */
export function nodePortsTailMatchAll(family: IPFamily, localhostNodePorts: boolean): string {
  // IPv6 localhost NodePorts never work; IPv4 ones only with route_localnet set.
  let exclude = "";
  if (family === "IPv6") exclude = " ! -d ::1/128";
  else if (!localhostNodePorts) exclude = " ! -d 127.0.0.0/8";
  return `-A ${KUBE_SERVICES} -m comment --comment ${NODEPORTS_TAIL_COMMENT} -m addrtype --dst-type LOCAL${exclude} -j ${KUBE_NODEPORTS}`;
}

/** With explicit nodePortAddresses: one tail rule per matching node address. */
export function nodePortsTailForIP(ip: string): string {
  return `-A ${KUBE_SERVICES} -m comment --comment ${NODEPORTS_TAIL_COMMENT} -d ${ip} -j ${KUBE_NODEPORTS}`;
}

const NEW_ONLY = ["-m", "conntrack", "--ctstate", "NEW"] as const;

/** Jumps from built-in chains, ensured (prepended) on full syncs only, in upstream's order. */
export const JUMP_CHAINS: readonly JumpChain[] = [
  jump("filter", KUBE_EXTERNAL_SERVICES, "INPUT", "kubernetes externally-visible service portals", NEW_ONLY),
  jump(
    "filter",
    KUBE_EXTERNAL_SERVICES,
    "FORWARD",
    "kubernetes externally-visible service portals",
    NEW_ONLY,
  ),
  jump("filter", KUBE_NODEPORTS, "INPUT", "kubernetes health check service ports", []),
  jump("filter", KUBE_SERVICES, "FORWARD", "kubernetes service portals", NEW_ONLY),
  jump("filter", KUBE_SERVICES, "OUTPUT", "kubernetes service portals", NEW_ONLY),
  jump("filter", KUBE_FORWARD, "FORWARD", "kubernetes forwarding rules", []),
  jump("filter", KUBE_PROXY_FIREWALL, "INPUT", "kubernetes load balancer firewall", NEW_ONLY),
  jump("filter", KUBE_PROXY_FIREWALL, "OUTPUT", "kubernetes load balancer firewall", NEW_ONLY),
  jump("filter", KUBE_PROXY_FIREWALL, "FORWARD", "kubernetes load balancer firewall", NEW_ONLY),
  jump("nat", KUBE_SERVICES, "OUTPUT", "kubernetes service portals", []),
  jump("nat", KUBE_SERVICES, "PREROUTING", "kubernetes service portals", []),
  jump("nat", KUBE_POSTROUTING, "POSTROUTING", "kubernetes postrouting rules", []),
  // Duplicates of kubelet's jumps, so the localnet guard works without a kubelet that makes them.
  jump("filter", KUBE_FIREWALL, "INPUT", "", []),
  jump("filter", KUBE_FIREWALL, "OUTPUT", "", []),
];

function jump(table: Table, dst: string, src: string, comment: string, extra: readonly string[]): JumpChain {
  return { table, dstChain: dst, srcChain: src, comment, extraArgs: extra };
}
