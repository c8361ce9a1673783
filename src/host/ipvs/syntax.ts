// ipvsadm's command line, as ipvsadm 1.31 reads it (popt options, then the command/option
// table, then per-command checks). The fake runs every invocation and every --restore line
// through this, and the client uses it to find which line of its own batch ipvsadm refused,
// since ipvsadm never prints line numbers.

import { parseIPInet } from "../../util/net/address.ts";
import type { IPFamily } from "../../util/net/family.ts";
import type { Protocol } from "../../util/net/protocol.ts";
import type { VirtualServerKey } from "./types.ts";

/** IP_VS_SVC_F_* bits that ipvsadm shows. */
export const SVC_F_PERSISTENT = 0x1;
export const SVC_F_ONEPACKET = 0x4;
export const SVC_F_SCHED1 = 0x8;
export const SVC_F_SCHED2 = 0x10;
export const SVC_F_SCHED3 = 0x20;

export type ForwardMethod = "masq" | "route" | "tunnel";

export interface ServiceSpec {
  readonly key: VirtualServerKey;
  readonly scheduler: string;
  /** IP_VS_SVC_F_* bits (persistent, one-packet, scheduler flags). */
  readonly flags: number;
  /** Seconds; meaningful with SVC_F_PERSISTENT. */
  readonly timeout: number;
  /**
   * Persistence granularity as ipvsadm prints it: a dotted mask (IPv4) or a prefix length
   * (IPv6); undefined = -M not given (the kernel then keeps 255.255.255.255 or 128).
   */
  readonly netmask?: string;
}

export interface DestSpec {
  readonly address: string;
  readonly port: number;
  readonly weight: number;
  readonly forward: ForwardMethod;
  /** Connection thresholds (-x, -y); 0 = none. */
  readonly upperThreshold?: number;
  readonly lowerThreshold?: number;
}

/** What `-L` prints besides the plain table (--stats wins over --rate, and so on). */
export type ListFormat = "plain" | "stats" | "rate" | "thresholds" | "persistent-conn";

export type IpvsadmCommand =
  | { readonly kind: "add-service" | "edit-service"; readonly service: ServiceSpec }
  | { readonly kind: "delete-service" | "zero"; readonly key?: VirtualServerKey }
  | {
      readonly kind: "add-server" | "edit-server" | "delete-server";
      readonly key: VirtualServerKey;
      readonly dest: DestSpec;
    }
  | { readonly kind: "flush" | "restore" | "version" | "help" }
  | { readonly kind: "save"; readonly numeric: boolean }
  | {
      readonly kind: "list";
      readonly numeric: boolean;
      readonly key?: VirtualServerKey;
      readonly what: "services" | "timeout" | "connections" | "daemon";
      readonly format: ListFormat;
      /** --nosort: the kernel's own order. */
      readonly nosort: boolean;
    }
  | { readonly kind: "set"; readonly tcp: number; readonly tcpFin: number; readonly udp: number }
  | { readonly kind: "daemon" };

export type ParseOutcome =
  | { readonly ok: true; readonly command: IpvsadmCommand }
  /** exit: what ipvsadm exits with (2 for fail(), 255 for the "try --help" exits). */
  | { readonly ok: false; readonly message: string; readonly exit: number; readonly fatal: boolean };

/** Maximum persistence and connection timeouts ipvsadm accepts (31 days). */
export const MAX_TIMEOUT = 86400 * 31;
/** Default persistence timeout of "-p" without a value (ipvsadm 1.31: 6 minutes). */
export const DEFAULT_PERSISTENT_TIMEOUT = 360;
/** The largest weight ipvsadm takes (the kernel's weight is an int). */
export const MAX_WEIGHT = 2 ** 31 - 1;
const DEF_SCHED = "wlc";

// Command and option columns of ipvsadm's legality table, in its order.
const CMD_NAMES = {
  "add-service": "add-service",
  "edit-service": "edit-service",
  "delete-service": "delete-service",
  flush: "flush",
  list: "list",
  "add-server": "add-server",
  "delete-server": "delete-server",
  "edit-server": "edit-server",
  set: "set",
  "start-daemon": "start-daemon",
  "stop-daemon": "stop-daemon",
  restore: "restore",
  save: "save",
  zero: "zero",
} as const;
type Cmd = keyof typeof CMD_NAMES;

