// The text forms of the IPVS table: `ipvsadm --restore` input (what the client writes),
// `ipvsadm -L -n` and `ipvsadm -S -n` output (what the client reads and the fake prints).
// Layouts follow ipvsadm 1.31's print_title()/print_service_entry().

import { collectYoungGarbage } from "../../runtime.ts";
import { flatString } from "../../util/flat-string.ts";
import { LinePieces, type LineSink, NO_LINES } from "../../util/line-pieces.ts";
import { canonicalIPv4Value, compareIPs, parseIPInet } from "../../util/net/address.ts";
import { familyNumber, familyOf, type IPFamily } from "../../util/net/family.ts";
import { joinHostPort } from "../../util/net/host-port.ts";
import type { Protocol } from "../../util/net/protocol.ts";
import { streamedPieces } from "../../util/streamed-pieces.ts";
import { IpvsError } from "./errors.ts";
import {
  ipvsAddress,
  ipvsPort,
  ipvsScheduler,
  ipvsSchedulerFlags,
  ipvsTimeout,
  ipvsWeight,
} from "./restore-text.ts";
import {
  type DestSpec,
  isDefaultNetmask,
  type ListFormat,
  parseIpvsadmArgs,
  restoreLineWords,
  type ServiceSpec,
  SVC_F_ONEPACKET,
  SVC_F_PERSISTENT,
  SVC_F_SCHED1,
  SVC_F_SCHED2,
  SVC_F_SCHED3,
  schedFlagNames,
} from "./syntax.ts";
import type {
  AddRealsChange,
  IpvsChange,
  IpvsChanges,
  IpvsService,
  RealServer,
  VirtualServer,
  VirtualServerKey,
} from "./types.ts";

const SERVICE_OPTION: Readonly<Record<Protocol, string>> = {
  TCP: "-t",
  UDP: "-u",
  SCTP: "--sctp-service",
};

/** The virtual-service words of an ipvsadm command: "-t 10.96.0.1:443". */
export function serviceArgs(key: VirtualServerKey): string {
  return `${SERVICE_OPTION[key.protocol]} ${joinHostPort(key.address, key.port)}`;
}

/** SERVICE_OPTION with the blank that follows it on a line. */
const SERVICE_OPTION_WORD: Readonly<Record<Protocol, string>> = {
  TCP: "-t ",
  UDP: "-u ",
  SCTP: "--sctp-service ",
};

function invalid(message: string): never {
  throw new IpvsError({ kind: "invalid", message: `ipvs: ${message}` });
}

/** Checked addresses other than canonical IPv4 kept during one render, up to this many. */
const HOST_CACHE_LIMIT = 4096;

/** A checked real-server address as its line spells it (IPv6 bracketed), with its family. */
interface CheckedHost {
  readonly family: IPFamily;
  readonly host: string;
}

/**
 * Writes lines one after another as parts (the op word, the virtual server's words, a tail),
 * checking each virtual server key and real server once rather than on every line and making
 * no string per line: the real servers of one virtual server follow each other and share its
 * key object (so "-t VIP:PORT" is made once per virtual server), a real server is written as
 * its own address string with ":PORT" and " -m -w 1" words shared by every line (so no string
 * is made per real server either), and the virtual servers of a port share their settings
 * (" -s rr"). Every word still comes from restore-text.ts.
 */
class LineRenderer {
  // The last virtual server key and its checked words: option ("-t "), host, ":PORT".
  private lastKey: VirtualServerKey | undefined;
  private family: IPFamily = "IPv4";
  private option = "";
  private host = "";
  private portWord = "";
  /** ":PORT" words, by port. */
  private readonly portWords = new Map<number, string>();
  /** The last service line's settings and the tail they make (" -s rr", ...). */
  private lastSettings: readonly [string, number, readonly string[]] | undefined;
  private lastServiceTail = "";
  /** Checked hosts of addresses that are not canonical IPv4, by address. */
  private readonly hosts = new Map<string, CheckedHost>();
  /** " -m -w WEIGHT" words, by weight. */
  private readonly weightWords = new Map<number, string>();

  constructor(private readonly out: LineSink) {}

