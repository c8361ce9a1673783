// Rule statements and element parts, read from the nft text the modes write into the
// expressions and register bytes the kernel takes. Only a closed set of shapes is read: those
// kube-proxy's service chains and maps use, each checked against what nft 1.0.6 sends for the
// same text (`nft --debug=netlink`). Anything else is undefined, and the caller gives the whole
// transaction to nft instead; so an unusual rule is never guessed at. Pure.

import { parseIPInet } from "../../../util/net/address.ts";
import type { IPFamily } from "../../../util/net/family.ts";
import { maxPrefixLen } from "../../../util/net/family.ts";

/** Payload bases. */
const NETWORK_HEADER = 1;
/** nft_meta_keys. */
export const META_MARK = 3;
export const META_IIFNAME = 6;
export const META_OIFNAME = 7;
export const META_L4PROTO = 16;
/** Verdict codes. */
export const VERDICT = { drop: 0, accept: 1, jump: -3, goto: -4, return: -5 } as const;
/** fib flags and result. */
const FIB_SADDR = 1;
const FIB_DADDR = 2;
const RTN_LOCAL = 2;
const IFNAMSIZ = 16;

/** One expression of a rule; loads, compares and bit operations all use register 1. */
export type Expr =
  | { readonly kind: "payload"; readonly base: number; readonly offset: number; readonly len: number }
  | { readonly kind: "meta"; readonly key: number }
  | { readonly kind: "meta-set"; readonly key: number }
  | { readonly kind: "cmp"; readonly neq: boolean; readonly data: Uint8Array }
  | { readonly kind: "bitwise"; readonly mask: Uint8Array; readonly xor: Uint8Array }
  | { readonly kind: "immediate"; readonly reg: number; readonly data: Uint8Array }
  | { readonly kind: "verdict"; readonly code: number; readonly chain?: string }
  | { readonly kind: "numgen"; readonly modulus: number }
  | { readonly kind: "fib"; readonly flags: number }
  | { readonly kind: "lookup"; readonly set: string; readonly inverted: boolean }
  | { readonly kind: "dynset-update"; readonly set: string }
  | { readonly kind: "dnat"; readonly family: IPFamily };

/** What a set's key or a map's value part is, by its nft type name. */
export type FieldType = "ipv4_addr" | "ipv6_addr" | "inet_proto" | "inet_service" | "verdict";

const PROTOCOLS: Readonly<Record<string, number>> = { tcp: 6, udp: 17, sctp: 132 };

/** Set names after "@", chain names after goto/jump: nft's name syntax (checked again by nft's rules). */
const NAME = /^[A-Za-z][A-Za-z0-9/_.-]*$/;
const DECIMAL = /^(0|[1-9][0-9]{0,9})$/;
const HEX32 = /^0x[0-9a-fA-F]{1,8}$/;

function hostU32(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value >>> 0, true);
  return out;
}

function be16(value: number): Uint8Array {
  return new Uint8Array([(value >> 8) & 0xff, value & 0xff]);
}

/** An address exactly as inet_ntop writes it (what the modes write), as network-order bytes. */
export function addressBytes(text: string, family: IPFamily): Uint8Array | undefined {
  const ip = parseIPInet(text);
  if (!ip || ip.family !== family || ip.ip !== text) return undefined;
  return Uint8Array.from(ip.bytes);
}

function decimal(text: string | undefined, max: number): number | undefined {
  if (text === undefined || !DECIMAL.test(text)) return undefined;
  const n = Number(text);
  return n <= max ? n : undefined;
}

/** `ADDR` or `ADDR/LEN` against the source or destination address, as nft encodes the match. */
function addressMatch(family: IPFamily, dest: boolean, neq: boolean, text: string): Expr[] | undefined {
  const slash = text.indexOf("/");
  const full = maxPrefixLen(family);
  const bytes = addressBytes(slash < 0 ? text : text.slice(0, slash), family);
  const prefix = slash < 0 ? full : decimal(text.slice(slash + 1), full);
  // A zero prefix matches everything: nft writes no compare at all; not a shape used here.
  if (!bytes || prefix === undefined || prefix === 0) return undefined;
  const offset = family === "IPv4" ? (dest ? 16 : 12) : dest ? 24 : 8;
  for (let bit = prefix; bit < full; bit++) if (bytes[bit >> 3]! & (0x80 >> (bit & 7))) return undefined;
  if (prefix % 8 === 0) {
    // Whole bytes: nft loads only the prefix's bytes and compares them.
    const len = prefix / 8;
    return [
      { kind: "payload", base: NETWORK_HEADER, offset, len },
      { kind: "cmp", neq, data: bytes.slice(0, len) },
    ];
  }
  const mask = new Uint8Array(bytes.length);
  for (let bit = 0; bit < prefix; bit++) mask[bit >> 3]! |= 0x80 >> (bit & 7);
  return [
    { kind: "payload", base: NETWORK_HEADER, offset, len: bytes.length },
    { kind: "bitwise", mask, xor: new Uint8Array(bytes.length) },
    { kind: "cmp", neq, data: bytes },
  ];
}

