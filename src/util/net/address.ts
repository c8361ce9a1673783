// IP addresses and CIDRs for the whole program: one byte-level IPv4/IPv6 reader and one
// formatter, with an entry point per parse rule, as upstream keeps distinct parsers:
//   - Strict (configuration): Go's net.ParseIP/ParseCIDR; no leading zeros, no zones.
//   - Lenient (API objects): k8s.io/utils/net ParseIPSloppy; IPv4 octets may carry leading
//     zeros (read as decimal), IPv4-mapped IPv6 is IPv4, the result is canonical Go text.
//   - Inet (host tools): inet_pton/inet_ntop, as ip, ipset and ipvsadm read and print addresses.
//   - Platform (a Node's status addresses, --bind-address at startup): the runtime's own
//     net.isIP, which also accepts IPv6 zones ("fe80::1%eth0"); only the family is asked for.
// The rest of the program passes the canonical text these return and never parses it again.

import { isIP, isIPv4, isIPv6 } from "node:net";
import { type IPFamily, maxPrefixLen } from "./family.ts";

// ---- bytes ----

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const SLOPPY_V4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/;

/** Dotted quad as inet_pton reads it: no leading zeros (it will not guess octal or decimal). */
function ipv4Bytes(text: string): number[] | undefined {
  const m = V4.exec(text);
  if (!m) return undefined;
  const out: number[] = [];
  for (const part of m.slice(1)) {
    if (part.length > 1 && part.startsWith("0")) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    out.push(n);
  }
  return out;
}

/** Dotted quad as ParseIPSloppy reads it: any number of digits, leading zeros are decimal. */
function sloppyIPv4Bytes(text: string): number[] | undefined {
  const m = SLOPPY_V4.exec(text);
  if (!m) return undefined;
  const octets = m.slice(1).map(Number);
  return octets.every((o) => o <= 255) ? octets : undefined;
}

/** IPv6 text as inet_pton reads it (an embedded dotted quad may end it); 16 bytes. */
function ipv6Bytes(text: string): number[] | undefined {
  if (text.length === 0 || text.includes("%")) return undefined;
  let body = text;
  // An embedded dotted quad may end the address ("::ffff:192.0.2.1"): rewrite it as two words.
  const lastColon = text.lastIndexOf(":");
  const tail = text.slice(lastColon + 1);
  if (tail.includes(".")) {
    const v4 = ipv4Bytes(tail);
    if (!v4) return undefined;
    const hi = ((v4[0] ?? 0) << 8) | (v4[1] ?? 0);
    const lo = ((v4[2] ?? 0) << 8) | (v4[3] ?? 0);
    body = `${text.slice(0, lastColon + 1)}${hi.toString(16)}:${lo.toString(16)}`;
  }
  const parts = body.split("::");
  if (parts.length > 2) return undefined;
  const parse = (s: string): number[] | undefined => {
    if (s === "") return [];
    const words: number[] = [];
    for (const w of s.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(w)) return undefined;
      words.push(Number.parseInt(w, 16));
    }
    return words;
  };
  const left = parse(parts[0] ?? "");
  const right = parts.length === 2 ? parse(parts[1] ?? "") : [];
  if (!left || !right) return undefined;
  let words: number[];
  if (parts.length === 2) {
    const fill = 8 - left.length - right.length;
    if (fill < 1) return undefined;
    words = [...left, ...new Array<number>(fill).fill(0), ...right];
  } else {
    if (left.length !== 8) return undefined;
    words = left;
  }
  const bytes: number[] = [];
  for (const w of words) bytes.push(w >> 8, w & 0xff);
  return bytes;
}

/**
 * RFC 5952 text of 16 bytes (lower case, the first longest run of two or more zero words
 * compressed). `embedIPv4` prints ::/96 and ::ffff:0:0/96 with a dotted tail, as glibc's
 * inet_ntop does; Go (and the WHATWG URL serializer) never do.
 */
function formatIPv6(bytes: readonly number[], embedIPv4: boolean): string {
  const words: number[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0));
  // Longest run of zero words, at least two long; the first one wins a tie.
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (bestLen < 2) bestStart = -1;
  const embedsV4 = embedIPv4 && bestStart === 0 && (bestLen === 6 || (bestLen === 5 && words[5] === 0xffff));
  const parts: string[] = [];
  for (let i = 0; i < 8; ) {
    if (i === bestStart) {
      // An empty part on each side of the run joins into "::".
      parts.push("");
      if (i === 0) parts.push("");
      i += bestLen;
      if (i === 8) parts.push("");
      continue;
    }
    if (i === 6 && embedsV4) {
      parts.push(bytes.slice(12, 16).join("."));
      break;
    }
    parts.push((words[i] ?? 0).toString(16));
    i++;
  }
  return parts.join(":");
}

