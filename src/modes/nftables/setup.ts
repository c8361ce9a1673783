// The fixed part of a `kube-proxy` table, written at the start of every full sync: the table,
// its base chains (flushed and refilled), the jumps from them, the dispatch and no-endpoint
// maps, masquerading (the mark, the hairpin set, off-cluster ClusterIP traffic), the checks of
// ClusterIPs and ServiceCIDRs and the node's NodePort addresses; and the removal of what earlier
// layouts had that this one has not. Pure: it only adds to a transaction.

import type { NftTransaction } from "../../host/nft/transaction.ts";
import type { NftChainType, NftHook } from "../../host/nft/types.ts";
import { type IPFamily, type NftIPFamily, nftFamily } from "../../util/net/family.ts";
import * as N from "./names.ts";

// Numeric priorities: names such as "dstnat" are valid only for some hooks (nft rejects
// "dstnat" on output in the ip family), numbers everywhere.
const DSTNAT = -100;
const FILTER = 0;
const SRCNAT = 100;

interface BaseChain {
  readonly name: string;
  readonly type: NftChainType;
  readonly hook: NftHook;
  readonly priority: number;
}

/**
 * The firewall check sees pre-DNAT destinations (a load balancer IP), so it runs just before
 * DNAT; every other check runs at the usual filter priority, after DNAT and after other
 * firewalls' DNAT (since upstream 1.34: a packet the node sends to a load balancer IP whose
 * Local Service has no endpoint here is DNATed to a remote endpoint first, not dropped).
 */
export const BASE_CHAINS: readonly BaseChain[] = [
  { name: N.FILTER_PREROUTING_PRE_DNAT, type: "filter", hook: "prerouting", priority: DSTNAT - 10 },
  { name: N.FILTER_OUTPUT_PRE_DNAT, type: "filter", hook: "output", priority: DSTNAT - 10 },
  { name: N.FILTER_FORWARD, type: "filter", hook: "forward", priority: FILTER },
  { name: N.FILTER_INPUT, type: "filter", hook: "input", priority: FILTER },
  { name: N.FILTER_OUTPUT, type: "filter", hook: "output", priority: FILTER },
  { name: N.NAT_OUTPUT, type: "nat", hook: "output", priority: DSTNAT },
  { name: N.NAT_POSTROUTING, type: "nat", hook: "postrouting", priority: SRCNAT },
  { name: N.NAT_PREROUTING, type: "nat", hook: "prerouting", priority: DSTNAT },
];

interface Jump {
  readonly to: string;
  readonly from: string;
  readonly newOnly: boolean;
}

// reject is only allowed from input, forward and output on kernels before 5.9: the endpoint
// checks hang there rather than off prerouting, where the firewall check is. Upstream's order.
const JUMPS: readonly Jump[] = [
  { to: N.NODEPORT_ENDPOINTS_CHECK, from: N.FILTER_INPUT, newOnly: true },
  { to: N.SERVICE_ENDPOINTS_CHECK, from: N.FILTER_INPUT, newOnly: true },
  { to: N.SERVICE_ENDPOINTS_CHECK, from: N.FILTER_FORWARD, newOnly: true },
  { to: N.SERVICE_ENDPOINTS_CHECK, from: N.FILTER_OUTPUT, newOnly: true },
  { to: N.FIREWALL_CHECK, from: N.FILTER_PREROUTING_PRE_DNAT, newOnly: true },
  { to: N.FIREWALL_CHECK, from: N.FILTER_OUTPUT_PRE_DNAT, newOnly: true },
  { to: N.SERVICES_CHAIN, from: N.NAT_OUTPUT, newOnly: false },
  { to: N.SERVICES_CHAIN, from: N.NAT_PREROUTING, newOnly: false },
  { to: N.MASQUERADING_CHAIN, from: N.NAT_POSTROUTING, newOnly: false },
  { to: N.CLUSTER_IPS_CHECK, from: N.FILTER_FORWARD, newOnly: true },
  { to: N.CLUSTER_IPS_CHECK, from: N.FILTER_OUTPUT, newOnly: true },
];