const OPT_NAMES = [
  "numeric",
  "connection",
  "service-address",
  "scheduler",
  "persistent",
  "netmask",
  "real-server",
  "forwarding-method",
  "weight",
  "u-threshold",
  "l-threshold",
  "mcast-interface",
  "timeout",
  "daemon",
  "stats",
  "rate",
  "thresholds",
  "persistent-conn",
  "nosort",
  "syncid",
  "exact",
  "ops",
  "pe",
  "sched-flags",
  "mcast-group",
  "mcast-port",
  "mcast-ttl",
  "sync-maxlen",
  "tun-info",
  "tun-type",
  "tun-port",
  "tun-nocsum",
  "tun-csum",
  "tun-remcsum",
] as const;
type Opt = (typeof OPT_NAMES)[number];

// '+' compulsory, 'x' illegal, '1' mutually exclusive, ' ' optional (one char per OPT_NAMES entry).
const TABLE: Readonly<Record<Cmd, string>> = {
  "add-service": "xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx",
  "edit-service": "xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx",
  "delete-service": "xx+xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
  flush: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
  list: " 11xxxxxxxxx11       xxxxxxx xxxxx",
  "add-server": "xx+xxx+    xxxxxxxxxxxxxxxxxx     ",
  "delete-server": "xx+xxx+xxxxxxxxxxxxxxxxxxxxxxxxxxx",
  "edit-server": "xx+xxx+    xxxxxxxxxxxxxxxxxx     ",
  set: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
  "start-daemon": "xxxxxxxxxxx xxxxxxx xxxx    xxxxxx",
  "stop-daemon": "xxxxxxxxxxxxxxxxxxx xxxxxxxxxxxxxx",
  restore: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
  save: " xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
  zero: "xx xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
};

interface OptionDef {
  readonly long: string;
  readonly short?: string;
  /** "none": a switch; "required": takes a value; "optional": takes the next word unless it is an option. */
  readonly arg: "none" | "required" | "optional";
  readonly id: string;
}

const OPTIONS: readonly OptionDef[] = [
  { long: "add-service", short: "A", arg: "none", id: "A" },
  { long: "edit-service", short: "E", arg: "none", id: "E" },
  { long: "delete-service", short: "D", arg: "none", id: "D" },
  { long: "clear", short: "C", arg: "none", id: "C" },
  { long: "list", short: "L", arg: "none", id: "L" },
  { long: "list", short: "l", arg: "none", id: "L" },
  { long: "zero", short: "Z", arg: "none", id: "Z" },
  { long: "add-server", short: "a", arg: "none", id: "a" },
  { long: "edit-server", short: "e", arg: "none", id: "e" },
  { long: "delete-server", short: "d", arg: "none", id: "d" },
  { long: "set", arg: "none", id: "set" },
  { long: "help", short: "h", arg: "none", id: "h" },
  { long: "version", short: "v", arg: "none", id: "v" },
  { long: "restore", short: "R", arg: "none", id: "R" },
  { long: "save", short: "S", arg: "none", id: "S" },
  { long: "start-daemon", arg: "required", id: "start-daemon" },
  { long: "stop-daemon", arg: "required", id: "stop-daemon" },
  { long: "tcp-service", short: "t", arg: "required", id: "t" },
  { long: "udp-service", short: "u", arg: "required", id: "u" },
  { long: "sctp-service", arg: "required", id: "sctp" },
  { long: "fwmark-service", short: "f", arg: "required", id: "f" },
  { long: "scheduler", short: "s", arg: "required", id: "s" },
  { long: "persistent", short: "p", arg: "optional", id: "p" },
  { long: "netmask", short: "M", arg: "required", id: "M" },
  { long: "real-server", short: "r", arg: "required", id: "r" },
  { long: "masquerading", short: "m", arg: "none", id: "m" },
  { long: "ipip", short: "i", arg: "none", id: "i" },
  { long: "gatewaying", short: "g", arg: "none", id: "g" },
  { long: "weight", short: "w", arg: "required", id: "w" },
  { long: "u-threshold", short: "x", arg: "required", id: "x" },
  { long: "l-threshold", short: "y", arg: "required", id: "y" },
  { long: "numeric", short: "n", arg: "none", id: "n" },
  { long: "connection", short: "c", arg: "none", id: "c" },
  { long: "mcast-interface", arg: "required", id: "mcast-interface" },
  { long: "syncid", arg: "required", id: "syncid" },
  { long: "timeout", arg: "none", id: "timeout" },
  { long: "daemon", arg: "none", id: "daemon" },
  { long: "stats", arg: "none", id: "stats" },
  { long: "rate", arg: "none", id: "rate" },
  { long: "thresholds", arg: "none", id: "thresholds" },
  { long: "persistent-conn", arg: "none", id: "persistent-conn" },
  { long: "nosort", arg: "none", id: "nosort" },
  { long: "sort", arg: "none", id: "sort" },
  { long: "exact", short: "X", arg: "none", id: "X" },
  { long: "ipv6", short: "6", arg: "none", id: "6" },
  { long: "ops", short: "o", arg: "none", id: "o" },
  { long: "pe", arg: "required", id: "pe" },
  { long: "sched-flags", short: "b", arg: "required", id: "b" },
  { long: "mcast-group", arg: "required", id: "mcast-group" },
  { long: "mcast-port", arg: "required", id: "mcast-port" },
  { long: "mcast-ttl", arg: "required", id: "mcast-ttl" },
  { long: "sync-maxlen", arg: "required", id: "sync-maxlen" },
  { long: "tun-info", arg: "none", id: "tun-info" },
  { long: "tun-type", arg: "required", id: "tun-type" },
  { long: "tun-port", arg: "required", id: "tun-port" },
  { long: "tun-nocsum", arg: "none", id: "tun-nocsum" },
  { long: "tun-csum", arg: "none", id: "tun-csum" },
  { long: "tun-remcsum", arg: "none", id: "tun-remcsum" },
];