/** An interface name, or a prefix ending in `*`, as nft compares it. */
function interfaceMatch(key: number, neq: boolean, name: string): Expr[] | undefined {
  const prefix = name.endsWith("*");
  const text = prefix ? name.slice(0, -1) : name;
  if (!/^[A-Za-z0-9_.-]+$/.test(text) || text.length >= IFNAMSIZ) return undefined;
  const data = new Uint8Array(prefix ? text.length : IFNAMSIZ);
  for (let i = 0; i < text.length; i++) data[i] = text.charCodeAt(i);
  return [
    { kind: "meta", key },
    { kind: "cmp", neq, data },
  ];
}

/**
 * A rule's statements as expressions; undefined for any text outside the shapes read here.
 * `family` is the table's (ip: IPv4, ip6: IPv6).
 */
export function ruleExpressions(text: string, family: IPFamily): Expr[] | undefined {
  const t = text.split(" ");
  const ipWord = family === "IPv4" ? "ip" : "ip6";
  const out: Expr[] = [];
  let i = 0;
  // Once a verdict or NAT statement is written nothing may follow it.
  let ended = false;
  while (i < t.length) {
    if (ended) return undefined;
    const word = t[i]!;
    if (word === "numgen") {
      const modulus = decimal(t[i + 3], 0xffffffff);
      const value = decimal(t[i + 4], 0xffffffff);
      if (t[i + 1] !== "random" || t[i + 2] !== "mod" || !modulus || value === undefined || value >= modulus)
        return undefined;
      out.push({ kind: "numgen", modulus }, { kind: "cmp", neq: false, data: hostU32(value) });
      i += 5;
    } else if (word === "meta" && t[i + 1] === "l4proto") {
      const proto = PROTOCOLS[t[i + 2] ?? ""];
      if (proto === undefined) return undefined;
      out.push({ kind: "meta", key: META_L4PROTO }, { kind: "cmp", neq: false, data: Uint8Array.of(proto) });
      i += 3;
    } else if (word === "fib") {
      const flags = t[i + 1] === "saddr" ? FIB_SADDR : t[i + 1] === "daddr" ? FIB_DADDR : 0;
      if (!flags || t[i + 2] !== "type" || t[i + 3] !== "local") return undefined;
      out.push({ kind: "fib", flags }, { kind: "cmp", neq: false, data: hostU32(RTN_LOCAL) });
      i += 4;
    } else if (word === ipWord) {
      const dir = t[i + 1];
      if (dir !== "saddr" && dir !== "daddr") return undefined;
      const neq = t[i + 2] === "!=";
      const operand = t[i + (neq ? 3 : 2)];
      if (operand === undefined) return undefined;
      if (operand.startsWith("@")) {
        const set = operand.slice(1);
        if (!NAME.test(set)) return undefined;
        out.push(...addressLoad(family, dir === "daddr"), { kind: "lookup", set, inverted: neq });
      } else {
        const match = addressMatch(family, dir === "daddr", neq, operand);
        if (!match) return undefined;
        out.push(...match);
      }
      i += neq ? 4 : 3;
    } else if (word === "iifname" || word === "oifname") {
      const neq = t[i + 1] === "!=";
      const match = interfaceMatch(
        word === "iifname" ? META_IIFNAME : META_OIFNAME,
        neq,
        t[i + (neq ? 2 : 1)] ?? "",
      );
      if (!match) return undefined;
      out.push(...match);
      i += neq ? 3 : 2;
    } else if (word === "mark" && t[i + 1] === "set" && t[i + 2] === "mark" && t[i + 3] === "or") {
      const bits = t[i + 4];
      if (bits === undefined || !HEX32.test(bits)) return undefined;
      const value = Number.parseInt(bits.slice(2), 16);
      out.push(
        { kind: "meta", key: META_MARK },
        { kind: "bitwise", mask: hostU32(~value), xor: hostU32(value) },
        { kind: "meta-set", key: META_MARK },
      );
      i += 5;
    } else if (word === "goto" || word === "jump") {
      const chain = t[i + 1];
      if (chain === undefined || !NAME.test(chain)) return undefined;
      out.push({ kind: "verdict", code: VERDICT[word], chain });
      i += 2;
      ended = true;
    } else if (word === "drop" || word === "accept" || word === "return") {
      out.push({ kind: "verdict", code: VERDICT[word] });
      i += 1;
      ended = true;
    } else if (word === "dnat" && t[i + 1] === "to") {
      const target = dnatTarget(t[i + 2] ?? "", family);
      if (!target) return undefined;
      out.push(
        { kind: "immediate", reg: 1, data: target.address },
        { kind: "immediate", reg: 2, data: be16(target.port) },
        { kind: "dnat", family },
      );
      i += 3;
      ended = true;
    } else if (word === "update") {
      const set = t[i + 1]?.startsWith("@") ? t[i + 1]!.slice(1) : "";
      if (
        !NAME.test(set) ||
        t[i + 2] !== "{" ||
        t[i + 3] !== ipWord ||
        t[i + 4] !== "saddr" ||
        t[i + 5] !== "}"
      )
        return undefined;
      out.push(...addressLoad(family, false), { kind: "dynset-update", set });
      i += 6;
    } else return undefined;
  }
  return out.length > 0 ? out : undefined;
}