/** The element containers every full sync empties (and the element store then forgets). */
export const ELEMENT_CONTAINERS = [
  { kind: "set", name: N.CLUSTER_IPS_SET },
  { kind: "map", name: N.SERVICE_IPS_MAP },
  { kind: "map", name: N.FIREWALL_IPS_MAP },
  { kind: "map", name: N.NO_ENDPOINT_SERVICES_MAP },
  { kind: "map", name: N.NO_ENDPOINT_NODEPORTS_MAP },
  { kind: "map", name: N.SERVICE_NODEPORTS_MAP },
  { kind: "set", name: N.HAIRPIN_SET },
] as const;

export interface FamilyWords {
  /** "ip" or "ip6": the payload expression of addresses. */
  readonly ipX: NftIPFamily;
  /** The address type of sets and map keys. */
  readonly addrType: "ipv4_addr" | "ipv6_addr";
  /** Destination is not loopback (NodePorts never answer there). */
  readonly noLocalhost: string;
}

export function familyWords(family: IPFamily): FamilyWords {
  const ipX = nftFamily(family);
  return family === "IPv4"
    ? { ipX, addrType: "ipv4_addr", noLocalhost: `${ipX} daddr != 127.0.0.0/8` }
    : { ipX, addrType: "ipv6_addr", noLocalhost: `${ipX} daddr != ::1` };
}

/** The type of each set and map the fixed part makes, by name (what its elements are made of). */
export function containerTypes(w: FamilyWords): ReadonlyMap<string, string> {
  const serviceKey = `${w.addrType} . inet_proto . inet_service : verdict`;
  const nodePortKey = "inet_proto . inet_service : verdict";
  return new Map([
    [N.HAIRPIN_SET, `${w.addrType} . ${w.addrType} . inet_proto . inet_service`],
    [N.CLUSTER_IPS_SET, w.addrType],
    [N.NODEPORT_IPS_SET, w.addrType],
    [N.NO_ENDPOINT_SERVICES_MAP, serviceKey],
    [N.NO_ENDPOINT_NODEPORTS_MAP, nodePortKey],
    [N.FIREWALL_IPS_MAP, serviceKey],
    [N.SERVICE_IPS_MAP, serviceKey],
    [N.SERVICE_NODEPORTS_MAP, nodePortKey],
  ]);
}

export interface SetupSettings {
  readonly family: IPFamily;
  /** The masquerade mark, e.g. "0x004000". */
  readonly mark: string;
  /** Masquerade every connection to a ClusterIP (else only those from outside the cluster). */
  readonly masqueradeAll: boolean;
  /** How traffic from outside the cluster looks ("ip saddr != 10.0.0.0/8"); undefined: unknown. */
  readonly ifNotLocal: string | undefined;
  /** The addresses that take NodePorts; undefined when every local address does. */
  readonly nodePortIPs: readonly string[] | undefined;
  /** Service CIDRs of this family: traffic to an unallocated address in them is dropped. */
  readonly serviceCIDRs: readonly string[];
  /**
   * First sync of this process: the base chains are deleted and re-created once, so that a
   * table left by another version with other chain properties (priority) cannot fail the sync.
   */
  readonly recreateBaseChains: boolean;
}

/**
 * Adds the chain and empties it. `mayExist` false (the chain was listed as absent just before):
 * no flush, as there is nothing to empty; at 10,000 Services that is 110,000 lines less.
 */
export function ensureChain(tx: NftTransaction, name: string, comment?: string, mayExist = true): void {
  tx.add({ kind: "chain", name, ...(comment ? { comment } : {}) });
  if (mayExist) tx.flush({ kind: "chain", name });
}