const COMMAND_IDS: Readonly<Record<string, Cmd | "help" | "version">> = {
  A: "add-service",
  E: "edit-service",
  D: "delete-service",
  C: "flush",
  L: "list",
  Z: "zero",
  a: "add-server",
  e: "edit-server",
  d: "delete-server",
  set: "set",
  R: "restore",
  S: "save",
  "start-daemon": "start-daemon",
  "stop-daemon": "stop-daemon",
  h: "help",
  v: "version",
};

// Which table column an option id fills.
const OPTION_COLUMN: Readonly<Record<string, Opt>> = {
  n: "numeric",
  c: "connection",
  t: "service-address",
  u: "service-address",
  sctp: "service-address",
  f: "service-address",
  s: "scheduler",
  p: "persistent",
  M: "netmask",
  r: "real-server",
  m: "forwarding-method",
  i: "forwarding-method",
  g: "forwarding-method",
  w: "weight",
  x: "u-threshold",
  y: "l-threshold",
  "mcast-interface": "mcast-interface",
  timeout: "timeout",
  daemon: "daemon",
  stats: "stats",
  rate: "rate",
  thresholds: "thresholds",
  "persistent-conn": "persistent-conn",
  nosort: "nosort",
  syncid: "syncid",
  X: "exact",
  o: "ops",
  pe: "pe",
  b: "sched-flags",
  "mcast-group": "mcast-group",
  "mcast-port": "mcast-port",
  "mcast-ttl": "mcast-ttl",
  "sync-maxlen": "sync-maxlen",
  "tun-info": "tun-info",
  "tun-type": "tun-type",
  "tun-port": "tun-port",
  "tun-nocsum": "tun-nocsum",
  "tun-csum": "tun-csum",
  "tun-remcsum": "tun-remcsum",
};

const PROTOCOL_OF: Readonly<Record<string, Protocol>> = { t: "TCP", u: "UDP", sctp: "SCTP" };

class Fail {
  constructor(
    readonly message: string,
    readonly exit: number,
  ) {}
}

function fail(message: string): never {
  throw new Fail(message, 2);
}

function tryHelp(program: string): never {
  throw new Fail(`Try \`${program} -h' or '${program} --help' for more information.`, 255);
}