  /** Checks a virtual server key (once for a run of lines with the same key object). */
  private key(key: VirtualServerKey): void {
    if (key === this.lastKey) return;
    this.lastKey = undefined;
    if (!(key.protocol in SERVICE_OPTION)) invalid(`unknown protocol ${JSON.stringify(key.protocol)}`);
    const addr = ipvsAddress(key.address, "virtual server");
    const port = ipvsPort(key.port, "virtual server", true);
    const portWord = this.portText(port);
    this.family = addr.family;
    this.option = SERVICE_OPTION_WORD[key.protocol];
    this.host = addr.family === "IPv6" ? `[${addr.ip}]` : addr.ip;
    this.portWord = portWord;
    this.lastKey = key;
  }

  /** The checked key's words, "-t 10.96.0.1:443", as parts of the current line. */
  private keyWords(): void {
    this.out.part(this.option);
    this.out.part(this.host);
    this.out.part(this.portWord);
  }

  // Every word of a line comes from restore-text.ts, which checks it.
  private service(op: "-A " | "-E ", s: VirtualServer): void {
    this.key(s);
    const scheduler = ipvsScheduler(s.scheduler);
    const timeout = ipvsTimeout(s.timeout);
    if (s.port === 0 && timeout === 0) invalid(`${this.host}:0: port 0 needs persistence`);
    const last = this.lastSettings;
    if (!last || last[0] !== scheduler || last[1] !== timeout || last[2] !== s.flags) {
      let tail = ` -s ${scheduler}`;
      if (timeout > 0) tail += ` -p ${timeout}`;
      if (s.flags.length > 0) tail += ` -b ${ipvsSchedulerFlags(scheduler, s.flags)}`;
      this.lastServiceTail = tail;
      this.lastSettings = [scheduler, timeout, s.flags];
    }
    this.out.part(op);
    this.keyWords();
    this.out.part(this.lastServiceTail);
    this.out.endLine();
  }

  private real(
    op: "-a " | "-e " | "-d ",
    vs: VirtualServerKey,
    address: string,
    port: number,
    weight?: number,
  ): void {
    this.key(vs);
    // Checked in the order address, port, weight, then the family against the service's.
    let host = address;
    let family: IPFamily = "IPv4";
    if (canonicalIPv4Value(host) < 0) {
      const checked = this.checkedHost(host);
      host = checked.host;
      family = checked.family;
    }
    const portWord = this.portText(ipvsPort(port, "real server", true));
    const weightWord = op === "-d " ? undefined : this.weightWord(weight ?? Number.NaN);
    if (family !== this.family) invalid(`real server ${address} is not of the service's family`);
    this.out.part(op);
    this.keyWords();
    this.out.part(" -r ");
    this.out.part(host);
    this.out.part(portWord);
    if (weightWord !== undefined) this.out.part(weightWord);
    this.out.endLine();
  }

  /** An address that is not canonical IPv4, checked (and spelled canonical) once per render. */
  private checkedHost(address: string): CheckedHost {
    let checked = this.hosts.get(address);
    if (!checked) {
      const addr = ipvsAddress(address, "real server");
      checked = { family: addr.family, host: addr.ip.includes(":") ? `[${addr.ip}]` : addr.ip };
      if (this.hosts.size >= HOST_CACHE_LIMIT) this.hosts.clear();
      this.hosts.set(address, checked);
    }
    return checked;
  }

  /** ":PORT" for a checked port. */
  private portText(port: number): string {
    let word = this.portWords.get(port);
    if (word === undefined) {
      word = `:${port}`;
      this.portWords.set(port, word);
    }
    return word;
  }

  /** " -m -w WEIGHT" (masquerading, as upstream programs every real server) for a checked weight. */
  private weightWord(weight: number): string {
    const checked = ipvsWeight(weight);
    let word = this.weightWords.get(checked);
    if (word === undefined) {
      word = ` -m -w ${checked}`;
      this.weightWords.set(checked, word);
    }
    return word;
  }