export function writeSetup(tx: NftTransaction, s: SetupSettings): void {
  const w = familyWords(s.family);
  const types = containerTypes(w);
  const typeOf = (name: string): string => types.get(name)!;
  tx.add({ kind: "table", comment: "rules for kube-proxy" });
  if (s.recreateBaseChains) {
    // Base chains of earlier layouts go too (nothing jumps to a base chain, so they always can).
    for (const name of N.OBSOLETE_BASE_CHAINS) {
      tx.add({ kind: "chain", name });
      tx.delete({ kind: "chain", name });
    }
    for (const bc of BASE_CHAINS) {
      tx.add({ kind: "chain", name: bc.name });
      tx.delete({ kind: "chain", name: bc.name });
    }
  }
  for (const bc of BASE_CHAINS) {
    const chain = {
      kind: "chain",
      name: bc.name,
      base: { type: bc.type, hook: bc.hook, priority: bc.priority },
    } as const;
    tx.add(chain);
    tx.flush(chain);
  }
  const made = new Set<string>();
  const ensureOnce = (name: string) => {
    if (made.has(name)) return;
    made.add(name);
    ensureChain(tx, name);
  };
  for (const j of JUMPS) {
    ensureOnce(j.to);
    tx.add({ kind: "rule", chain: j.from, rule: `${j.newOnly ? "ct state new " : ""}jump ${j.to}` });
  }
  for (const name of [N.SERVICES_CHAIN, N.CLUSTER_IPS_CHECK, N.MASQUERADING_CHAIN]) ensureOnce(name);

  tx.add({
    kind: "set",
    name: N.HAIRPIN_SET,
    type: typeOf(N.HAIRPIN_SET),
    comment: "service hairpin connections",
  });
  // The mark is cleared as it is acted on: a VXLAN device may hand the same packet on.
  tx.add({
    kind: "rule",
    chain: N.MASQUERADING_CHAIN,
    rule: `mark and ${s.mark} != 0 mark set mark xor ${s.mark} masquerade fully-random`,
  });
  // An endpoint that reached itself through a service: masqueraded so its reply comes back here.
  tx.add({
    kind: "rule",
    chain: N.MASQUERADING_CHAIN,
    rule: `ct status dnat ${w.ipX} saddr . ${w.ipX} daddr . meta l4proto . th dport @${N.HAIRPIN_SET} masquerade fully-random`,
  });

  tx.add({
    kind: "set",
    name: N.CLUSTER_IPS_SET,
    type: typeOf(N.CLUSTER_IPS_SET),
    comment: "Active ClusterIPs",
  });
  writeClusterIPsCheckRules(tx, w, s.serviceCIDRs);

  // add then delete: deleting alone fails when the set is not there.
  const nodePortIPs = { kind: "set", name: N.NODEPORT_IPS_SET, type: typeOf(N.NODEPORT_IPS_SET) } as const;
  tx.add({ ...nodePortIPs, comment: "IPs that accept NodePort traffic" });
  if (s.nodePortIPs === undefined) tx.delete(nodePortIPs);
  else {
    tx.flush(nodePortIPs);
    for (const ip of s.nodePortIPs) tx.add({ kind: "element", container: N.NODEPORT_IPS_SET, key: [ip] });
  }

  tx.add({
    kind: "map",
    name: N.NO_ENDPOINT_SERVICES_MAP,
    type: typeOf(N.NO_ENDPOINT_SERVICES_MAP),
    comment: "vmap to drop or reject packets to services with no endpoints",
  });
  tx.add({
    kind: "map",
    name: N.NO_ENDPOINT_NODEPORTS_MAP,
    type: typeOf(N.NO_ENDPOINT_NODEPORTS_MAP),
    comment: "vmap to drop or reject packets to service nodeports with no endpoints",
  });
  tx.add({
    kind: "chain",
    name: N.REJECT_CHAIN,
    comment: "helper for @no-endpoint-services / @no-endpoint-nodeports",
  });
  tx.flush({ kind: "chain", name: N.REJECT_CHAIN });
  tx.add({ kind: "rule", chain: N.REJECT_CHAIN, rule: "reject" });

  const tuple = `${w.ipX} daddr . meta l4proto . th dport`;
  tx.add({
    kind: "rule",
    chain: N.SERVICE_ENDPOINTS_CHECK,
    rule: `${tuple} vmap @${N.NO_ENDPOINT_SERVICES_MAP}`,
  });
  const nodePortDest = s.nodePortIPs === undefined ? w.noLocalhost : `${w.ipX} daddr @${N.NODEPORT_IPS_SET}`;
  tx.add({
    kind: "rule",
    chain: N.NODEPORT_ENDPOINTS_CHECK,
    rule: `${nodePortDest} meta l4proto . th dport vmap @${N.NO_ENDPOINT_NODEPORTS_MAP}`,
  });

  tx.add({
    kind: "map",
    name: N.FIREWALL_IPS_MAP,
    type: typeOf(N.FIREWALL_IPS_MAP),
    comment: "destinations that are subject to LoadBalancerSourceRanges",
  });
  ensureOnce(N.FIREWALL_CHECK);
  tx.add({ kind: "rule", chain: N.FIREWALL_CHECK, rule: `${tuple} vmap @${N.FIREWALL_IPS_MAP}` });

  tx.add({
    kind: "map",
    name: N.SERVICE_IPS_MAP,
    type: typeOf(N.SERVICE_IPS_MAP),
    comment: "ClusterIP, ExternalIP and LoadBalancer IP traffic",
  });
  tx.add({
    kind: "map",
    name: N.SERVICE_NODEPORTS_MAP,
    type: typeOf(N.SERVICE_NODEPORTS_MAP),
    comment: "NodePort traffic",
  });
  // Off-cluster traffic to a ClusterIP (a route to the service range via this node) may leave
  // the node again: masqueraded so that replies come back here.
  if (s.masqueradeAll) {
    tx.add({
      kind: "rule",
      chain: N.SERVICES_CHAIN,
      rule: `${w.ipX} daddr @${N.CLUSTER_IPS_SET} mark set mark or ${s.mark}`,
      comment: "masquerade all clusterIP traffic",
    });
  } else if (s.ifNotLocal !== undefined) {
    tx.add({
      kind: "rule",
      chain: N.SERVICES_CHAIN,
      rule: `${w.ipX} daddr @${N.CLUSTER_IPS_SET} ${s.ifNotLocal} mark set mark or ${s.mark}`,
      comment: "masquerade clusterIP traffic from outside cluster",
    });
  }
  tx.add({ kind: "rule", chain: N.SERVICES_CHAIN, rule: `${tuple} vmap @${N.SERVICE_IPS_MAP}` });
  const nodePortMatch =
    s.nodePortIPs === undefined
      ? `fib daddr type local ${w.noLocalhost}`
      : `${w.ipX} daddr @${N.NODEPORT_IPS_SET}`;
  tx.add({
    kind: "rule",
    chain: N.SERVICES_CHAIN,
    rule: `${nodePortMatch} meta l4proto . th dport vmap @${N.SERVICE_NODEPORTS_MAP}`,
  });

  for (const c of ELEMENT_CONTAINERS) tx.flush({ kind: c.kind, name: c.name });
}