// strtol-style: the whole word must be a decimal number in [min, max].
function toNumber(s: string, min: number, max: number): number | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = Number(s);
  return n >= min && n <= max ? n : undefined;
}

interface AddrPort {
  readonly address: string;
  readonly family: IPFamily;
  readonly port: number | undefined;
}

// parse_service(): "[v6]:port", "v6" (no port), "v4[:port]". Names are not resolved here.
export function parseServiceAddress(text: string): AddrPort | undefined {
  if (text === "" || /^\d+$/.test(text)) return undefined;
  let host = text;
  let port: string | undefined;
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0 || text[close + 1] !== ":") return undefined;
    host = text.slice(1, close);
    port = text.slice(close + 2);
    const v6 = parseIPInet(host);
    if (v6?.family !== "IPv6") return undefined;
  } else {
    const v6 = host.includes(":") ? parseIPInet(host) : undefined;
    if (v6?.family === "IPv6") return { address: v6.ip, family: "IPv6", port: undefined };
    const colon = text.lastIndexOf(":");
    if (colon >= 0) {
      host = text.slice(0, colon);
      port = text.slice(colon + 1);
    }
  }
  const addr = parseIPInet(host);
  if (!addr) return undefined;
  if (port === undefined) return { address: addr.ip, family: addr.family, port: undefined };
  const n = toNumber(port, 0, 65535);
  return n === undefined ? undefined : { address: addr.ip, family: addr.family, port: n };
}

/** Scheduler-flag names to IP_VS_SVC_F_SCHED* bits, as parse_sched_flags() checks them. */
export function parseSchedFlags(scheduler: string, text: string): number {
  const sched = scheduler || DEF_SCHED;
  let bits = 0;
  for (const flag of text.split(",").filter((f) => f !== "")) {
    switch (flag) {
      case "flag-1":
        bits |= SVC_F_SCHED1;
        break;
      case "flag-2":
        bits |= SVC_F_SCHED2;
        break;
      case "flag-3":
        bits |= SVC_F_SCHED3;
        break;
      case "sh-fallback":
      case "sh-port":
      case "mh-fallback":
      case "mh-port":
        bits |= flag.endsWith("fallback") ? SVC_F_SCHED1 : SVC_F_SCHED2;
        if (sched !== flag.slice(0, 2)) fail(`incompatible scheduler flag \`${flag}'`);
        break;
      default:
        fail(`invalid scheduler flag \`${flag}'`);
    }
  }
  return bits;
}

/** The scheduler-flag names ipvsadm prints for `bits` under `scheduler` (print_sched_flags()). */
export function schedFlagNames(scheduler: string, bits: number): string[] {
  const out: string[] = [];
  if (scheduler === "sh" || scheduler === "mh") {
    if (bits & SVC_F_SCHED1) out.push(`${scheduler}-fallback`);
    if (bits & SVC_F_SCHED2) out.push(`${scheduler}-port`);
  } else {
    if (bits & SVC_F_SCHED1) out.push("flag-1");
    if (bits & SVC_F_SCHED2) out.push("flag-2");
    if (bits & SVC_F_SCHED3) out.push("flag-3");
  }
  return out;
}

interface Token {
  readonly id: string;
  readonly name: string;
  readonly value?: string;
  /** The argv word the option came from (what popt's "bad option" names). */
  readonly word: string;
}

