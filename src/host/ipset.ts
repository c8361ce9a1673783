// Typed client for the ipset tool: the version check of ipvs mode's prerequisites, reading every
// set with one `ipset save`, and writing a whole sync with one `ipset restore -exist`. The line
// helpers render upstream kube-proxy's exact create/add/del lines, and the entry helpers know
// each set type's element format and how ipset prints it back.

import type { Exec, ExecResult } from "../exec/types.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import { parseCIDRInet, parseIPInet } from "../util/net/address.ts";
import type { InetFamily } from "../util/net/family.ts";
import { VersionParseError, versionAtLeast } from "../util/version.ts";

/** The oldest ipset whose set types and options the ipvs proxier relies on. */
export const MIN_IPSET_VERSION = "6.0";

export type IpsetVersionResult = { ok: true; version: string } | { ok: false; detail: string };

/** The set types ipvs mode creates (upstream's names and types). */
export type IpsetType =
  | "hash:ip"
  | "hash:ip,port"
  | "hash:ip,port,ip"
  | "hash:ip,port,net"
  | "hash:net"
  | "bitmap:port";

export const IPSET_TYPES: readonly IpsetType[] = [
  "hash:ip",
  "hash:ip,port",
  "hash:ip,port,ip",
  "hash:ip,port,net",
  "hash:net",
  "bitmap:port",
];

export interface IpsetSetSpec {
  readonly name: string;
  readonly type: IpsetType;
  /** Address family of hash sets; bitmap:port has none and reads back as "inet". */
  readonly family: InetFamily;
  /**
   * What the set is for (upstream's set comments). Kept for logs only: upstream never passes it
   * to ipset, and neither do we, so the kernel's create parameters stay identical to upstream's
   * (`create -exist` refuses a set whose extensions differ).
   */
  readonly comment: string;
  /** Default 1024. */
  readonly hashSize?: number;
  /** Default 65536. */
  readonly maxElem?: number;
  /** bitmap:port only, e.g. "0-65535" (the default). */
  readonly range?: string;
}

export interface IpsetSet {
  readonly spec: IpsetSetSpec;
  /** Entries as ipset prints them ("198.51.100.10,tcp:80"). */
  readonly entries: ReadonlySet<string>;
  /** Per-entry comments, for sets created with the comment extension (not ours). */
  readonly comments?: ReadonlyMap<string, string>;
}

export interface IpsetClient {
  /** The installed ipset version ("7.17"), or why it could not be determined. */
  version(): Promise<IpsetVersionResult>;
  /** Every set with its entries, from one `ipset save`. */
  listSets(): Promise<Map<string, IpsetSet>>;
  /**
   * One `ipset restore -exist` of a script (create/add/del/flush/destroy lines). Not atomic:
   * on failure the lines before the reported one have mostly been applied (ipset sends runs of
   * add/del lines for one set as one batch, and a batch cut short by a syntax error is dropped),
   * so callers re-read with listSets() before trusting their picture of the kernel.
   */
  restore(script: string): Promise<void>;
  /** Destroys a set; missing is not an error. */
  destroy(name: string): Promise<void>;
}

/** "ipset v7.17, protocol version: 7" -> "7.17"; undefined when no version is present. */
export function parseIpsetVersion(output: string): string | undefined {
  return /\bv(\d+\.\d+(?:\.\d+)?)\b/.exec(output)?.[1];
}

export function ipsetVersionSupported(version: string): boolean {
  try {
    return versionAtLeast(version, MIN_IPSET_VERSION);
  } catch (err) {
    if (err instanceof VersionParseError) return false;
    throw err;
  }
}

// ---- errors ----

export class IpsetError extends Error {
  override readonly name = "IpsetError";
  /** 1-based script line ipset blamed ("Error in line 3: ..."), when it named one. */
  readonly line: number | undefined;
  /** That line's text. */
  readonly text: string | undefined;
  /** ipset's message without the "ipset vX.Y:" banner and line prefix. */
  readonly reason: string;