  write(change: IpvsChange | AddRealsChange): void {
    switch (change.op) {
      case "add-reals": {
        const { reals } = change;
        for (let i = 0; i < reals.length; i++)
          this.real("-a ", change.key, reals.address(i), reals.port(i), reals.weight(i));
        return;
      }
      case "add-service":
        this.service("-A ", change.server);
        return;
      case "edit-service":
        this.service("-E ", change.server);
        return;
      case "delete-service":
        this.key(change.key);
        this.out.part("-D ");
        this.keyWords();
        this.out.endLine();
        return;
      case "add-real":
        this.real("-a ", change.key, change.real.address, change.real.port, change.real.weight);
        return;
      case "edit-real":
        this.real("-e ", change.key, change.real.address, change.real.port, change.real.weight);
        return;
      case "delete-real":
        this.real("-d ", change.key, change.real.address, change.real.port);
        return;
    }
  }
}

/**
 * Checks every change as a restore line would check it, writing nothing: throws IpvsError(kind
 * "invalid") for the first one ipvsadm could not be given. A writer that speaks to the kernel
 * directly (netlink/encode.ts) runs this first, so both writers take exactly the same input.
 */
export function checkChanges(changes: IpvsChanges): void {
  const checker = new LineRenderer(NO_LINES);
  for (const change of changes) checker.write(change);
}

/** The changes one line each (a new virtual server's real servers one by one), as copies. */
export function* changeLines(changes: IpvsChanges): Generator<IpvsChange> {
  for (const change of changes) {
    if (change.op !== "add-reals") {
      yield change;
      continue;
    }
    const { key, reals } = change;
    const copy = { address: key.address, port: key.port, protocol: key.protocol };
    for (let i = 0; i < reals.length; i++)
      yield {
        op: "add-real",
        key: copy,
        real: { address: reals.address(i), port: reals.port(i), weight: reals.weight(i) },
      };
  }
}

/** One change as one `ipvsadm --restore` line. Throws IpvsError(kind "invalid") for bad input. */
export function renderChange(change: IpvsChange): string {
  const out = new LinePieces();
  new LineRenderer(out).write(change);
  return out.finish().join("").slice(0, -1);
}

/** Every change, in order, as `ipvsadm --restore` input (one line each, newline-terminated). */
export function renderRestore(changes: IpvsChanges): string {
  return renderRestorePieces(changes).join("");
}

/**
 * renderRestore's text in whole-line pieces of about 64 KiB (LinePieces). Every change is
 * checked before a piece is returned (a refused one throws here).
 */
export function renderRestorePieces(changes: IpvsChanges): string[] {
  const out = new LinePieces();
  const renderer = new LineRenderer(out);
  for (const change of changes) renderer.write(change);
  return out.finish();
}

/**
 * renderRestore's text as what the client hands to exec: pieces made as ipvsadm reads them
 * (streamedPieces), and made anew if read again. Every change is checked first, writing
 * nothing, so a refused one throws here, before ipvsadm has run a line of it (ipvsadm runs each
 * line as it reads it: an input found bad halfway would leave half of it applied).
 */
export function restoreInput(changes: IpvsChanges): Iterable<string> {
  checkChanges(changes);
  return streamedPieces(function* (out) {
    const renderer = new LineRenderer(out);
    for (const change of changes) {
      renderer.write(change);
      // Paused only once a piece is complete: a pause per line costs more than the line.
      if (out.ready) yield;
    }
  });
}

// ---- reading ----

function parseFailure(line: number, text: string, why: string): never {
  throw new IpvsError({
    kind: "parse",
    message: `ipvsadm output line ${line}: ${why}: ${JSON.stringify(text)}`,
  });
}

function splitHostPort(text: string, words: WordCache): { address: string; port: number } | undefined {
  // The common case without a regular expression: a canonical IPv4 address and a port.
  const colon = text.indexOf(":");
  if (colon > 0 && canonicalIPv4Value(text, 0, colon) >= 0) {
    const port = decimalPort(text, colon + 1);
    if (port >= 0) return { address: words.get(text.slice(0, colon)), port };
  }
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^:]+):(\d+)$/.exec(text);
  if (!m) return undefined;
  const addr = parseIPInet(m[1]!);
  const port = Number(m[2]);
  if (!addr || port > 65535) return undefined;
  return { address: addr.ip, port };
}

/** text[from..] as a port: 1-5 decimal digits up to 65535, or -1. */
function decimalPort(text: string, from: number): number {
  const digits = text.length - from;
  if (digits < 1 || digits > 5) return -1;
  let n = 0;
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return -1;
    n = n * 10 + (c - 48);
  }
  return n <= 65535 ? n : -1;
}

