// What kube-proxy reads from its own Node: labels (topology), zone, pod CIDRs (--detect-local-mode
// NodeCIDR) and node IPs (which address family is primary, LoadBalancerSourceRanges checks).

import { platformIPFamily } from "../util/net/address.ts";
import type { NodeObject } from "./objects.ts";

export const LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone";

export interface NodeIPs {
  /** Primary first, then at most one address of the other family (upstream's GetNodeHostIPs). */
  readonly ordered: readonly string[];
  readonly ipv4?: string;
  readonly ipv6?: string;
}

export interface NodeInfo {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly zone?: string;
  readonly podCIDRs: readonly string[];
  readonly ips: NodeIPs;
}

/** InternalIP addresses first, then ExternalIP; the first is primary, the first of the other family second. */
export function nodeIPs(node: NodeObject): NodeIPs {
  const addresses = node.status?.addresses ?? [];
  const candidates = [
    ...addresses.filter((a) => a.type === "InternalIP"),
    ...addresses.filter((a) => a.type === "ExternalIP"),
  ]
    .map((a) => a.address?.trim() ?? "")
    .filter((a) => platformIPFamily(a) !== undefined);
  const ipv4 = candidates.find((a) => platformIPFamily(a) === "IPv4");
  const ipv6 = candidates.find((a) => platformIPFamily(a) === "IPv6");
  const primary = candidates[0];
  const ordered =
    primary === undefined ? [] : platformIPFamily(primary) === "IPv4" ? [primary, ipv6] : [primary, ipv4];
  return {
    ordered: ordered.filter((a): a is string => a !== undefined),
    ...(ipv4 ? { ipv4 } : {}),
    ...(ipv6 ? { ipv6 } : {}),
  };
}

/** spec.podCIDRs when set, else the older single spec.podCIDR. */
export function nodePodCIDRs(node: NodeObject): string[] {
  const list = (node.spec?.podCIDRs ?? []).filter((c) => c !== "");
  if (list.length) return list;
  return node.spec?.podCIDR ? [node.spec.podCIDR] : [];
}

export function nodeInfo(node: NodeObject): NodeInfo {
  const labels = { ...(node.metadata?.labels ?? {}) };
  const zone = labels[LABEL_TOPOLOGY_ZONE];
  return {
    name: node.metadata?.name ?? "",
    labels,
    ...(zone ? { zone } : {}),
    podCIDRs: nodePodCIDRs(node),
    ips: nodeIPs(node),
  };
}
