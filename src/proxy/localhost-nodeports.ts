// Whether IPv4 NodePorts are served on 127.0.0.0/8 ("localhost NodePorts"). One decision drives
// both halves that must never disagree: the net.ipv4.conf.all.route_localnet=1 sysctl, and the
// KUBE-FIREWALL rule that drops off-node packets to 127.0.0.0/8 which route_localnet would
// otherwise let in (CVE-2020-8558). Upstream (v1.31 iptables NewProxier) turns the feature on only
// when the flag allows it, the node proxies IPv4, and the IPv4 nodePortAddresses contain a
// loopback address (no IPv4 CIDR at all means "every address", loopback included).

import type { IPFamily } from "../util/net/family.ts";
import { NodePortAddresses, resolveNodePortAddresses } from "./nodeport-addresses.ts";

export interface LocalhostNodePortsInputs {
  /** iptables.localhostNodePorts (--iptables-localhost-nodeports). */
  readonly enabledByConfig: boolean;
  /** nodePortAddresses as configured ("primary" allowed). */
  readonly nodePortAddresses: readonly string[];
  readonly nodeIPs: Readonly<Partial<Record<IPFamily, string>>>;
  /** Whether an IPv4 proxier runs on this node (route_localnet is an IPv4-only knob). */
  readonly proxiesIPv4: boolean;
}

export interface LocalhostNodePorts {
  readonly enabled: boolean;
  /** Why, in words for the log. */
  readonly reason: string;
}

export function decideLocalhostNodePorts(i: LocalhostNodePortsInputs): LocalhostNodePorts {
  if (!i.enabledByConfig) {
    return {
      enabled: false,
      reason: "iptables.localhostNodePorts (--iptables-localhost-nodeports) is false",
    };
  }
  if (!i.proxiesIPv4) {
    return {
      enabled: false,
      reason: "this node proxies no IPv4, and localhost NodePorts exist for IPv4 only",
    };
  }
  const npa = new NodePortAddresses("IPv4", resolveNodePortAddresses(i.nodePortAddresses, i.nodeIPs));
  if (!npa.containsIPv4Loopback) {
    return {
      enabled: false,
      reason: `the IPv4 nodePortAddresses ${npa.toString()} contain no loopback address`,
    };
  }
  return {
    enabled: true,
    reason: `the IPv4 nodePortAddresses ${npa.toString()} include loopback and iptables.localhostNodePorts is true`,
  };
}
