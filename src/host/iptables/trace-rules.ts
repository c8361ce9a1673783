// Reads iptables-save (or iptables-restore) text into the rule model the packet-flow tracer
// (trace.ts) evaluates: tables of chains of rules, each rule a list of matches and one target.
// Only the rule forms kube-proxy's iptables mode writes are understood; any other option makes
// the parser throw, so a rule the tracer cannot evaluate never passes silently.

import { splitSavedRule } from "./rule-args.ts";
export type Match =
  | { kind: "src" | "dst"; neg: boolean; cidr: string }
  | { kind: "proto"; neg: boolean; proto: string }
  | { kind: "dport"; neg: boolean; port: number }
  | { kind: "addrtype"; dir: "src" | "dst"; neg: boolean; type: string }
  | { kind: "ctstate"; neg: boolean; states: string[] }
  | { kind: "mark"; neg: boolean; value: number; mask: number }
  | { kind: "statistic"; probability: number }
  | { kind: "recent"; check: boolean }
  /** `-m set --match-set NAME src,dst,...`: one direction per dimension of the set's type. */
  | { kind: "set"; neg: boolean; name: string; dirs: ("src" | "dst")[] }
  /** `-m physdev --physdev-is-in`: whether the packet came in over a bridge port. */
  | { kind: "physdev-is-in"; neg: boolean }
  /** `-m ipvs --vaddr A --vproto P --vport N`: the packet was handled by that IPVS service. */
  | { kind: "ipvs"; vaddr?: string; vproto?: string; vport?: number };

export type Target =
  | { kind: "none" }
  | { kind: "jump"; chain: string }
  | { kind: "ACCEPT" | "DROP" | "REJECT" | "RETURN" }
  | { kind: "MASQUERADE" }
  | { kind: "DNAT"; to: string }
  /** The new mark is (mark AND NOT mask) XOR value: --or-mark X is X/X, --xor-mark X is X/0. */
  | { kind: "MARK"; value: number; mask: number };

export interface Rule {
  readonly raw: string;
  readonly matches: readonly Match[];
  readonly target: Target;
}

/** table name -> chain name -> rules in order (every declared chain is present). */
export type RuleTables = Map<string, Map<string, Rule[]>>;

function num(text: string | undefined, raw: string): number {
  if (text === undefined) throw new Error(`missing value in rule: ${raw}`);
  const n = text.startsWith("0x") ? Number.parseInt(text, 16) : Number(text);
  if (!Number.isFinite(n)) throw new Error(`bad number ${text} in rule: ${raw}`);
  return n;
}

const MODULES = new Set([
  "comment",
  "tcp",
  "udp",
  "sctp",
  "addrtype",
  "conntrack",
  "mark",
  "statistic",
  "recent",
  "nfacct",
  "set",
  "physdev",
  "ipvs",
]);

/** Targets the tracer does not model (a jump to an undeclared chain fails when evaluated). */
const OTHER_TARGETS = new Set([
  "SNAT",
  "REDIRECT",
  "LOG",
  "NFLOG",
  "NOTRACK",
  "CT",
  "TPROXY",
  "CONNMARK",
  "TCPMSS",
  "QUEUE",
  "NFQUEUE",
  "CHECKSUM",
  "SET",
  "TRACE",
]);