// popt's view of argv: long options (with "=value" or a following word), bundled short
// switches ("-Ln"), a short option's value attached ("-s rr" or "-srr"), and bare words.
function* tokens(args: readonly string[], bare: string[]): Generator<Token> {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const takeValue = (def: OptionDef, attached: string | undefined, name: string): Token => {
      if (def.arg === "none") {
        if (attached !== undefined) throw new Fail(`${name}: option does not take an argument`, 255);
        return { id: def.id, name, word: a };
      }
      if (attached !== undefined) return { id: def.id, name, value: attached, word: a };
      const next = args[i + 1];
      if (def.arg === "optional") {
        if (next !== undefined && !next.startsWith("-")) {
          i++;
          return { id: def.id, name, value: next, word: a };
        }
        return { id: def.id, name, word: a };
      }
      if (next === undefined) throw new Fail(`${name}: missing argument`, 255);
      i++;
      return { id: def.id, name, value: next, word: a };
    };
    if (a.startsWith("--") && a.length > 2) {
      const eq = a.indexOf("=");
      const long = eq < 0 ? a.slice(2) : a.slice(2, eq);
      const def = OPTIONS.find((o) => o.long === long);
      if (!def) throw new Fail(`${a}: unknown option`, 255);
      yield takeValue(def, eq < 0 ? undefined : a.slice(eq + 1), `--${long}`);
    } else if (a.startsWith("-") && a.length > 1) {
      for (let j = 1; j < a.length; j++) {
        const def = OPTIONS.find((o) => o.short === a[j]);
        if (!def) throw new Fail(`-${a[j]}: unknown option`, 255);
        const rest = a.slice(j + 1);
        if (def.arg !== "none" && rest !== "") {
          yield takeValue(def, rest, `-${a[j]}`);
          break;
        }
        yield takeValue(def, undefined, `-${a[j]}`);
      }
    } else {
      bare.push(a);
    }
  }
}

/**
 * Parses one ipvsadm invocation (without argv[0]) the way ipvsadm 1.31 does, including the
 * checks it makes before talking to the kernel. `program` is what its messages call it.
 * keepDestPort reads a "-r ADDR:PORT -g" port as written (ipvsadm itself replaces it with the
 * service port; -S prints local masquerading destinations that way, so reading a save needs it).
 */
export function parseIpvsadmArgs(
  args: readonly string[],
  program = "ipvsadm",
  opts: { keepDestPort?: boolean } = {},
): ParseOutcome {
  try {
    return { ok: true, command: parse(args, program, opts.keepDestPort ?? false) };
  } catch (err) {
    if (err instanceof Fail) {
      // fail() exits at once; popt's own errors make process_options return -1, which only
      // ends a --restore when they happen on the last line (the caller decides).
      const fatal = err.exit === 2 || err.message.startsWith("Try `");
      return { ok: false, message: err.message, exit: err.exit, fatal };
    }
    throw err;
  }
}