/** Clears the host bits of `prefix`-bit network `bytes`. */
function maskBytes(bytes: readonly number[], prefix: number): number[] {
  return bytes.map((b, i) => {
    const keep = Math.min(8, Math.max(0, prefix - i * 8));
    return keep === 0 ? 0 : b & ((0xff << (8 - keep)) & 0xff);
  });
}

function isMappedIPv4(bytes: readonly number[]): boolean {
  return (
    bytes.length === 16 &&
    bytes.slice(0, 10).every((b) => b === 0) &&
    bytes[10] === 0xff &&
    bytes[11] === 0xff
  );
}

/** "ADDR/BITS" split at the slash, with BITS checked against the family; undefined otherwise. */
function prefixBits(bits: string, family: IPFamily): number | undefined {
  if (!/^\d{1,3}$/.test(bits)) return undefined;
  const prefix = Number(bits);
  return prefix > maxPrefixLen(family) ? undefined : prefix;
}

// ---- strict: configuration (Go net.ParseIP / net.ParseCIDR) ----

export interface StrictIP {
  /** The text as given (configuration keeps what the user wrote). */
  readonly ip: string;
  /** By syntax: an IPv4-mapped IPv6 literal is IPv6 here. */
  readonly family: IPFamily;
}

export interface StrictCIDR {
  readonly family: IPFamily;
  /** The address part as given; host bits may be set, as Go's ParseCIDR allows. */
  readonly address: string;
  readonly prefix: number;
}

/** An IP literal by Go's net.ParseIP rule; zones ("fe80::1%eth0") are not IPs to Go. */
export function parseIPStrict(text: string): StrictIP | undefined {
  if (text.includes("%")) return undefined;
  if (isIPv4(text)) return { ip: text, family: "IPv4" };
  if (isIPv6(text)) return { ip: text, family: "IPv6" };
  return undefined;
}

/** "address/prefix" by Go's net.ParseCIDR rule (no trimming, host bits allowed). */
export function parseCIDRStrict(text: string): StrictCIDR | undefined {
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const address = text.slice(0, slash);
  const ip = parseIPStrict(address);
  if (ip === undefined) return undefined;
  const prefix = prefixBits(text.slice(slash + 1), ip.family);
  return prefix === undefined ? undefined : { family: ip.family, address, prefix };
}

// ---- lenient: API objects (k8s.io/utils/net ParseIPSloppy / ParseCIDRSloppy) ----

export interface ParsedIP {
  /** Canonical text: dotted decimal, or RFC 5952 IPv6 as Go prints it. */
  readonly ip: string;
  readonly family: IPFamily;
}

export interface ParsedCIDR {
  /** Network address (host bits cleared, as Go's ParseCIDR returns it) and prefix. */
  readonly cidr: string;
  readonly family: IPFamily;
}

interface LenientIP extends ParsedIP {
  readonly bytes: readonly number[];
}

function lenientIP(text: unknown): LenientIP | undefined {
  if (typeof text !== "string") return undefined;
  if (isIPv4(text)) return { ip: text, family: "IPv4", bytes: ipv4Bytes(text)! };
  const sloppy = sloppyIPv4Bytes(text);
  if (sloppy) return { ip: sloppy.join("."), family: "IPv4", bytes: sloppy };
  if (text.includes("%") || !isIPv6(text)) return undefined;
  const bytes = ipv6Bytes(text);
  if (!bytes) return undefined;
  // Go treats an IPv4-mapped IPv6 address as IPv4 and prints it dotted; so do we.
  if (isMappedIPv4(bytes)) {
    const v4 = bytes.slice(12);
    return { ip: v4.join("."), family: "IPv4", bytes: v4 };
  }
  return { ip: formatIPv6(bytes, false), family: "IPv6", bytes };
}

/** An IP literal by ParseIPSloppy's rule; undefined for anything else (including zones). */
export function parseIPLenient(text: unknown): ParsedIP | undefined {
  if (typeof text === "string" && canonicalIPv4Value(text, 0, text.length) >= 0)
    return { ip: text, family: "IPv4" };
  const parsed = lenientIP(text);
  return parsed && { ip: parsed.ip, family: parsed.family };
}

/** parseIPLenient's text alone; a canonical dotted quad is returned as it is, making nothing. */
export function canonicalIPLenient(text: unknown): string | undefined {
  if (typeof text === "string" && canonicalIPv4Value(text, 0, text.length) >= 0) return text;
  return lenientIP(text)?.ip;
}