  constructor(
    readonly command: string,
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
    script?: string,
  ) {
    const { line, reason } = parseIpsetError(stderr);
    const text = line !== undefined && script !== undefined ? script.split("\n")[line - 1] : undefined;
    const where = line === undefined ? "" : ` at line ${line}${text !== undefined ? ` (${text})` : ""}`;
    super(`${command} ${args.join(" ")}${where}: ${reason || `exit code ${exitCode}`}`);
    this.line = line;
    this.text = text;
    this.reason = reason;
  }

  /** The set (or element) named does not exist (upstream's IsNotFoundError). */
  get isNotFound(): boolean {
    return /does not exist|element is missing|it's not added/.test(this.reason);
  }
}

/** Splits ipset's stderr into the blamed line (if any) and the message. */
export function parseIpsetError(stderr: string): { line: number | undefined; reason: string } {
  const lines = stderr
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("Try `ipset help'"));
  let line: number | undefined;
  const reasons = lines.map((l) => {
    let text = l.replace(/^ipset v[\d.]+: /, "");
    const m = /^Error in line (\d+): /.exec(text);
    if (m) {
      line ??= Number(m[1]);
      text = text.slice(m[0].length);
    }
    return text;
  });
  return { line, reason: reasons.join("; ") };
}

// ---- script lines (upstream's argument order) ----

const DEFAULT_HASH_SIZE = 1024;
const DEFAULT_MAX_ELEM = 65536;
export const DEFAULT_PORT_RANGE = "0-65535";

/** `create` line of a set, as upstream's createSet builds it (without -exist; restore adds it). */
export function createLine(spec: IpsetSetSpec): string {
  if (spec.type === "bitmap:port")
    return `create ${spec.name} bitmap:port range ${spec.range ?? DEFAULT_PORT_RANGE}`;
  return (
    `create ${spec.name} ${spec.type} family ${spec.family} ` +
    `hashsize ${spec.hashSize ?? DEFAULT_HASH_SIZE} maxelem ${spec.maxElem ?? DEFAULT_MAX_ELEM}`
  );
}

export function addLine(set: string, entry: string): string {
  return `add ${set} ${entry}`;
}

export function delLine(set: string, entry: string): string {
  return `del ${set} ${entry}`;
}

export function flushLine(set: string): string {
  return `flush ${set}`;
}

export function destroyLine(set: string): string {
  return `destroy ${set}`;
}

// ---- entries ----

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
  return entryProblem(type, entry, family) === undefined;
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

// ---- reading `ipset save` ----

/** Splits an ipset line into words; double quotes group (comments may hold blanks). */
export function ipsetWords(line: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  for (let m = re.exec(line); m !== null; m = re.exec(line)) {
    out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2]!);
  }
  return out;
}

export class IpsetParseError extends Error {
  override readonly name = "IpsetParseError";
  constructor(
    readonly line: number,
    readonly text: string,
    why: string,
  ) {
    super(`ipset save output line ${line}: ${why}: ${JSON.stringify(text)}`);
  }
}

const TYPE_SET: ReadonlySet<string> = new Set(IPSET_TYPES);

/**
 * Parses `ipset save` output. Sets of types kube-proxy does not use are kept (type as printed)
 * so nothing on the host is invisible; options beyond family/hashsize/maxelem/range are ignored.
 */