function parse(args: readonly string[], program: string, keepDestPort: boolean): IpvsadmCommand {
  const bare: string[] = [];
  const it = tokens(args, bare);
  let first: IteratorResult<Token>;
  try {
    first = it.next();
  } catch {
    tryHelp(program); // popt failing on the very first option
  }
  if (first.done) tryHelp(program);
  const cmd = COMMAND_IDS[first.value.id];
  if (cmd === undefined) tryHelp(program);
  if (cmd === "help") return { kind: "help" };
  if (cmd === "version") return { kind: "version" };

  const options = new Set<Opt>();
  const setOption = (opt: Opt) => {
    if (options.has(opt)) fail(`multiple '${opt}' options specified`);
    options.add(opt);
  };

  let protocol: Protocol = "TCP";
  let svcAddr: AddrPort | undefined;
  let fwmark = 0;
  let scheduler = "";
  let flags = 0;
  let timeout = 0;
  let netmask: string | undefined;
  let schedFlagsArg: string | undefined;
  let dest: { address: string; family: IPFamily; port: number | undefined; portGiven: boolean } | undefined;
  let forward: ForwardMethod = "route";
  let weight = 1;
  let upperThreshold = 0;
  let lowerThreshold = 0;
  let what: "services" | "timeout" | "connections" | "daemon" = "services";

  for (const tok of it) {
    // ipvsadm takes the command from the first option; a later one is just an invalid option.
    if (COMMAND_IDS[tok.id] !== undefined && tok.id !== "h" && tok.id !== "v")
      fail(`invalid option \`${tok.word}'`);
    const column = OPTION_COLUMN[tok.id];
    if (column) setOption(column);
    const value = tok.value ?? "";
    switch (tok.id) {
      case "t":
      case "u":
      case "sctp": {
        protocol = PROTOCOL_OF[tok.id]!;
        svcAddr = parseServiceAddress(value);
        if (!svcAddr) fail("illegal virtual server address[:port] specified");
        break;
      }
      case "f": {
        const n = toNumber(value, 1, 0xffffffff);
        if (n === undefined) fail(`invalid fwmark value \`${value}' specified`);
        fwmark = n;
        break;
      }
      case "s":
        scheduler = value.slice(0, 15);
        break;
      case "p": {
        flags |= SVC_F_PERSISTENT;
        if (tok.value === undefined) timeout = DEFAULT_PERSISTENT_TIMEOUT;
        else {
          const n = toNumber(value, 1, MAX_TIMEOUT);
          if (n === undefined) fail(`invalid timeout value \`${value}' specified`);
          timeout = n;
        }
        break;
      }
      case "M":
        netmask = parseNetmask(value, svcAddr?.family ?? "IPv4");
        break;
      case "r": {
        const parsed = parseServiceAddress(value);
        if (!parsed) fail("illegal real server address[:port] specified");
        dest = { ...parsed, portGiven: parsed.port !== undefined };
        break;
      }
      case "m":
        forward = "masq";
        break;
      case "i":
        forward = "tunnel";
        break;
      case "g":
        forward = "route";
        break;
      case "w": {
        const n = toNumber(value, 0, MAX_WEIGHT);
        if (n === undefined) fail("illegal weight specified");
        weight = n;
        break;
      }
      case "x":
      case "y": {
        const n = toNumber(value, 0, 2 ** 31 - 1);
        if (n === undefined) fail(`illegal ${tok.id === "x" ? "u" : "l"}_threshold specified`);
        if (tok.id === "x") upperThreshold = n;
        else lowerThreshold = n;
        break;
      }
      case "timeout":
        what = "timeout";
        break;
      case "c":
        what = "connections";
        break;
      case "daemon":
        what = "daemon";
        break;
      case "6":
        if (!fwmark) fail("-6 used before -f\n");
        break;
      case "o":
        flags |= SVC_F_ONEPACKET;
        break;
      case "b":
        schedFlagsArg = value;
        break;
      default:
        // Accepted and ignored by the fake: sync daemon and tunnel options, output styles.
        break;
    }
  }

  let timeouts: [number, number, number] | undefined;
  if (cmd === "set") {
    if (bare.length < 3) fail("--set option requires 3 timeout values");
    const parsed = bare.slice(0, 3).map((v) => {
      const n = toNumber(v, 0, MAX_TIMEOUT);
      if (n === undefined) fail(`invalid timeout value \`${v}' specified`);
      return n;
    });
    timeouts = [parsed[0]!, parsed[1]!, parsed[2]!];
    bare.splice(0, 3);
  }
  if (bare.length > 0) fail(`unexpected argument ${bare[0]}`);
  // The table lets a list take any of these; ipvsadm then refuses mixing a listing style with
  // a listing of something other than services.
  const styled = (["stats", "rate", "thresholds", "persistent-conn"] as const).some((o) => options.has(o));
  if (
    cmd === "list" &&
    styled &&
    (options.has("connection") || options.has("timeout") || options.has("daemon"))
  )
    fail("options conflicts in the list command");
  if (schedFlagsArg !== undefined) flags |= parseSchedFlags(scheduler, schedFlagsArg);

  // generic_opt_check(): the legality table, in column order.
  const row = TABLE[cmd];
  let exclusive: Opt | undefined;
  OPT_NAMES.forEach((opt, j) => {
    const rule = row[j] ?? "x";
    if (!options.has(opt)) {
      if (rule === "+") fail(`You need to supply the '${opt}' option for the '${CMD_NAMES[cmd]}' command`);
      return;
    }
    if (rule === "x") fail(`Illegal '${opt}' option with the '${CMD_NAMES[cmd]}' command`);
    if (rule === "1") {
      if (exclusive !== undefined)
        fail(
          `The option '${opt}' conflicts with the '${exclusive}' option in the '${CMD_NAMES[cmd]}' command`,
        );
      exclusive = opt;
    }
  });

  const key = (): VirtualServerKey => {
    if (fwmark) fail("fwmark services are not modelled");
    return { address: svcAddr!.address, port: svcAddr!.port ?? 0, protocol };
  };

  switch (cmd) {
    case "add-service":
    case "edit-service": {
      const k = key();
      if (k.port === 0 && !(flags & SVC_F_PERSISTENT)) fail("Zero port specified for non-persistent service");
      if (flags & SVC_F_ONEPACKET && k.protocol !== "UDP")
        fail("One-Packet Scheduling is only for UDP virtual services");
      const service: ServiceSpec = {
        key: k,
        scheduler: scheduler || DEF_SCHED,
        flags,
        timeout,
        ...(netmask !== undefined ? { netmask } : {}),
      };
      return { kind: cmd, service };
    }
    case "delete-service":
      return { kind: cmd, key: key() };
    case "zero":
      return svcAddr ? { kind: "zero", key: key() } : { kind: "zero" };
    case "add-server":
    case "edit-server":
    case "delete-server": {
      const k = key();
      let port = dest!.portGiven ? dest!.port! : k.port;
      if (cmd !== "delete-server") {
        // The destination port must equal the service port for tunnelling and direct routing.
        if ((forward === "tunnel" || forward === "route") && !keepDestPort) port = k.port;
        if (dest!.family !== svcAddr!.family && forward !== "tunnel")
          fail("Different address family is allowed only for tunneling servers");
      }
      const spec: DestSpec = { address: dest!.address, port, weight, forward };
      return {
        kind: cmd,
        key: k,
        dest: cmd === "delete-server" ? spec : { ...spec, upperThreshold, lowerThreshold },
      };
    }
    case "list": {
      const format: ListFormat = options.has("stats")
        ? "stats"
        : options.has("rate")
          ? "rate"
          : options.has("thresholds")
            ? "thresholds"
            : options.has("persistent-conn")
              ? "persistent-conn"
              : "plain";
      const base = {
        kind: "list",
        numeric: options.has("numeric"),
        what,
        format,
        nosort: options.has("nosort"),
      } as const;
      return svcAddr ? { ...base, key: key() } : base;
    }
    case "save":
      return { kind: "save", numeric: options.has("numeric") };
    case "set":
      return { kind: "set", tcp: timeouts![0], tcpFin: timeouts![1], udp: timeouts![2] };
    case "flush":
      return { kind: "flush" };
    case "restore":
      return { kind: "restore" };
    default:
      return { kind: "daemon" };
  }
}

