// Address syntax checks with Go's net package semantics (ParseIP, ParseCIDR, SplitHostPort),
// since upstream validation is defined in those terms.

import { isIPv4, isIPv6 } from "node:net";

export type IPFamily = 4 | 6;

/** The family of a literal IP address, or undefined. Zones ("fe80::1%eth0") are not IPs to Go. */
export function ipFamily(text: string): IPFamily | undefined {
  if (text.includes("%")) return undefined;
  if (isIPv4(text)) return 4;
  if (isIPv6(text)) return 6;
  return undefined;
}

export interface CIDR {
  family: IPFamily;
  address: string;
  prefix: number;
}

/** Parses "address/prefix"; host bits may be set, as Go's ParseCIDR allows. */
export function parseCIDR(text: string): CIDR | undefined {
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const address = text.slice(0, slash);
  const bits = text.slice(slash + 1);
  const family = ipFamily(address);
  if (family === undefined || !/^\d{1,3}$/.test(bits)) return undefined;
  const prefix = Number(bits);
  if (prefix > (family === 4 ? 32 : 128)) return undefined;
  return { family, address, prefix };
}

export type HostPort = { ok: true; host: string; port: string } | { ok: false; error: string };

/** Go's net.SplitHostPort: "host:port" or "[host]:port"; the port is not checked here. */
export function splitHostPort(text: string): HostPort {
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0) return { ok: false, error: "missing ']' in address" };
    if (text[close + 1] !== ":") return { ok: false, error: "missing port in address" };
    const host = text.slice(1, close);
    const port = text.slice(close + 2);
    if (host.includes("[") || host.includes("]") || port.includes("]")) {
      return { ok: false, error: "unexpected bracket in address" };
    }
    return { ok: true, host, port };
  }
  const colon = text.lastIndexOf(":");
  if (colon < 0) return { ok: false, error: "missing port in address" };
  const host = text.slice(0, colon);
  if (host.includes(":")) return { ok: false, error: "too many colons in address" };
  if (host.includes("[") || host.includes("]")) return { ok: false, error: "unexpected bracket in address" };
  return { ok: true, host, port: text.slice(colon + 1) };
}

/** Port text as Go's strconv.Atoi reads it, restricted to 1..65535; undefined otherwise. */
export function parsePort(text: string): number | undefined {
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/**
 * Upstream's AppendPortIfNeeded: a bare IP gets `port` appended (bracketed for IPv6); anything
 * that already has a port, or is not an IP at all, is returned unchanged for validation to judge.
 */
export function appendPortIfNeeded(address: string, port: number): string {
  if (splitHostPort(address).ok) return address;
  const family = ipFamily(address);
  if (family === undefined) return address;
  return family === 4 ? `${address}:${port}` : `[${address}]:${port}`;
}

/** Joins a host and port the way Go's net.JoinHostPort does. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}