export function parseIpsetSave(text: string): Map<string, IpsetSet> {
  const sets = new Map<string, { spec: IpsetSetSpec; entries: Set<string>; comments: Map<string, string> }>();
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const words = ipsetWords(line);
    const [verb, name, third] = words;
    if (verb === "create" && name && third) {
      let family: InetFamily = "inet";
      let hashSize: number | undefined;
      let maxElem: number | undefined;
      let range: string | undefined;
      for (let j = 3; j < words.length; j++) {
        const w = words[j];
        const v = words[j + 1];
        if (w === "family" && (v === "inet" || v === "inet6")) family = v;
        else if (w === "hashsize" && v) hashSize = Number(v);
        else if (w === "maxelem" && v) maxElem = Number(v);
        else if (w === "range" && v) range = v;
      }
      const type = third as IpsetType;
      const spec: IpsetSetSpec = {
        name,
        type,
        family,
        comment: "",
        ...(hashSize !== undefined ? { hashSize } : {}),
        ...(maxElem !== undefined ? { maxElem } : {}),
        ...(range !== undefined ? { range } : {}),
      };
      if (!TYPE_SET.has(type) && !third.includes(":"))
        throw new IpsetParseError(i + 1, raw, "unknown set type");
      sets.set(name, { spec, entries: new Set(), comments: new Map() });
      return;
    }
    if (verb === "add" && name && third) {
      const set = sets.get(name);
      if (!set) throw new IpsetParseError(i + 1, raw, "entry of a set not created before");
      set.entries.add(third);
      const c = words.indexOf("comment", 3);
      if (c >= 0 && words[c + 1] !== undefined) set.comments.set(third, words[c + 1]!);
      return;
    }
    throw new IpsetParseError(i + 1, raw, "unrecognised line");
  });
  const out = new Map<string, IpsetSet>();
  for (const [name, s] of sets) {
    out.set(name, s.comments.size > 0 ? s : { spec: s.spec, entries: s.entries });
  }
  return out;
}

// ---- the client ----

export interface IpsetClientOptions {
  exec: Exec;
  logger?: Logger;
  /** Bound on every run except the version probe. */
  timeoutMs?: number;
}

const VERSION_TIMEOUT_MS = 10_000;
const DEFAULT_TIMEOUT_MS = 60_000;

export function createIpsetClient({ exec, logger, timeoutMs }: IpsetClientOptions): IpsetClient {
  const log = (logger ?? nullLogger).named("ipset");
  const bound = timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const run = (args: string[], stdin?: string): Promise<ExecResult> =>
    exec.run({ cmd: "ipset", args, timeoutMs: bound, ...(stdin !== undefined ? { stdin } : {}) });

  return {
    async version() {
      const res = await exec.run({ cmd: "ipset", args: ["--version"], timeoutMs: VERSION_TIMEOUT_MS });
      if (res.code === 127) return { ok: false, detail: "ipset not found" };
      if (res.code !== 0) {
        const why = res.timedOut ? "timed out" : res.stderr.trim() || `exit code ${res.code}`;
        return { ok: false, detail: `ipset --version failed: ${why}` };
      }
      const version = parseIpsetVersion(res.stdout);
      if (!version) {
        return { ok: false, detail: `cannot parse ipset version from ${JSON.stringify(res.stdout.trim())}` };
      }
      return { ok: true, version };
    },

    async listSets() {
      const args = ["save"];
      const res = await run(args);
      if (res.code !== 0) throw new IpsetError("ipset", args, res.code, res.stderr || res.stdout);
      return parseIpsetSave(res.stdout);
    },

    async restore(script: string) {
      if (script.trim() === "") return;
      const args = ["restore", "-exist"];
      const input = script.endsWith("\n") ? script : `${script}\n`;
      log.v(4).info("Running ipset restore", { lines: input.split("\n").length - 1 });
      const res = await run(args, input);
      if (res.code === 0) return;
      const err = new IpsetError("ipset", args, res.code, res.stderr || res.stdout, input);
      log.error("ipset restore failed", { err, line: err.line });
      throw err;
    },

    async destroy(name: string) {
      const args = ["destroy", name];
      const res = await run(args);
      if (res.code === 0) return;
      const err = new IpsetError("ipset", args, res.code, res.stderr || res.stdout);
      if (/does not exist/.test(err.reason)) return;
      throw err;
    },
  };
}