/** A parsed network, for repeated containment checks. */
export interface IPNet {
  readonly family: IPFamily;
  /** Network bytes (host bits cleared). */
  readonly bytes: readonly number[];
  readonly prefix: number;
}

/**
 * "address/prefix" by ParseCIDRSloppy's rule, after trimming surrounding blanks (upstream trims
 * loadBalancerSourceRanges because API validation once let padded values through).
 */
export function parseNetLenient(text: unknown): IPNet | undefined {
  if (typeof text !== "string") return undefined;
  const trimmed = text.trim();
  const slash = trimmed.indexOf("/");
  if (slash < 0) return undefined;
  const addr = lenientIP(trimmed.slice(0, slash));
  if (!addr) return undefined;
  const prefix = prefixBits(trimmed.slice(slash + 1), addr.family);
  if (prefix === undefined) return undefined;
  return { family: addr.family, bytes: maskBytes(addr.bytes, prefix), prefix };
}

/** parseNetLenient as canonical "network/prefix" text. */
export function parseCIDRLenient(text: unknown): ParsedCIDR | undefined {
  if (typeof text === "string" && isCanonicalIPv4CIDR(text)) return { cidr: text, family: "IPv4" };
  const net = parseNetLenient(text);
  if (!net) return undefined;
  const network = net.family === "IPv4" ? net.bytes.join(".") : formatIPv6(net.bytes, false);
  return { cidr: `${network}/${net.prefix}`, family: net.family };
}

/**
 * parseCIDRLenient's text alone. A canonical IPv4 CIDR is returned as it is, and nothing is
 * made for it: a Service may list 100,000 of them.
 */
export function canonicalCIDRLenient(text: unknown): string | undefined {
  if (typeof text === "string" && isCanonicalIPv4CIDR(text)) return text;
  return parseCIDRLenient(text)?.cidr;
}

/**
 * Whether `text` is a canonical "a.b.c.d/n" with no host bits set: its own canonical text
 * (anything else goes to parseNetLenient).
 */
function isCanonicalIPv4CIDR(text: string): boolean {
  const slash = text.indexOf("/");
  const prefix = canonicalIPv4PrefixBits(text, slash);
  if (prefix < 0) return false;
  const value = canonicalIPv4Value(text, 0, slash);
  return value >= 0 && hostBitsOf(value, prefix) === 0;
}

/** The prefix after `slash` when it is 0-32 in plain decimal (no leading zero); else -1. */
function canonicalIPv4PrefixBits(text: string, slash: number): number {
  const bits = text.length - slash - 1;
  if (slash < 0 || bits < 1 || bits > 2) return -1;
  const c0 = text.charCodeAt(slash + 1);
  const c1 = bits === 2 ? text.charCodeAt(slash + 2) : 48;
  if (c0 < 48 || c0 > 57 || c1 < 48 || c1 > 57 || (bits === 2 && c0 === 48)) return -1;
  const prefix = bits === 2 ? (c0 - 48) * 10 + (c1 - 48) : c0 - 48;
  return prefix > 32 ? -1 : prefix;
}

/** The bits of a 32-bit address value past its first `prefix`. */
function hostBitsOf(value: number, prefix: number): number {
  return prefix === 32 ? 0 : value % 2 ** (32 - prefix);
}

/** Whether `net` contains `ip` (read leniently; false for unparsable input or mixed families). */
export function netContains(net: IPNet, ip: string): boolean {
  const parsed = lenientIP(ip);
  if (!parsed || parsed.family !== net.family) return false;
  const masked = maskBytes(parsed.bytes, net.prefix);
  return masked.every((b, i) => b === net.bytes[i]);
}

/** Go's IsLoopback on an address read leniently ("::ffff:127.0.0.1" is loopback here). */
export function isLoopbackLenient(ip: string): boolean {
  return loopbackBytes(lenientIP(ip));
}

/**
 * Whether `cidr` contains `ip`, both read leniently (false for unparsable input or mixed families).
 * Canonical IPv4 text on both sides is compared as numbers, making nothing: a Service may hold
 * 100,000 source ranges, each checked against the node IP on every sync.
 */
export function cidrContains(cidr: string, ip: string): boolean {
  const slash = cidr.indexOf("/");
  const prefix = canonicalIPv4PrefixBits(cidr, slash);
  const network = prefix < 0 ? -1 : canonicalIPv4Value(cidr, 0, slash);
  const address = network < 0 ? -1 : canonicalIPv4Value(ip);
  if (address >= 0) return network - hostBitsOf(network, prefix) === address - hostBitsOf(address, prefix);
  const net = parseNetLenient(cidr);
  return net !== undefined && netContains(net, ip);
}

