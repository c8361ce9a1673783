// --nodeport-addresses for one IP family: which of the node's addresses accept NodePort
// traffic. Mirrors upstream's NodePortAddresses: no CIDR of the family means every local address
// ("match all", which the iptables proxier expresses with `-m addrtype --dst-type LOCAL`), and
// "primary" stands for the node's primary IPs, resolved once at startup.

import {
  type IPNet,
  isLoopbackLenient,
  netContains,
  parseCIDRLenient,
  parseIPLenient,
  parseNetLenient,
} from "../util/net/address.ts";
import type { IPFamily } from "../util/net/family.ts";

export const NODEPORT_ADDRESSES_PRIMARY = "primary";

const IPV4_ZERO_CIDR = "0.0.0.0/0";
const IPV6_ZERO_CIDR = "::/0";

/** "192.0.2.10/24" (as `ip -o addr` prints) or a bare address: the address part. */
function addressPart(text: string): string {
  const slash = text.indexOf("/");
  return slash < 0 ? text : text.slice(0, slash);
}

/**
 * Replaces the single keyword "primary" by the node's primary IPs as host CIDRs (loopback
 * excluded, as upstream does); any other value is returned unchanged.
 */
export function resolveNodePortAddresses(
  configured: readonly string[],
  nodeIPs: Readonly<Partial<Record<IPFamily, string>>>,
): string[] {
  if (configured.length !== 1 || configured[0] !== NODEPORT_ADDRESSES_PRIMARY) return [...configured];
  const out: string[] = [];
  const v4 = nodeIPs.IPv4;
  const v6 = nodeIPs.IPv6;
  if (v4 && !isLoopbackLenient(v4)) out.push(`${v4}/32`);
  if (v6 && !isLoopbackLenient(v6)) out.push(`${v6}/128`);
  return out;
}

export class NodePortAddresses {
  /** The CIDRs of this family in effect (the zero CIDR when none was given). */
  readonly cidrs: readonly string[];
  readonly matchAll: boolean;
  readonly containsIPv4Loopback: boolean;
  private readonly nets: readonly IPNet[];

  constructor(
    readonly family: IPFamily,
    cidrStrings: readonly string[],
  ) {
    const own = cidrStrings.filter((c) => parseCIDRLenient(c)?.family === family);
    const effective = own.length > 0 ? own : [family === "IPv4" ? IPV4_ZERO_CIDR : IPV6_ZERO_CIDR];
    const nets: IPNet[] = [];
    let matchAll = false;
    let loopback = false;
    for (const text of effective) {
      const net = parseNetLenient(text)!;
      if (net.family === "IPv4" && (isLoopbackLenient(addressPart(text)) || netContains(net, "127.0.0.0")))
        loopback = true;
      if (text === IPV4_ZERO_CIDR || text === IPV6_ZERO_CIDR) {
        // The zero CIDR (spelled exactly so, as upstream checks) matches everything: the other
        // entries no longer matter.
        nets.splice(0, nets.length, net);
        matchAll = true;
        break;
      }
      nets.push(net);
    }
    this.cidrs = effective;
    this.nets = nets;
    this.matchAll = matchAll;
    this.containsIPv4Loopback = loopback;
  }

  /**
   * The node's addresses inside the configured CIDRs, each once, in CIDR order then address
   * order (upstream returns them in map order; any fixed order programs the same rules).
   */
  nodeIPs(localAddresses: readonly string[]): string[] {
    const out: string[] = [];
    const seen = new Set<string>();
    for (const net of this.nets) {
      for (const text of localAddresses) {
        const parsed = parseIPLenient(addressPart(text));
        if (!parsed || seen.has(parsed.ip) || !netContains(net, parsed.ip)) continue;
        seen.add(parsed.ip);
        out.push(parsed.ip);
      }
    }
    return out;
  }

  toString(): string {
    return `[${this.cidrs.join(" ")}]`;
  }
}