/** Words kept from a listing, up to this many distinct ones per read (more are copied apart). */
const WORD_CACHE_LIMIT = 1 << 16;

/**
 * Words read out of a listing (addresses, scheduler names), each kept once and as a string of
 * its own: a slice of the listing would keep the whole listing alive (hundreds of megabytes for
 * two million virtual servers) for as long as the table read from it.
 */
class WordCache {
  private readonly words = new Map<string, string>();

  get(slice: string): string {
    const known = this.words.get(slice);
    if (known !== undefined) return known;
    const word = flatString(slice);
    if (this.words.size < WORD_CACHE_LIMIT) this.words.set(word, word);
    return word;
  }
}

/**
 * Lines between two young collections while a listing is parsed (see parseIpvsList). Every line
 * leaves a few short strings and a match behind; in a process with a big heap the runtime would
 * otherwise let them pile up to about that heap's size (80 MB for 165,000 lines).
 */
const LINES_PER_COLLECTION = 8192;

const SERVICE_LINE = /^(TCP|UDP|SCTP)\s+(\S+)\s+(\S+)(.*)$/;
const REAL_LINE = /^\s+->\s+(\S+)\s+(Masq|Local|Route|Tunnel)\s+(-?\d+)\s+(\d+)\s+(\d+)\s*$/;
const NO_FLAGS: readonly string[] = Object.freeze([]);

/**
 * Parses `ipvsadm -L -n [--exact]` output: virtual servers with their scheduler, flags and
 * persistence, and real servers with weights and connection counts. Firewall-mark services
 * (which kube-proxy never creates) are skipped with their real servers. Read line by line (the
 * listing is never split into an array of lines); addresses and scheduler names are shared
 * strings, and virtual servers without scheduler flags share one empty list.
 */
export function parseIpvsList(text: string): IpvsService[] {
  const out: { server: IpvsService["server"]; reals: RealServer[] }[] = [];
  const words = new WordCache();
  let current: { reals: RealServer[] } | undefined;
  let skipping = false;
  for (let from = 0, n = 1; from <= text.length; n++) {
    const newline = text.indexOf("\n", from);
    const end = newline < 0 ? text.length : newline;
    const cut = end > from && text.charCodeAt(end - 1) === 13 ? end - 1 : end;
    const line = text.slice(from, cut);
    from = end + 1;
    if (n % LINES_PER_COLLECTION === 0) collectYoungGarbage();
    if (/^\s*$/.test(line)) continue;
    if (/^IP Virtual Server version /.test(line) || /^Prot LocalAddress:Port/.test(line)) continue;
    if (/^\s+->\s+RemoteAddress:Port/.test(line)) continue;
    const svc = SERVICE_LINE.exec(line);
    if (svc) {
      const addr = splitHostPort(svc[2]!, words);
      if (!addr) parseFailure(n, line, "bad virtual server address");
      const scheduler = words.get(svc[3]!);
      let flags: readonly string[] = NO_FLAGS;
      let timeout = 0;
      const rest = svc[4]!.trim();
      const group = /^\(([^)]*)\)/.exec(rest);
      if (group)
        flags = group[1]!
          .split(",")
          .filter((f) => f !== "")
          .map((f) => words.get(f));
      const persistent = /\bpersistent (\d+)/.exec(rest);
      if (persistent) timeout = Number(persistent[1]);
      const entry = {
        server: { ...addr, protocol: PROTOCOLS[svc[1] as Protocol], scheduler, flags, timeout },
        reals: [] as RealServer[],
      };
      out.push(entry);
      current = entry;
      skipping = false;
      continue;
    }
    if (/^FWM\s+/.test(line)) {
      current = undefined;
      skipping = true;
      continue;
    }
    const real = REAL_LINE.exec(line);
    if (real) {
      if (skipping) continue;
      if (!current) parseFailure(n, line, "real server before any virtual server");
      const addr = splitHostPort(real[1]!, words);
      if (!addr) parseFailure(n, line, "bad real server address");
      current.reals.push({
        ...addr,
        weight: Number(real[3]),
        activeConnections: Number(real[4]),
        inactiveConnections: Number(real[5]),
      });
      continue;
    }
    parseFailure(n, line, "unrecognised line");
  }
  return out;
}

