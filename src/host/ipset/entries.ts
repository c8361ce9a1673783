// Each set type's element format: parsing and validating entries the way ipset does, and the
// canonical form ipset prints them back in.

import { canonicalIPv4Value, parseCIDRInet, parseIPInet } from "../../util/net/address.ts";
import type { InetFamily } from "../../util/net/family.ts";
import type { IpsetType } from "./types.ts";

const PROTOCOLS = new Set(["tcp", "udp", "sctp", "udplite"]);

/** Elements after the first, per type ("hash:ip,port,net" -> 2). */
function separators(type: IpsetType): number {
  switch (type) {
    case "hash:ip,port":
      return 1;
    case "hash:ip,port,ip":
    case "hash:ip,port,net":
      return 2;
    default:
      return 0;
  }
}

export type EntryParse =
  | {
      readonly ok: true;
      /** Elements as ipset stores and prints them (a port range or a hash:ip CIDR expands). */
      readonly elements: readonly ParsedElement[];
    }
  | {
      readonly ok: false;
      /** ipset's message, without banner. */
      readonly message: string;
      /** ipset prints some port errors without "Error in line N:". */
      readonly lineless?: boolean;
    };

export interface ParsedElement {
  /** Canonical text. */
  readonly text: string;
  /** Prefix length of a net part (hash:net, hash:ip,port,net), for the kernel's checks. */
  readonly cidr?: number;
  /** bitmap:port's port, for the range check. */
  readonly port?: number;
}

class EntryFail {
  constructor(
    readonly message: string,
    readonly lineless = false,
  ) {}
}

const ORDINALS = ["First", "Second", "Third"];
const COUNTS = ["No", "One", "Two", "Three"];

function parseIPPart(text: string, family: InetFamily): string {
  const addr = parseIPInet(text);
  if (!addr || (addr.family === "IPv4") !== (family === "inet")) {
    throw new EntryFail(
      `Syntax error: cannot parse ${text}: resolving to ${family === "inet" ? "IPv4" : "IPv6"} address failed`,
    );
  }
  return addr.ip;
}

function portFailure(port: string, proto: string): never {
  const n = /^\d+$/.test(port) ? Number(port) : Number.NaN;
  const first = Number.isNaN(n) ? `'${port}' is invalid as number` : `'${port}' is out of range 0-65535`;
  throw new EntryFail(
    `Syntax error: ${first}\nSyntax error: '${proto}' is invalid as number\ncannot parse '${port}' as a ${proto} port`,
    true,
  );
}

function parsePortNumber(text: string, proto: string): number {
  if (!/^\d+$/.test(text) || Number(text) > 65535) portFailure(text, proto);
  return Number(text);
}

/** "[proto:]port[-port]" -> protocol and the ports it covers. */
function parseProtoPort(text: string): { proto: string; ports: number[] } {
  let proto = "tcp";
  let portText = text;
  const colon = text.indexOf(":");
  if (colon >= 0) {
    const name = text.slice(0, colon).toLowerCase();
    if (text.slice(colon + 1) === "") portFailure(text, "tcp");
    if (!PROTOCOLS.has(name))
      throw new EntryFail(`Syntax error: cannot parse '${text.slice(0, colon)}' as a protocol`);
    proto = name;
    portText = text.slice(colon + 1);
  }
  const dash = portText.indexOf("-");
  if (dash < 0) return { proto, ports: [parsePortNumber(portText, proto)] };
  let lo = parsePortNumber(portText.slice(0, dash), proto);
  let hi = parsePortNumber(portText.slice(dash + 1), proto);
  if (lo > hi) [lo, hi] = [hi, lo];
  const ports: number[] = [];
  for (let p = lo; p <= hi; p++) ports.push(p);
  return { proto, ports };
}