function addressLoad(family: IPFamily, dest: boolean): Expr[] {
  const offset = family === "IPv4" ? (dest ? 16 : 12) : dest ? 24 : 8;
  return [{ kind: "payload", base: NETWORK_HEADER, offset, len: family === "IPv4" ? 4 : 16 }];
}

/** "10.0.0.1:80" or "[fd00::1]:80" (a port is always written). */
function dnatTarget(text: string, family: IPFamily): { address: Uint8Array; port: number } | undefined {
  const colon = text.lastIndexOf(":");
  if (colon < 0) return undefined;
  let host = text.slice(0, colon);
  if (family === "IPv6") {
    if (!host.startsWith("[") || !host.endsWith("]")) return undefined;
    host = host.slice(1, -1);
  }
  const address = addressBytes(host, family);
  const port = decimal(text.slice(colon + 1), 65535);
  return address && port ? { address, port } : undefined;
}

/** A set or map type ("ipv4_addr . inet_proto . inet_service : verdict") as its field types. */
export function fieldTypes(type: string): { key: FieldType[]; value: FieldType[] } | undefined {
  const [keyText, valueText, extra] = type.split(" : ");
  if (keyText === undefined || extra !== undefined) return undefined;
  const read = (text: string): FieldType[] | undefined => {
    const parts = text.split(" . ");
    for (const p of parts)
      if (!["ipv4_addr", "ipv6_addr", "inet_proto", "inet_service", "verdict"].includes(p)) return undefined;
    return parts as FieldType[];
  };
  const key = read(keyText);
  const value = valueText === undefined ? [] : read(valueText);
  if (!key || !value || key.includes("verdict") || value.some((v) => v !== "verdict") || value.length > 1)
    return undefined;
  return { key, value };
}

/** A key of concatenated fields: each field starts on a four-byte boundary, zero-filled. */
export function elementKey(parts: readonly string[], types: readonly FieldType[]): Uint8Array | undefined {
  if (parts.length !== types.length) return undefined;
  const fields: Uint8Array[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    let field: Uint8Array | undefined;
    switch (types[i]) {
      case "ipv4_addr":
        field = addressBytes(part, "IPv4");
        break;
      case "ipv6_addr":
        field = addressBytes(part, "IPv6");
        break;
      case "inet_proto": {
        const proto = PROTOCOLS[part];
        field = proto === undefined ? undefined : Uint8Array.of(proto);
        break;
      }
      case "inet_service": {
        const port = decimal(part, 65535);
        field = port === undefined ? undefined : be16(port);
        break;
      }
      default:
        field = undefined;
    }
    if (!field) return undefined;
    fields.push(field);
  }
  if (fields.length === 1) return fields[0];
  const out = new Uint8Array(fields.reduce((n, f) => n + ((f.length + 3) & ~3), 0));
  let at = 0;
  for (const f of fields) {
    out.set(f, at);
    at += (f.length + 3) & ~3;
  }
  return out;
}

/** A verdict map's value ("goto CHAIN", "drop", ...); undefined for anything else. */
export function elementVerdict(parts: readonly string[]): { code: number; chain?: string } | undefined {
  if (parts.length !== 1) return undefined;
  const [word, chain, extra] = parts[0]!.split(" ");
  if (extra !== undefined) return undefined;
  if (word === "goto" || word === "jump")
    return chain !== undefined && NAME.test(chain) ? { code: VERDICT[word], chain } : undefined;
  if ((word === "drop" || word === "accept" || word === "return") && chain === undefined)
    return { code: VERDICT[word] };
  return undefined;
}
