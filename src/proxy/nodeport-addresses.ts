// --nodeport-addresses for one IP family: which of the node's addresses accept NodePort
// traffic. Mirrors upstream's NodePortAddresses: no CIDR of the family means every local address
// ("match all", which the iptables proxier expresses with `-m addrtype --dst-type LOCAL`), and
// "primary" stands for the node's primary IPs, resolved once at startup.

import { parseCIDR, parseIP } from "./net.ts";
import type { IPFamily } from "./types.ts";

export const NODEPORT_ADDRESSES_PRIMARY = "primary";

const IPV4_ZERO_CIDR = "0.0.0.0/0";
const IPV6_ZERO_CIDR = "::/0";

interface Net {
  readonly family: IPFamily;
  readonly base: bigint;
  readonly prefix: number;
}

function ipv4Value(ip: string): bigint {
  return ip.split(".").reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n);
}

function ipv6Value(ip: string): bigint {
  const [head = "", tail] = ip.split("::");
  const groups = (s: string) => (s ? s.split(":") : []);
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  // A trailing dotted quad (::ffff:192.0.2.1 style) counts as two groups.
  const expand = (gs: string[]) =>
    gs.flatMap((g) => {
      if (!g.includes(".")) return [Number.parseInt(g, 16)];
      const v = Number(ipv4Value(g));
      return [Math.floor(v / 65536), v % 65536];
    });
  const l = expand(left);
  const r = expand(right);
  const all = [...l, ...new Array<number>(8 - l.length - r.length).fill(0), ...r];
  return all.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

/** Numeric value of a canonical address of the given family. */
function ipValue(ip: string, family: IPFamily): bigint {
  return family === "IPv4" ? ipv4Value(ip) : ipv6Value(ip);
}

function parseNet(cidr: string): Net | undefined {
  const parsed = parseCIDR(cidr);
  if (!parsed) return undefined;
  const slash = parsed.cidr.indexOf("/");
  const base = ipValue(parsed.cidr.slice(0, slash), parsed.family);
  return { family: parsed.family, base, prefix: Number(parsed.cidr.slice(slash + 1)) };
}

function netContains(net: Net, ip: string): boolean {
  const parsed = parseIP(ip);
  if (!parsed || parsed.family !== net.family) return false;
  const bits = net.family === "IPv4" ? 32 : 128;
  const shift = BigInt(bits - net.prefix);
  return ipValue(parsed.ip, parsed.family) >> shift === net.base >> shift;
}

/** Whether `cidr` contains `ip` (false for unparsable input or mixed families). */
export function cidrContains(cidr: string, ip: string): boolean {
  const net = parseNet(cidr);
  return net !== undefined && netContains(net, ip);
}

/** 127.0.0.0/8 or ::1, as Go's net.IP.IsLoopback. */
export function isLoopback(ip: string): boolean {
  const parsed = parseIP(ip);
  if (!parsed) return false;
  return parsed.family === "IPv4" ? parsed.ip.startsWith("127.") : parsed.ip === "::1";
}

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
  if (v4 && !isLoopback(v4)) out.push(`${v4}/32`);
  if (v6 && !isLoopback(v6)) out.push(`${v6}/128`);
  return out;
}

export class NodePortAddresses {
  /** The CIDRs of this family in effect (the zero CIDR when none was given). */
  readonly cidrs: readonly string[];
  readonly matchAll: boolean;
  readonly containsIPv4Loopback: boolean;
  private readonly nets: readonly Net[];

  constructor(
    readonly family: IPFamily,
    cidrStrings: readonly string[],
  ) {
    const own = cidrStrings.filter((c) => parseCIDR(c)?.family === family);
    const effective = own.length > 0 ? own : [family === "IPv4" ? IPV4_ZERO_CIDR : IPV6_ZERO_CIDR];
    const nets: Net[] = [];
    let matchAll = false;
    let loopback = false;
    for (const text of effective) {
      const net = parseNet(text)!;
      if (net.family === "IPv4" && (isLoopback(addressPart(text)) || netContains(net, "127.0.0.0")))
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
        const parsed = parseIP(addressPart(text));
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
