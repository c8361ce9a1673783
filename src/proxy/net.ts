// Address parsing at the tracker edge. Upstream reads Service and EndpointSlice addresses with
// k8s.io/utils/net's "sloppy" parser (IPv4 octets may carry leading zeros, read as decimal), so
// objects the API server accepted years ago keep working; we do the same and hand the proxiers
// canonical text, so equal addresses always compare equal as strings.

import { isIPv4, isIPv6 } from "node:net";
import type { IPFamily, Protocol } from "./types.ts";

export interface ParsedIP {
  readonly ip: string;
  readonly family: IPFamily;
}

export interface ParsedCIDR {
  /** Network address (host bits cleared, as Go's ParseCIDR returns it) and prefix. */
  readonly cidr: string;
  readonly family: IPFamily;
}

const SLOPPY_V4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/;
const MAPPED_V4 = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

function sloppyIPv4(text: string): string | undefined {
  const m = SLOPPY_V4.exec(text);
  if (!m) return undefined;
  const octets = m.slice(1).map(Number);
  return octets.every((o) => o <= 255) ? octets.join(".") : undefined;
}

// WHATWG URL parsing yields RFC 5952 text (lower case, longest zero run compressed).
function canonicalIPv6(text: string): string {
  const host = new URL(`http://[${text}]/`).hostname;
  return host.slice(1, -1);
}

// Go treats an IPv4-mapped IPv6 address as IPv4 and prints it dotted; so do we.
function unmapIPv4(canonical: string): string | undefined {
  const m = MAPPED_V4.exec(canonical);
  if (!m) return undefined;
  const hi = Number.parseInt(m[1]!, 16);
  const lo = Number.parseInt(m[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Parses an IP literal; undefined for anything else (including zoned "fe80::1%eth0"). */
export function parseIP(text: unknown): ParsedIP | undefined {
  if (typeof text !== "string") return undefined;
  if (isIPv4(text)) return { ip: text, family: "IPv4" };
  const sloppy = sloppyIPv4(text);
  if (sloppy) return { ip: sloppy, family: "IPv4" };
  if (text.includes("%") || !isIPv6(text)) return undefined;
  const canonical = canonicalIPv6(text);
  const v4 = unmapIPv4(canonical);
  return v4 ? { ip: v4, family: "IPv4" } : { ip: canonical, family: "IPv6" };
}

/** The family of a canonical address, without validating it (the trackers already did). */
export function familyOf(ip: string): IPFamily {
  return ip.includes(":") ? "IPv6" : "IPv4";
}

/** The addresses of one family, in their original order. */
export function ofFamily(ips: readonly string[], family: IPFamily): string[] {
  return ips.filter((ip) => familyOf(ip) === family);
}

function maskIPv4(ip: string, prefix: number): string {
  const n = ip.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
  const size = 2 ** (32 - prefix);
  const net = Math.floor(n / size) * size;
  return [24, 16, 8, 0].map((shift) => Math.floor(net / 2 ** shift) % 256).join(".");
}

function ipv6Groups(canonical: string): number[] {
  const [head = "", tail] = canonical.split("::");
  const parse = (s: string) => (s ? s.split(":").map((g) => Number.parseInt(g, 16)) : []);
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function maskIPv6(canonical: string, prefix: number): string {
  const groups = ipv6Groups(canonical).map((g, i) => {
    const keep = Math.min(16, Math.max(0, prefix - i * 16));
    return keep === 0 ? 0 : g & (0xffff << (16 - keep)) & 0xffff;
  });
  return canonicalIPv6(groups.map((g) => g.toString(16)).join(":"));
}

/**
 * Parses "address/prefix" as Go's ParseCIDR does, after trimming surrounding blanks (upstream
 * trims loadBalancerSourceRanges because API validation once let padded values through).
 */
export function parseCIDR(text: unknown): ParsedCIDR | undefined {
  if (typeof text !== "string") return undefined;
  const trimmed = text.trim();
  const slash = trimmed.indexOf("/");
  if (slash < 0) return undefined;
  const addr = parseIP(trimmed.slice(0, slash));
  const bits = trimmed.slice(slash + 1);
  if (!addr || !/^\d{1,3}$/.test(bits)) return undefined;
  const prefix = Number(bits);
  if (prefix > (addr.family === "IPv4" ? 32 : 128)) return undefined;
  const network = addr.family === "IPv4" ? maskIPv4(addr.ip, prefix) : maskIPv6(addr.ip, prefix);
  return { cidr: `${network}/${prefix}`, family: addr.family };
}

/** A TCP/UDP port number: an integer in 1..65535. */
export function isPortNumber(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= 65535;
}

const PROTOCOLS: ReadonlySet<string> = new Set(["TCP", "UDP", "SCTP"]);

/** A protocol as the API spells it; missing means TCP (the API server's default). */
export function parseProtocol(value: unknown): Protocol | undefined {
  if (value === undefined || value === null) return "TCP";
  return typeof value === "string" && PROTOCOLS.has(value) ? (value as Protocol) : undefined;
}

/** "ip:port", bracketing IPv6 as Go's net.JoinHostPort does. */
export function endpointString(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}