/** Parses the words after "-A CHAIN". */
export function parseRule(raw: string, words: readonly string[]): Rule {
  const matches: Match[] = [];
  let target: Target = { kind: "none" };
  let neg = false;
  let addrDir: "src" | "dst" | undefined;
  const take = (i: number) => {
    const v = words[i];
    if (v === undefined) throw new Error(`missing value after ${words[i - 1]} in rule: ${raw}`);
    return v;
  };
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (w === "!") {
      neg = true;
      continue;
    }
    const wasNeg = neg;
    neg = false;
    switch (w) {
      case "-m": {
        const mod = take(++i);
        if (!MODULES.has(mod)) throw new Error(`unsupported match module -m ${mod} in rule: ${raw}`);
        if (mod === "addrtype") addrDir = undefined;
        break;
      }
      case "--comment":
      case "--nfacct-name":
      case "--name":
        i++;
        break;
      case "-p":
        matches.push({ kind: "proto", neg: wasNeg, proto: take(++i).toLowerCase() });
        break;
      case "-s":
      case "-d":
        matches.push({ kind: w === "-s" ? "src" : "dst", neg: wasNeg, cidr: take(++i) });
        break;
      case "--dport":
        matches.push({ kind: "dport", neg: wasNeg, port: num(take(++i), raw) });
        break;
      case "--src-type":
      case "--dst-type":
        addrDir = w === "--src-type" ? "src" : "dst";
        matches.push({ kind: "addrtype", dir: addrDir, neg: wasNeg, type: take(++i) });
        break;
      case "--ctstate":
        matches.push({ kind: "ctstate", neg: wasNeg, states: take(++i).split(",") });
        break;
      case "--mark": {
        const [v, m] = take(++i).split("/");
        matches.push({
          kind: "mark",
          neg: wasNeg,
          value: num(v, raw),
          mask: m === undefined ? 0xffffffff : num(m, raw),
        });
        break;
      }
      case "--mode":
        if (take(++i) !== "random") throw new Error(`unsupported statistic mode in rule: ${raw}`);
        break;
      case "--probability":
        matches.push({ kind: "statistic", probability: num(take(++i), raw) });
        break;
      case "--rcheck":
        matches.push({ kind: "recent", check: true });
        break;
      case "--set":
        matches.push({ kind: "recent", check: false });
        break;
      case "--seconds":
      case "--mask":
      case "--hitcount":
        i++;
        break;
      case "--reap":
      case "--rsource":
        break;
      case "--match-set": {
        const name = take(++i);
        const dirs = take(++i).split(",");
        if (!dirs.every((d) => d === "src" || d === "dst"))
          throw new Error(`unsupported --match-set directions ${dirs.join(",")} in rule: ${raw}`);
        matches.push({ kind: "set", neg: wasNeg, name, dirs: dirs as ("src" | "dst")[] });
        break;
      }
      case "--physdev-is-in":
        matches.push({ kind: "physdev-is-in", neg: wasNeg });
        break;
      case "--vaddr":
      case "--vproto":
      case "--vport": {
        let m = matches.find((x) => x.kind === "ipvs");
        if (!m) {
          m = { kind: "ipvs" };
          matches.push(m);
        }
        const v = take(++i);
        if (w === "--vaddr") m.vaddr = v.split("/")[0]!;
        else if (w === "--vproto") m.vproto = v.toLowerCase();
        else m.vport = num(v, raw);
        break;
      }
      case "-j": {
        const t = take(++i);
        if (t === "ACCEPT" || t === "DROP" || t === "RETURN") target = { kind: t };
        else if (t === "REJECT") {
          target = { kind: "REJECT" };
          if (words[i + 1] === "--reject-with") i += 2;
        } else if (t === "MASQUERADE") {
          target = { kind: "MASQUERADE" };
          if (words[i + 1] === "--random-fully") i++;
        } else if (t === "DNAT") {
          if (words[i + 1] !== "--to-destination") throw new Error(`DNAT without --to-destination: ${raw}`);
          target = { kind: "DNAT", to: take(i + 2) };
          i += 2;
        } else if (t === "MARK") {
          const op = words[i + 1];
          const arg = take(i + 2);
          if (op === "--or-mark" || op === "--xor-mark") {
            const value = num(arg, raw);
            target = { kind: "MARK", value, mask: op === "--or-mark" ? value : 0 };
          } else if (op === "--set-xmark") {
            // iptables-save's spelling: VALUE/MASK (a bare VALUE sets every bit).
            const [v, m] = arg.split("/");
            target = { kind: "MARK", value: num(v, raw), mask: m === undefined ? 0xffffffff : num(m, raw) };
          } else throw new Error(`unsupported MARK option ${op}: ${raw}`);
          i += 2;
        } else if (OTHER_TARGETS.has(t)) throw new Error(`unsupported target ${t} in rule: ${raw}`);
        else target = { kind: "jump", chain: t };
        break;
      }
      default:
        throw new Error(`unsupported rule option ${w} in rule: ${raw}`);
    }
    if (
      wasNeg &&
      ![
        "-p",
        "-s",
        "-d",
        "--dport",
        "--src-type",
        "--dst-type",
        "--ctstate",
        "--mark",
        "--match-set",
        "--physdev-is-in",
      ].includes(w)
    ) {
      throw new Error(`unsupported negation of ${w} in rule: ${raw}`);
    }
  }
  if (neg) throw new Error(`dangling "!" in rule: ${raw}`);
  return { raw, matches, target };
}

/** Parses iptables-save / iptables-restore text (comments, counters and COMMIT lines ignored). */
export function parseRuleTables(text: string): RuleTables {
  const tables: RuleTables = new Map();
  let current: Map<string, Rule[]> | undefined;
  for (const rawLine of text.split("\n")) {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#") || line === "COMMIT") continue;
    if (line.startsWith("*")) {
      current = tables.get(line.slice(1)) ?? new Map();
      tables.set(line.slice(1), current);
      continue;
    }
    if (!current) throw new Error(`line outside a table: ${line}`);
    if (line.startsWith(":")) {
      const name = line.slice(1).split(" ")[0]!;
      if (!current.has(name)) current.set(name, []);
      continue;
    }
    const words = splitSavedRule(line);
    if (words[0] === "-A" && words[1]) {
      const rules = current.get(words[1]);
      if (!rules) throw new Error(`rule for an undeclared chain: ${line}`);
      rules.push(parseRule(line, words.slice(2)));
    } else if (words[0] === "-X" && words[1]) {
      current.delete(words[1]);
    } else {
      throw new Error(`unsupported line: ${line}`);
    }
  }
  return tables;
}