function parseNetPart(text: string, family: InetFamily): { text: string; cidr: number } {
  const slash = text.indexOf("/");
  const ip = parseIPPart(slash < 0 ? text : text.slice(0, slash), family);
  const parsed = parseCIDRInet(slash < 0 ? ip : `${ip}${text.slice(slash)}`, { mask: true });
  if (!parsed)
    throw new EntryFail(
      `Syntax error: cannot parse ${text}: resolving to ${family === "inet" ? "IPv4" : "IPv6"} address failed`,
    );
  const full = parsed.family === "IPv4" ? 32 : 128;
  // A host network prints bare; anything shorter keeps its prefix length.
  return { text: parsed.prefix === full ? parsed.ip : `${parsed.ip}/${parsed.prefix}`, cidr: parsed.prefix };
}

const MAX_EXPANSION = 65536;

function expandIPv4(text: string): string[] {
  const parsed = parseCIDRInet(text, { mask: true });
  if (parsed?.family !== "IPv4")
    throw new EntryFail(`Syntax error: cannot parse ${text}: resolving to IPv4 address failed`);
  const size = 2 ** (32 - parsed.prefix);
  if (size > MAX_EXPANSION)
    throw new EntryFail("The range you specified exceeds the size limit of the set type.");
  const base = parsed.bytes.reduce((acc, b) => acc * 256 + b, 0);
  const out: string[] = [];
  for (let i = 0; i < size; i++) {
    const n = base + i;
    out.push([24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join("."));
  }
  return out;
}

/**
 * Parses an element for a set of `type` and `family` the way ipset's parser does, returning the
 * canonical element(s) ipset would store, or ipset's own message for what it rejects.
 */
export function parseEntry(type: IpsetType, family: InetFamily, entry: string): EntryParse {
  try {
    return { ok: true, elements: parseElements(type, family, entry) };
  } catch (err) {
    if (err instanceof EntryFail) return { ok: false, message: err.message, lineless: err.lineless };
    throw err;
  }
}

function parseElements(type: IpsetType, family: InetFamily, entry: string): ParsedElement[] {
  const want = separators(type);
  const parts = entry.split(",");
  const found = parts.length - 1;
  if (found > want) {
    throw new EntryFail(
      want === 0
        ? `Syntax error: Elem separator in ${entry}, but settype ${type} supports none.`
        : `Syntax error: ${COUNTS[found] ?? found} elem separators in ${entry}, but settype ${type} supports ${(COUNTS[want] ?? String(want)).toLowerCase()}.`,
    );
  }
  const missing = parts.indexOf("");
  if (found < want || (missing > 0 && missing <= want)) {
    const at = found < want ? found + 1 : missing;
    throw new EntryFail(`Syntax error: ${ORDINALS[at] ?? "An"} element is missing from ${entry}.`);
  }
  switch (type) {
    case "hash:ip":
      if (parts[0]!.includes("/") && family === "inet")
        return expandIPv4(parts[0]!).map((text) => ({ text }));
      return [{ text: parseIPPart(parts[0]!, family) }];
    case "hash:net": {
      const net = parseNetPart(parts[0]!, family);
      return [{ text: net.text, cidr: net.cidr }];
    }
    case "bitmap:port": {
      const { ports } = parseProtoPort(parts[0]!);
      return ports.map((port) => ({ text: String(port), port }));
    }
    default: {
      const ip = parseIPPart(parts[0]!, family);
      const { proto, ports } = parseProtoPort(parts[1]!);
      let tail = "";
      let cidr: number | undefined;
      if (type === "hash:ip,port,ip") {
        if (parts[2]!.includes("/"))
          throw new EntryFail(`Syntax error: plain IP address must be supplied: ${parts[2]}`);
        tail = `,${parseIPPart(parts[2]!, family)}`;
      } else if (type === "hash:ip,port,net") {
        const net = parseNetPart(parts[2]!, family);
        tail = `,${net.text}`;
        cidr = net.cidr;
      }
      return ports.map((port) => ({
        text: `${ip},${proto}:${port}${tail}`,
        ...(cidr !== undefined ? { cidr } : {}),
      }));
    }
  }
}

/** Why ipset would refuse `entry` for a set of this type, or undefined when it is well formed. */
export function entryProblem(
  type: IpsetType,
  entry: string,
  family: InetFamily = "inet",
): string | undefined {
  const res = parseEntry(type, family, entry);
  if (!res.ok) return res.message.split("\n")[0];
  if (res.elements.length !== 1) return `${entry} is a range, not one element`;
  const cidr = res.elements[0]!.cidr;
  if (cidr === 0) return "The value of the CIDR parameter of the IP address is invalid";
  return undefined;
}

/**
 * Upstream's entry formats, checked: hash:ip "IP"; hash:ip,port "IP,proto:port";
 * hash:ip,port,ip "IP,proto:port,IP"; hash:ip,port,net "IP,proto:port,CIDR"; hash:net "CIDR";
 * bitmap:port "port". Protocols are tcp, udp and sctp; addresses must be of `family`.
 */
export function validateEntry(type: IpsetType, entry: string, family: InetFamily = "inet"): boolean {
  if (family === "inet" && plainIPv4Entry(type, entry)) return true;
  return entryProblem(type, entry, family) === undefined;
}

/** Decimal digits in text[start, end) as a number (at most `max`), or -1. */
function decimal(text: string, start: number, end: number, max: number): number {
  if (end <= start || end - start > 5) return -1;
  let n = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return -1;
    n = n * 10 + (c - 48);
  }
  return n <= max ? n : -1;
}