/** The protocol names as constants (not slices of a listing). */
const PROTOCOLS: Readonly<Record<Protocol, Protocol>> = { TCP: "TCP", UDP: "UDP", SCTP: "SCTP" };

/**
 * Parses `ipvsadm -S -n` output (restore syntax). Connection counts are not part of it and
 * read as 0. Firewall-mark services are skipped.
 */
export function parseIpvsSave(text: string): IpvsService[] {
  const services = new Map<string, { server: IpvsService["server"]; reals: RealServer[] }>();
  const id = (k: VirtualServerKey) => `${k.protocol}/${joinHostPort(k.address, k.port)}`;
  text.split("\n").forEach((raw, i) => {
    const words = restoreLineWords(raw);
    if (words.length === 0) return;
    if (words.includes("-f") || words.includes("--fwmark-service")) return;
    const res = parseIpvsadmArgs(words, "ipvsadm", { keepDestPort: true });
    if (!res.ok) parseFailure(i + 1, raw, res.message);
    const cmd = res.command;
    if (cmd.kind === "add-service") {
      services.set(id(cmd.service.key), { server: toVirtualServer(cmd.service), reals: [] });
    } else if (cmd.kind === "add-server") {
      const svc = services.get(id(cmd.key));
      if (!svc) parseFailure(i + 1, raw, "real server of an unknown virtual server");
      svc.reals.push(toRealServer(cmd.dest));
    } else {
      parseFailure(i + 1, raw, "not a -A or -a line");
    }
  });
  return [...services.values()];
}

function toVirtualServer(s: ServiceSpec): IpvsService["server"] {
  return {
    ...s.key,
    scheduler: s.scheduler,
    flags: schedFlagNames(s.scheduler, s.flags),
    timeout: s.flags & SVC_F_PERSISTENT ? s.timeout : 0,
  };
}

function toRealServer(d: DestSpec): RealServer {
  return { address: d.address, port: d.port, weight: d.weight, activeConnections: 0, inactiveConnections: 0 };
}

// ---- printing (the fake's side) ----

export interface ListedDest extends DestSpec {
  readonly activeConnections: number;
  readonly inactiveConnections: number;
}

export interface ListedService {
  readonly service: ServiceSpec;
  readonly dests: readonly ListedDest[];
}

const SCHED_BITS = SVC_F_SCHED1 | SVC_F_SCHED2 | SVC_F_SCHED3;
const PROTOCOL_NUMBER: Readonly<Record<Protocol, number>> = { TCP: 6, UDP: 17, SCTP: 132 };
const FORWARD_NAME = { masq: "Masq", route: "Route", tunnel: "Tunnel" } as const;
const FORWARD_SWITCH = { masq: "-m", route: "-g", tunnel: "-i" } as const;

/** ipvs_cmp_services(): family, protocol number, address, port. */
export function compareKeys(a: VirtualServerKey, b: VirtualServerKey): number {
  const fa = familyNumber(familyOf(a.address));
  const fb = familyNumber(familyOf(b.address));
  return (
    fa - fb ||
    PROTOCOL_NUMBER[a.protocol] - PROTOCOL_NUMBER[b.protocol] ||
    compareIPs(a.address, b.address) ||
    a.port - b.port
  );
}

// ---- ipvsadm's sort (libipvs ipvs_cmp_services/ipvs_cmp_dests under glibc's qsort) ----

// An address as libipvs compares it: 32-bit words in host order; IPv4 fills the first word of
// the 16-byte union and leaves the rest zero.
function addrWords(address: string): number[] {
  const p = parseIPInet(address);
  const bytes = p?.bytes ?? [];
  return [0, 1, 2, 3].map((w) => [0, 1, 2, 3].reduce((acc, i) => acc * 256 + (bytes[w * 4 + i] ?? 0), 0));
}

// libipvs subtracts unsigned words and returns the difference as an int: two addresses 2^31
// or more apart compare backwards (192.168.0.1 sorts before 10.0.0.1), and the order is not
// even transitive, so the result depends on the order the kernel handed over.
const wrapDiff = (a: number, b: number) => (a - b) | 0;

