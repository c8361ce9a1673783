// The ipsets ipvs mode keeps, with upstream's (v1.31) names, types and comments. The names are
// shared with upstream kube-proxy: switching a node between the two must find the same sets, and
// the comments appear verbatim in the iptables rules that match them.

import { setName } from "../../host/ipset/restore-text.ts";
import type { IpsetSetSpec, IpsetType } from "../../host/ipset/types.ts";
import { comment } from "../../host/iptables/restore-text.ts";
import { type IPFamily, inetFamily } from "../../util/net/family.ts";

/** Identifies one set independently of the family prefix ("KUBE-" vs "KUBE-6-"). */
export type SetId =
  | "loopBack"
  | "clusterIP"
  | "externalIP"
  | "externalIPLocal"
  | "loadBalancer"
  | "loadBalancerFW"
  | "loadBalancerLocal"
  | "loadBalancerSourceIP"
  | "loadBalancerSourceCIDR"
  | "nodePortTCP"
  | "nodePortLocalTCP"
  | "nodePortUDP"
  | "nodePortLocalUDP"
  | "nodePortSCTP"
  | "nodePortLocalSCTP"
  | "healthCheckNodePort"
  | "ipvsIPs";

interface SetDefinition {
  readonly id: SetId;
  readonly name: string;
  readonly type: IpsetType;
  readonly comment: string;
}

/** In upstream's ipsetInfo order. */
export const SET_DEFINITIONS: readonly SetDefinition[] = [
  def(
    "loopBack",
    "KUBE-LOOP-BACK",
    "hash:ip,port,ip",
    "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose",
  ),
  def(
    "clusterIP",
    "KUBE-CLUSTER-IP",
    "hash:ip,port",
    "Kubernetes service cluster ip + port for masquerade purpose",
  ),
  def(
    "externalIP",
    "KUBE-EXTERNAL-IP",
    "hash:ip,port",
    "Kubernetes service external ip + port for masquerade and filter purpose",
  ),
  def(
    "externalIPLocal",
    "KUBE-EXTERNAL-IP-LOCAL",
    "hash:ip,port",
    "Kubernetes service external ip + port with externalTrafficPolicy=local",
  ),
  def("loadBalancer", "KUBE-LOAD-BALANCER", "hash:ip,port", "Kubernetes service lb portal"),
  def(
    "loadBalancerFW",
    "KUBE-LOAD-BALANCER-FW",
    "hash:ip,port",
    "Kubernetes service load balancer ip + port for load balancer with sourceRange",
  ),
  def(
    "loadBalancerLocal",
    "KUBE-LOAD-BALANCER-LOCAL",
    "hash:ip,port",
    "Kubernetes service load balancer ip + port with externalTrafficPolicy=local",
  ),
  def(
    "loadBalancerSourceIP",
    "KUBE-LOAD-BALANCER-SOURCE-IP",
    "hash:ip,port,ip",
    "Kubernetes service load balancer ip + port + source IP for packet filter purpose",
  ),
  def(
    "loadBalancerSourceCIDR",
    "KUBE-LOAD-BALANCER-SOURCE-CIDR",
    "hash:ip,port,net",
    "Kubernetes service load balancer ip + port + source cidr for packet filter purpose",
  ),
  def(
    "nodePortTCP",
    "KUBE-NODE-PORT-TCP",
    "bitmap:port",
    "Kubernetes nodeport TCP port for masquerade purpose",
  ),
  def(
    "nodePortLocalTCP",
    "KUBE-NODE-PORT-LOCAL-TCP",
    "bitmap:port",
    "Kubernetes nodeport TCP port with externalTrafficPolicy=local",
  ),
  def(
    "nodePortUDP",
    "KUBE-NODE-PORT-UDP",
    "bitmap:port",
    "Kubernetes nodeport UDP port for masquerade purpose",
  ),
  def(
    "nodePortLocalUDP",
    "KUBE-NODE-PORT-LOCAL-UDP",
    "bitmap:port",
    "Kubernetes nodeport UDP port with externalTrafficPolicy=local",
  ),
  // SCTP cannot use a bitmap:port set (no protocol in it): its entries carry every node IP.
  def(
    "nodePortSCTP",
    "KUBE-NODE-PORT-SCTP-HASH",
    "hash:ip,port",
    "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'",
  ),
  def(
    "nodePortLocalSCTP",
    "KUBE-NODE-PORT-LOCAL-SCTP-HASH",
    "hash:ip,port",
    "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'",
  ),
  def(
    "healthCheckNodePort",
    "KUBE-HEALTH-CHECK-NODE-PORT",
    "bitmap:port",
    "Kubernetes health check node port",
  ),
  def("ipvsIPs", "KUBE-IPVS-IPS", "hash:ip", "Addresses on the ipvs interface"),
];

function def(id: SetId, name: string, type: IpsetType, comment: string): SetDefinition {
  return { id, name, type, comment };
}

/** ipset's limit on set names (IPSET_MAXNAMELEN - 1). */
const MAX_SET_NAME = 31;

/**
 * The name of a set for a family. IPv6 sets are "KUBE-6-..." so both families can coexist on a
 * dual-stack node; upstream cuts the result to ipset's 31 characters, and so must we, or the
 * two implementations would not find each other's sets.
 */
export function familySetName(name: string, family: IPFamily): string {
  if (family === "IPv4" || !name.startsWith("KUBE-")) return name;
  return `KUBE-6-${name.slice("KUBE-".length)}`.slice(0, MAX_SET_NAME);
}

/** Upstream's defaults for every set it creates. */
const HASH_SIZE = 1024;
const MAX_ELEM = 65536;
const PORT_RANGE = "0-65535";

/** One family's set: the spec to create it with and its quoted comment for iptables rules. */
export interface FamilySet {
  readonly id: SetId;
  readonly spec: IpsetSetSpec;
  /** The comment as an iptables rule argument (restore-text's comment()). */
  readonly quotedComment: string;
}

export type SetCatalog = Readonly<Record<SetId, FamilySet>>;

/** Every set of one family, keyed by id. */
export function setCatalog(family: IPFamily): SetCatalog {
  const out = {} as Record<SetId, FamilySet>;
  for (const d of SET_DEFINITIONS) {
    const spec: IpsetSetSpec = {
      name: setName(familySetName(d.name, family)),
      type: d.type,
      family: inetFamily(family),
      comment: d.comment,
      ...(d.type === "bitmap:port" ? { range: PORT_RANGE } : { hashSize: HASH_SIZE, maxElem: MAX_ELEM }),
    };
    out[d.id] = { id: d.id, spec, quotedComment: comment(d.comment) };
  }
  return out;
}

/** The ids in upstream's order (set creation and sync order). */
export const SET_IDS: readonly SetId[] = SET_DEFINITIONS.map((d) => d.id);