// ---- inet: host tools (inet_pton / inet_ntop) ----

export interface InetIP {
  /** Canonical text (inet_ntop form). */
  readonly ip: string;
  readonly family: IPFamily;
  /** 4 octets or 16 bytes, network order. */
  readonly bytes: readonly number[];
}

export interface InetPrefix extends InetIP {
  readonly prefix: number;
}

/** inet_ntop(AF_INET6) as glibc prints it (RFC 5952, embedded IPv4 for ::/96 and ::ffff:0:0/96). */
export function formatIPv6Inet(bytes: readonly number[]): string {
  return formatIPv6(bytes, true);
}

/** An IPv4 or IPv6 literal the way inet_pton reads it; undefined for anything else. */
export function parseIPInet(text: string): InetIP | undefined {
  const v4 = ipv4Bytes(text);
  if (v4) return { ip: v4.join("."), family: "IPv4", bytes: v4 };
  if (!text.includes(":")) return undefined;
  const v6 = ipv6Bytes(text);
  if (!v6) return undefined;
  return { ip: formatIPv6(v6, true), family: "IPv6", bytes: v6 };
}

/**
 * A dotted quad exactly as parseIPInet writes it (four decimal octets, no leading zero) as its
 * 32-bit value; -1 for any other text. Reads characters (of text[start, end)) and makes
 * nothing, for hot paths that see canonical addresses by the million (restore lines, sort keys).
 */
export function canonicalIPv4Value(text: string, start = 0, end = text.length): number {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return -1;
      octet = octet * 10 + (c - 48);
      if (++digits > 3 || octet > 255) return -1;
    } else return -1;
  }
  if (dots !== 3 || digits === 0) return -1;
  return value * 256 + octet;
}

/** inet_ntop text of an address, or undefined when inet_pton would not read it. */
export function canonicalIPInet(text: string): string | undefined {
  return parseIPInet(text)?.ip;
}

/** "ADDR/LEN" or bare "ADDR" (full length); `mask` clears host bits as ipset does for networks. */
export function parseCIDRInet(text: string, opts: { mask?: boolean } = {}): InetPrefix | undefined {
  const slash = text.indexOf("/");
  const addr = parseIPInet(slash < 0 ? text : text.slice(0, slash));
  if (!addr) return undefined;
  let prefix: number = maxPrefixLen(addr.family);
  if (slash >= 0) {
    const bits = prefixBits(text.slice(slash + 1), addr.family);
    if (bits === undefined) return undefined;
    prefix = bits;
  }
  if (!opts.mask) return { ...addr, prefix };
  const bytes = maskBytes(addr.bytes, prefix);
  const ip = addr.family === "IPv4" ? bytes.join(".") : formatIPv6(bytes, true);
  return { ip, family: addr.family, bytes, prefix };
}

/** Orders addresses as the kernel compares them (numerically, IPv4 before IPv6). */
export function compareIPs(a: string, b: string): number {
  const pa = parseIPInet(a);
  const pb = parseIPInet(b);
  if (!pa || !pb) return a < b ? -1 : a > b ? 1 : 0;
  if (pa.family !== pb.family) return pa.family === "IPv4" ? -1 : 1;
  for (let i = 0; i < pa.bytes.length; i++) {
    const d = (pa.bytes[i] ?? 0) - (pb.bytes[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function loopbackBytes(p: { family: IPFamily; bytes: readonly number[] } | undefined): boolean {
  if (!p) return false;
  if (p.family === "IPv4") return p.bytes[0] === 127;
  return p.bytes.slice(0, 15).every((b) => b === 0) && p.bytes[15] === 1;
}

/** 127.0.0.0/8 and ::1 (Go's IsLoopback), read by the inet rule. */
export function isLoopback(ip: string): boolean {
  return loopbackBytes(parseIPInet(ip));
}

/** IPv6 link-local unicast, fe80::/10. */
export function isIPv6LinkLocal(ip: string): boolean {
  const p = parseIPInet(ip);
  return p?.family === "IPv6" && p.bytes[0] === 0xfe && ((p.bytes[1] ?? 0) & 0xc0) === 0x80;
}

/** IPv4 link-local, 169.254.0.0/16. */
export function isIPv4LinkLocal(ip: string): boolean {
  const p = parseIPInet(ip);
  return p?.family === "IPv4" && p.bytes[0] === 169 && p.bytes[1] === 254;
}

/** The platform rule (see the header): the address's family, or undefined when it is none. */
export function platformIPFamily(text: string): IPFamily | undefined {
  const v = isIP(text);
  return v === 4 ? "IPv4" : v === 6 ? "IPv6" : undefined;
}