function cmpAddrWords(aFamily6: boolean, a: readonly number[], b: readonly number[]): number {
  if (!aFamily6) return wrapDiff(a[0]!, b[0]!);
  for (let i = 0; i < 4; i++) {
    const r = wrapDiff(a[i]!, b[i]!);
    if (r !== 0) return r;
  }
  return 0;
}

/** ipvs_cmp_services(): address family, protocol number, address (see wrapDiff), port. */
export function ipvsadmServiceOrder(a: VirtualServerKey, b: VirtualServerKey): number {
  const a6 = familyOf(a.address) === "IPv6";
  const b6 = familyOf(b.address) === "IPv6";
  if (a6 !== b6) return a6 ? 1 : -1;
  return (
    PROTOCOL_NUMBER[a.protocol] - PROTOCOL_NUMBER[b.protocol] ||
    cmpAddrWords(a6, addrWords(a.address), addrWords(b.address)) ||
    a.port - b.port
  );
}

/** ipvs_cmp_dests(): address (by the first one's family, see wrapDiff), then port. */
export function ipvsadmDestOrder(a: { address: string; port: number }, b: { address: string; port: number }) {
  return (
    cmpAddrWords(familyOf(a.address) === "IPv6", addrWords(a.address), addrWords(b.address)) ||
    a.port - b.port
  );
}

/**
 * glibc's qsort (a top-down merge sort taking from the left run on ties), so that a comparison
 * that is not transitive orders things exactly as ipvsadm does.
 */
export function glibcSort<T>(items: readonly T[], cmp: (a: T, b: T) => number): T[] {
  if (items.length <= 1) return [...items];
  const n1 = Math.floor(items.length / 2);
  const left = glibcSort(items.slice(0, n1), cmp);
  const right = glibcSort(items.slice(n1), cmp);
  const out: T[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length && j < right.length) {
    if (cmp(left[i]!, right[j]!) <= 0) out.push(left[i++]!);
    else out.push(right[j++]!);
  }
  while (i < left.length) out.push(left[i++]!);
  while (j < right.length) out.push(right[j++]!);
  return out;
}

/**
 * ipvsadm's listing order. `services` and each one's dests must come in the kernel's order (the
 * kernel lists a service's real servers newest first), since the sort depends on it.
 */
export function sortServices(
  services: readonly ListedService[],
  opts: { nosort?: boolean } = {},
): ListedService[] {
  if (opts.nosort) return [...services];
  return glibcSort(services, (a, b) => ipvsadmServiceOrder(a.service.key, b.service.key)).map((s) => ({
    ...s,
    dests: glibcSort(s.dests, ipvsadmDestOrder),
  }));
}

// print_title() of each listing style: the column heads and the real-server line under them.
const TITLES: Readonly<Record<ListFormat, string>> = {
  plain:
    "Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn",
  stats:
    "Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes\n  -> RemoteAddress:Port",
  rate: "Prot LocalAddress:Port                 CPS    InPPS   OutPPS    InBPS   OutBPS\n  -> RemoteAddress:Port",
  thresholds:
    "Prot LocalAddress:Port            Uthreshold Lthreshold ActiveConn InActConn \n  -> RemoteAddress:Port",
  "persistent-conn":
    "Prot LocalAddress:Port            Weight    PersistConn ActiveConn InActConn \n  -> RemoteAddress:Port",
};

// The fake keeps no traffic counters: every --stats/--rate figure is 0, as on an idle table.
const ZERO_COUNTERS = ` ${"0".padStart(8)}`.repeat(5);

/**
 * `ipvsadm -L -n` output for these services (connection counts are printed exactly either way).
 * format picks the --stats / --rate / --thresholds / --persistent-conn layout.
 */