const PLAIN_PROTOCOLS = ["tcp:", "udp:", "sctp:"];

/**
 * The entries the proxier writes by the million, recognised without parsing (nothing is made):
 * canonical IPv4 "IP,proto:port" for hash:ip,port, with ",IP" for hash:ip,port,ip and
 * ",IP[/len]" (len 1-32) for hash:ip,port,net. True only where parseEntry also finds one valid
 * element; anything else (false) goes the whole way through parseEntry.
 */
function plainIPv4Entry(type: IpsetType, entry: string): boolean {
  const parts = separators(type);
  if (parts === 0) return false;
  const comma = entry.indexOf(",");
  if (comma < 0 || canonicalIPv4Value(entry, 0, comma) < 0) return false;
  const proto = PLAIN_PROTOCOLS.find((p) => entry.startsWith(p, comma + 1));
  if (proto === undefined) return false;
  const portStart = comma + 1 + proto.length;
  const next = entry.indexOf(",", portStart);
  const portEnd = next < 0 ? entry.length : next;
  if (decimal(entry, portStart, portEnd, 65535) < 0) return false;
  if (parts === 1) return next < 0;
  if (next < 0 || entry.indexOf(",", next + 1) >= 0) return false;
  const slash = entry.indexOf("/", next + 1);
  if (slash < 0) return canonicalIPv4Value(entry, next + 1) >= 0;
  if (type !== "hash:ip,port,net" || canonicalIPv4Value(entry, next + 1, slash) < 0) return false;
  const len = entry.charCodeAt(slash + 1) === 48 ? -1 : decimal(entry, slash + 1, entry.length, 32);
  return len >= 1;
}

/**
 * The text `ipset save` prints for an element written as `entry` ("10.0.0.1,TCP:80" ->
 * "10.0.0.1,tcp:80", "...,10.1.2.3/32" -> "...,10.1.2.3", CIDRs to their network), so desired
 * entries compare equal to what listSets() returns. undefined when ipset would refuse it.
 */
export function canonicalEntry(
  type: IpsetType,
  entry: string,
  family: InetFamily = "inet",
): string | undefined {
  if (entryProblem(type, entry, family) !== undefined) return undefined;
  const res = parseEntry(type, family, entry);
  return res.ok ? res.elements[0]?.text : undefined;
}
