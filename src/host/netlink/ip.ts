// Address text as the host tools read and print it. ip, ipset and ipvsadm all parse with
// inet_pton and print with inet_ntop, so the clients and the fakes share these helpers: a fake
// prints exactly what the binary would, and a client compares addresses the way the kernel does.

export type AddrFamily = 4 | 6;

export interface ParsedAddr {
  /** Canonical text (inet_ntop form). */
  readonly ip: string;
  readonly family: AddrFamily;
  /** 4 octets or 16 bytes, network order. */
  readonly bytes: readonly number[];
}

export interface ParsedPrefix extends ParsedAddr {
  readonly prefix: number;
}

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function ipv4Bytes(text: string): number[] | undefined {
  const m = V4.exec(text);
  if (!m) return undefined;
  const out: number[] = [];
  for (const part of m.slice(1)) {
    // inet_pton refuses leading zeros (it will not guess octal or decimal).
    if (part.length > 1 && part.startsWith("0")) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    out.push(n);
  }
  return out;
}

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

/** inet_ntop(AF_INET6) as glibc prints it (RFC 5952 compression, embedded IPv4 for ::/96 and ::ffff:0:0/96). */
export function formatIPv6(bytes: readonly number[]): string {
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
  const embedsV4 = bestStart === 0 && (bestLen === 6 || (bestLen === 5 && words[5] === 0xffff));
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

/** Parses an IPv4 or IPv6 literal the way inet_pton does; undefined for anything else. */
export function parseAddr(text: string): ParsedAddr | undefined {
  const v4 = ipv4Bytes(text);
  if (v4) return { ip: v4.join("."), family: 4, bytes: v4 };
  if (!text.includes(":")) return undefined;
  const v6 = ipv6Bytes(text);
  if (!v6) return undefined;
  return { ip: formatIPv6(v6), family: 6, bytes: v6 };
}

/** Canonical text of an address, or undefined when it is not one. */
export function canonicalAddr(text: string): string | undefined {
  return parseAddr(text)?.ip;
}

export function addrFamily(ip: string): AddrFamily {
  return ip.includes(":") ? 6 : 4;
}

export function maxPrefix(family: AddrFamily): number {
  return family === 4 ? 32 : 128;
}

/** "ADDR/LEN" or bare "ADDR" (full length); `mask` clears host bits as ipset does for networks. */
export function parsePrefix(text: string, opts: { mask?: boolean } = {}): ParsedPrefix | undefined {
  const slash = text.indexOf("/");
  const addr = parseAddr(slash < 0 ? text : text.slice(0, slash));
  if (!addr) return undefined;
  let prefix = maxPrefix(addr.family);
  if (slash >= 0) {
    const bits = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(bits)) return undefined;
    prefix = Number(bits);
    if (prefix > maxPrefix(addr.family)) return undefined;
  }
  if (!opts.mask) return { ...addr, prefix };
  const bytes = addr.bytes.map((b, i) => {
    const keep = Math.min(8, Math.max(0, prefix - i * 8));
    return keep === 0 ? 0 : b & ((0xff << (8 - keep)) & 0xff);
  });
  const ip = addr.family === 4 ? bytes.join(".") : formatIPv6(bytes);
  return { ip, family: addr.family, bytes, prefix };
}

/** Orders addresses as the kernel compares them (numerically, IPv4 before IPv6). */
export function compareAddrs(a: string, b: string): number {
  const pa = parseAddr(a);
  const pb = parseAddr(b);
  if (!pa || !pb) return a < b ? -1 : a > b ? 1 : 0;
  if (pa.family !== pb.family) return pa.family - pb.family;
  for (let i = 0; i < pa.bytes.length; i++) {
    const d = (pa.bytes[i] ?? 0) - (pb.bytes[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** 127.0.0.0/8 and ::1. */
export function isLoopback(ip: string): boolean {
  const p = parseAddr(ip);
  if (!p) return false;
  if (p.family === 4) return p.bytes[0] === 127;
  return p.bytes.slice(0, 15).every((b) => b === 0) && p.bytes[15] === 1;
}

/** IPv6 link-local unicast, fe80::/10. */
export function isIPv6LinkLocal(ip: string): boolean {
  const p = parseAddr(ip);
  return p?.family === 6 && p.bytes[0] === 0xfe && ((p.bytes[1] ?? 0) & 0xc0) === 0x80;
}

/** IPv4 link-local, 169.254.0.0/16. */
export function isIPv4LinkLocal(ip: string): boolean {
  const p = parseAddr(ip);
  return p?.family === 4 && p.bytes[0] === 169 && p.bytes[1] === 254;
}