export function formatIpvsList(
  services: readonly ListedService[],
  opts: { header?: boolean; format?: ListFormat; nosort?: boolean } = {},
): string {
  const format = opts.format ?? "plain";
  const out: string[] = [];
  if (opts.header ?? true) out.push("IP Virtual Server version 1.2.1 (size=4096)");
  out.push(TITLES[format]);
  for (const { service: s, dests } of sortServices(services, { nosort: opts.nosort ?? false })) {
    const v6 = familyOf(s.key.address) === "IPv6";
    let name = `${s.key.protocol.padEnd(4)} ${joinHostPort(s.key.address, s.key.port)}`;
    if (!v6) name = name.slice(0, 33);
    if (format === "stats" || format === "rate") out.push(`${name.padEnd(33)}${ZERO_COUNTERS}`);
    else {
      let line = `${name} ${s.scheduler}`;
      if (s.flags & SCHED_BITS) line += ` (${schedFlagNames(s.scheduler, s.flags).join(",")})`;
      if (s.flags & SVC_F_PERSISTENT) {
        line += ` persistent ${s.timeout}`;
        if (!isDefaultNetmask(s.netmask)) line += ` mask ${s.netmask}`;
      }
      if (s.flags & SVC_F_ONEPACKET) line += " ops";
      out.push(line);
    }
    for (const d of dests) {
      let dname = joinHostPort(d.address, d.port);
      if (!v6) dname = dname.slice(0, 28);
      const head = `  -> ${dname.padEnd(28)}`;
      const active = String(d.activeConnections).padEnd(10);
      const inactive = String(d.inactiveConnections).padEnd(10);
      switch (format) {
        case "stats":
        case "rate":
          out.push(`${head}${ZERO_COUNTERS}`);
          break;
        case "thresholds":
          out.push(
            `${head} ${String(d.upperThreshold ?? 0).padEnd(10)} ${String(d.lowerThreshold ?? 0).padEnd(10)} ${active} ${inactive}`,
          );
          break;
        case "persistent-conn":
          // Persistence templates are not modelled: 0 persistent connections.
          out.push(`${head} ${String(d.weight).padEnd(9)} ${"0".padEnd(11)} ${active} ${inactive}`);
          break;
        default:
          out.push(
            `${head} ${FORWARD_NAME[d.forward].padEnd(7)} ${String(d.weight).padEnd(6)} ${active} ${inactive}`,
          );
      }
    }
  }
  return `${out.join("\n")}\n`;
}

/** `ipvsadm -S -n` output for these services. */
export function formatIpvsSave(services: readonly ListedService[]): string {
  const out: string[] = [];
  for (const { service: s, dests } of sortServices(services)) {
    const svc = serviceArgs(s.key);
    let line = `-A ${svc} -s ${s.scheduler}`;
    if (s.flags & SVC_F_PERSISTENT) {
      line += ` -p ${s.timeout}`;
      if (!isDefaultNetmask(s.netmask)) line += ` -M ${s.netmask}`;
    }
    if (s.flags & SVC_F_ONEPACKET) line += " -o";
    if (s.flags & SCHED_BITS) line += ` -b ${schedFlagNames(s.scheduler, s.flags).join(",")}`;
    out.push(line);
    for (const d of dests) {
      // ipvsadm names the tunnel type of every tunnelling real server (ipip is the default).
      const tun = d.forward === "tunnel" ? " --tun-type ipip" : "";
      out.push(
        `-a ${svc} -r ${joinHostPort(d.address, d.port)} ${FORWARD_SWITCH[d.forward]} -w ${d.weight}${tun}`,
      );
    }
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`;
}

/**
 * `ipvsadm -L -n` text for a table given as `ipvsadm -S -n` text (connection counts 0), e.g. to
 * answer the client's read from a HostState's ipvsSave.
 */
export function ipvsListFromSave(save: string): string {
  const services = new Map<string, { service: ServiceSpec; dests: ListedDest[] }>();
  const id = (k: VirtualServerKey) => `${k.protocol}/${joinHostPort(k.address, k.port)}`;
  save.split("\n").forEach((raw, i) => {
    const words = restoreLineWords(raw);
    if (words.length === 0 || words.includes("-f") || words.includes("--fwmark-service")) return;
    const res = parseIpvsadmArgs(words, "ipvsadm", { keepDestPort: true });
    if (!res.ok) parseFailure(i + 1, raw, res.message);
    const cmd = res.command;
    if (cmd.kind === "add-service") services.set(id(cmd.service.key), { service: cmd.service, dests: [] });
    else if (cmd.kind === "add-server") {
      const svc = services.get(id(cmd.key));
      if (!svc) parseFailure(i + 1, raw, "real server of an unknown virtual server");
      svc.dests.push({ ...cmd.dest, activeConnections: 0, inactiveConnections: 0 });
    } else parseFailure(i + 1, raw, "not a -A or -a line");
  });
  return formatIpvsList([...services.values()]);
}