/**
 * -M's value: IPv4 takes what inet_aton() takes ("255.255.255.0", also "24", which is
 * 0.0.0.24), printed back as a dotted quad; IPv6 takes a prefix length 1-128 (read with atoi()
 * once the service address, given first, says IPv6).
 */
export function parseNetmask(text: string, family: IPFamily): string {
  if (family === "IPv6") {
    const n = Number(/^\s*[+-]?\d*/.exec(text)?.[0]?.trim() || "0");
    if (!Number.isInteger(n) || n < 1 || n > 128) fail("illegal ipv6 netmask specified");
    return String(n);
  }
  const parts = text.split(".");
  const nums = parts.map((p) => (/^\d+$/.test(p) ? Number(p) : Number.NaN));
  if (parts.length > 4 || nums.some((n) => !Number.isFinite(n)))
    fail("illegal virtual server persistent mask specified");
  // inet_aton: the last part fills every byte the earlier parts leave.
  const lastBytes = 5 - parts.length;
  const last = nums[nums.length - 1]!;
  if (nums.slice(0, -1).some((n) => n > 255) || last >= 2 ** (8 * lastBytes))
    fail("illegal virtual server persistent mask specified");
  let value = 0;
  nums.slice(0, -1).forEach((n, i) => {
    value += n * 2 ** (8 * (3 - i));
  });
  value += last;
  return [24, 16, 8, 0].map((s) => Math.floor(value / 2 ** s) % 256).join(".");
}

/** Whether a parsed -M value is the kernel's default (host granularity: nothing printed). */
export function isDefaultNetmask(netmask: string | undefined): boolean {
  return netmask === undefined || netmask === "255.255.255.255" || netmask === "128";
}

/** Splits one --restore line into words as ipvsadm's config_stream_read() does. */
export function restoreLineWords(line: string): string[] {
  // Any word "ipvsadm" is dropped (lines may start with it); there is no comment syntax.
  return line.split(/[ \t\r]+/).filter((w) => w !== "" && w !== "ipvsadm");
}