/**
 * The rules of cluster-ips-check (an empty chain): a ClusterIP's unused ports are rejected, an
 * address of a ServiceCIDR that no Service holds is dropped. The CIDRs joined as upstream's.
 */
export function writeClusterIPsCheckRules(
  tx: NftTransaction,
  w: FamilyWords,
  serviceCIDRs: readonly string[],
): void {
  tx.add({
    kind: "rule",
    chain: N.CLUSTER_IPS_CHECK,
    rule: `${w.ipX} daddr @${N.CLUSTER_IPS_SET} reject`,
    comment: "Reject traffic to invalid ports of ClusterIPs",
  });
  if (serviceCIDRs.length > 0) {
    tx.add({
      kind: "rule",
      chain: N.CLUSTER_IPS_CHECK,
      rule: `${w.ipX} daddr { ${serviceCIDRs.join(",")} } drop`,
      comment: "Drop traffic to unallocated ClusterIPs",
    });
  }
}

/**
 * Deletes the fixed chains of earlier layouts that a listing found, once nothing refers to
 * them any more: written after every chain that might jump to them was flushed.
 */
export function deleteObsoleteChains(tx: NftTransaction, listedChains: readonly string[]): void {
  const listed = new Set(listedChains);
  for (const name of N.OBSOLETE_CHAINS) if (listed.has(name)) tx.delete({ kind: "chain", name });
}
