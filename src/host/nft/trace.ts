// A packet tracer (for `explain` and the tests): walks the first packet of a new connection through one nftables
// table (the fake nft's state) the way the kernel's hooks would run it, and says what became of
// it in the terms of upstream's nftables packet-flow tests: the DNAT targets it can reach
// (sorted, joined with ", "), or "DROP" / "REJECT", or "" when none of the table's rules
// handled it; and whether it leaves masqueraded.
//
// The path: a packet from a local address goes through the output hook, then postrouting (and
// when its destination is local too, back in through prerouting without NAT, and input); any
// other through prerouting, then input when its destination (after DNAT) is local, else forward
// and postrouting. At each hook the table's base chains run in priority order. Where a rule picks
// at random (numgen), every branch is followed, so every endpoint shows up, as in upstream's
// tracer. Rule syntax the tracer does not know throws (trace-rule.ts), wherever it is in the table.

import { cidrContains, isLoopbackLenient, parseIPLenient } from "../../util/net/address.ts";
import { joinHostPort } from "../../util/net/host-port.ts";
import type { SimulatedNftTable } from "./simulator.ts";
import {
  parseRule,
  parseVerdict,
  type Selector,
  type Term,
  UnsupportedRuleError,
  type Verdict,
} from "./trace-rule.ts";

export type L4Protocol = "tcp" | "udp" | "sctp";

export interface Packet {
  readonly saddr: string;
  readonly daddr: string;
  readonly protocol: L4Protocol;
  readonly dport: number;
}

export interface TraceOptions {
  /** The table's family: which address matches its rules use. */
  readonly family: "ip" | "ip6";
  /** This node's addresses (loopback is always local): where `fib ... type local` holds. */
  readonly localIPs: readonly string[];
}

/** One way the packet can go (one per numgen branch taken). */
export interface PathEnd {
  readonly verdict: "accept" | "drop" | "reject";
  /** "ip:port" ("[ip]:port" for IPv6) when DNATed. */
  readonly dnat: string | undefined;
  readonly masq: boolean;
  /** The chance a new connection takes this path (1/N for each numgen mod N branch). */
  readonly probability: number;
  /** The rules that acted on it, "chain: rule", for failure messages. */
  readonly trail: readonly string[];
}

export interface TraceResult {
  /** Upstream's form: sorted DNAT targets joined with ", ", "DROP", "REJECT" or "". */
  readonly output: string;
  /** Masqueraded on its way out (on any path). */
  readonly masq: boolean;
  readonly paths: readonly PathEnd[];
}

/** Shown in the output when some branches are handled and others are not. */
export const UNHANDLED = "(unhandled)";

interface State {
  readonly daddr: string;
  readonly dport: number;
  readonly mark: number;
  readonly dnat: string | undefined;
  readonly masq: boolean;
  readonly prob: number;
  readonly trail: readonly string[];
}

type RuleEnd = "next" | "return" | "accept" | "drop" | "reject";

interface Outcome {
  readonly state: State;
  readonly end: RuleEnd;
}

interface Hook {
  readonly hook: string;
  readonly type: string;
}

const MAX_DEPTH = 64;
const CT_STATES = new Set(["new", "established", "related", "invalid", "untracked"]);
const PROTOCOL_NUMBERS: Readonly<Record<string, L4Protocol>> = { "6": "tcp", "17": "udp", "132": "sctp" };

export function tracePacket(table: SimulatedNftTable, packet: Packet, opts: TraceOptions): TraceResult {
  return new Tracer(table, packet, opts).run();
}

/** Rules parsed once per family and text (traces re-read the same tables many times). */
const PARSED = { ip: new Map<string, Term[]>(), ip6: new Map<string, Term[]>() };

class Tracer {
  private readonly local: Set<string>;

  constructor(
    private readonly table: SimulatedNftTable,
    private readonly packet: Packet,
    private readonly opts: TraceOptions,
  ) {
    this.local = new Set(opts.localIPs.map((ip) => canonicalIP(ip, "a local IP of the test")));
    // Every rule and verdict is read up front: one the tracer does not know throws even when
    // this packet would not reach it.
    for (const chain of table.chains.values()) for (const rule of chain.rules) this.termsOf(rule);
    for (const map of table.maps.values())
      if (map.type.endsWith(": verdict")) for (const v of map.elements.values()) parseVerdict(v);
  }

  run(): TraceResult {
    const start: State = {
      daddr: this.packet.daddr,
      dport: this.packet.dport,
      mark: 0,
      dnat: undefined,
      masq: false,
      prob: 1,
      trail: [],
    };
    const ends: PathEnd[] = [];
    const dead = (states: readonly { state: State; verdict: "drop" | "reject" }[]) => {
      for (const d of states) ends.push({ ...pathOf(d.state), verdict: d.verdict, masq: false });
    };
    if (this.isLocal(this.packet.saddr)) {
      const out = this.hook("output", [start]);
      const post = this.hook("postrouting", out.alive);
      dead([...out.dead, ...post.dead]);
      for (const s of post.alive) {
        if (!this.isLocal(s.daddr)) {
          ends.push({ ...pathOf(s), verdict: "accept" });
          continue;
        }
        // Delivered over loopback: NAT is already bound, the filter chains run again.
        const pre = this.hook("prerouting", [s], { skipNat: true });
        const input = this.hook("input", pre.alive);
        dead([...pre.dead, ...input.dead]);
        for (const a of input.alive) ends.push({ ...pathOf(a), verdict: "accept" });
      }
    } else {
      const pre = this.hook("prerouting", [start]);
      dead(pre.dead);
      for (const s of pre.alive) {
        if (this.isLocal(s.daddr)) {
          const input = this.hook("input", [s]);
          dead(input.dead);
          for (const a of input.alive) ends.push({ ...pathOf(a), verdict: "accept" });
        } else {
          const fwd = this.hook("forward", [s]);
          const post = this.hook("postrouting", fwd.alive);
          dead([...fwd.dead, ...post.dead]);
          for (const a of post.alive) ends.push({ ...pathOf(a), verdict: "accept" });
        }
      }
    }
    return { output: outputOf(ends), masq: ends.some((e) => e.masq), paths: ends };
  }

  private isLocal(ip: string): boolean {
    return isLoopbackLenient(ip) || this.local.has(canonicalIP(ip, "an address of the packet"));
  }

  /** Runs the hook's base chains in priority order; drop and reject end a path. */
  private hook(
    hook: string,
    states: readonly State[],
    o: { skipNat?: boolean } = {},
  ): { alive: State[]; dead: { state: State; verdict: "drop" | "reject" }[] } {
    const chains = [...this.table.chains]
      .filter(([, c]) => c.base?.hook === hook && !(o.skipNat && c.base.type === "nat"))
      .sort(([, a], [, b]) => a.base!.priority - b.base!.priority);
    let alive = [...states];
    const dead: { state: State; verdict: "drop" | "reject" }[] = [];
    for (const [name, chain] of chains) {
      const next: State[] = [];
      for (const s of alive) {
        for (const r of this.chain(name, s, { hook, type: chain.base!.type }, 0)) {
          if (r.end === "drop" || r.end === "reject") dead.push({ state: r.state, verdict: r.end });
          else next.push(r.state);
        }
      }
      alive = next;
    }
    return { alive, dead };
  }

  /** Every way through one chain: ends are "return" (fell off or returned) or a final verdict. */
  private chain(name: string, state: State, at: Hook, depth: number): Outcome[] {
    if (depth > MAX_DEPTH) throw new Error(`packet tracer: chains nest deeper than ${MAX_DEPTH} at ${name}`);
    const chain = this.table.chains.get(name);
    if (!chain) throw new Error(`packet tracer: jump to missing chain ${name}`);
    const out: Outcome[] = [];
    let live = [state];
    for (const rule of chain.rules) {
      const next: State[] = [];
      for (const s of live) {
        for (const o of this.terms(name, rule, this.termsOf(rule), 0, s, at, depth)) {
          if (o.end === "next") next.push(o.state);
          else out.push(o);
        }
      }
      live = next;
      if (live.length === 0) break;
    }
    for (const s of live) out.push({ state: s, end: "return" });
    return out;
  }

  private termsOf(rule: string): Term[] {
    const parsed = PARSED[this.opts.family];
    let terms = parsed.get(rule);
    if (!terms) {
      terms = parseRule(rule, this.opts.family);
      parsed.set(rule, terms);
    }
    return terms;
  }

  /** Evaluates terms[i..] of one rule; "next" means the rule let the packet go on. */
  private terms(
    chain: string,
    rule: string,
    terms: readonly Term[],
    i: number,
    s: State,
    at: Hook,
    depth: number,
  ): Outcome[] {
    const t = terms[i];
    if (t === undefined) return [{ state: s, end: "next" }];
    const rest = (state: State) => this.terms(chain, rule, terms, i + 1, state, at, depth);
    const acted = (state: State): State => {
      const line = `${chain}: ${rule}`;
      return state.trail.at(-1) === line ? state : { ...state, trail: [...state.trail, line] };
    };
    const onlyCommentsAfter = () => {
      if (terms.slice(i + 1).some((x) => x.kind !== "no-op"))
        throw new UnsupportedRuleError(rule, t.kind, "a statement after a verdict");
    };
    switch (t.kind) {
      case "compare":
      case "lookup":
      case "fib-local":
      case "ct-state":
      case "ct-status":
      case "mark-test":
        return this.matches(t, s, rule) ? rest(s) : [{ state: s, end: "next" }];
      case "numgen": {
        const { hit, miss } = numgenBranches(t.mod, t.offset, (v) => v === t.value);
        const odds = (n: number) => ({ ...s, prob: (s.prob * n) / t.mod });
        return [
          ...(hit ? rest(odds(hit)) : []),
          ...(miss ? [{ state: odds(miss), end: "next" as const }] : []),
        ];
      }
      case "numgen-vmap": {
        onlyCommentsAfter();
        const out: Outcome[] = [];
        const one = { ...s, prob: s.prob / t.mod };
        for (let v = t.offset; v < t.offset + t.mod; v++) {
          const verdict = t.entries.get(v);
          if (verdict) out.push(...this.verdict(verdict, acted(one), at, depth));
          else out.push({ state: one, end: "next" });
        }
        return out;
      }
      case "vmap": {
        onlyCommentsAfter();
        const found = this.mapLookup(t.map, t.selectors, s, rule);
        if (found === undefined) return [{ state: s, end: "next" }];
        // The element that matched is part of the path: "@map: KEY : VERDICT".
        const hop = { ...acted(s), trail: [...acted(s).trail, `@${t.map}: ${found[0]} : ${found[1]}`] };
        return this.verdict(parseVerdict(found[1]), hop, at, depth);
      }
      case "verdict":
        onlyCommentsAfter();
        return this.verdict(t.verdict, acted(s), at, depth);
      case "mark-set": {
        const mark =
          t.op === "or"
            ? s.mark | t.value
            : t.op === "xor"
              ? s.mark ^ t.value
              : t.op === "and"
                ? s.mark & t.value
                : t.value;
        return rest(acted({ ...s, mark: mark >>> 0 }));
      }
      case "dnat": {
        this.natAllowed(at, "prerouting", "output", rule);
        const port = t.port ?? s.dport;
        return [{ state: acted(this.dnat(s, t.addr, port)), end: "accept" }];
      }
      case "dnat-numgen-map": {
        this.natAllowed(at, "prerouting", "output", rule);
        const out: Outcome[] = [];
        const one = { ...s, prob: s.prob / t.mod };
        for (let v = t.offset; v < t.offset + t.mod; v++) {
          const target = t.entries.get(v);
          if (target) out.push({ state: acted(this.dnat(one, target.addr, target.port)), end: "accept" });
          else out.push({ state: one, end: "next" });
        }
        return out;
      }
      case "masquerade":
        this.natAllowed(at, "postrouting", "postrouting", rule);
        return [{ state: acted({ ...s, masq: true }), end: "accept" }];
      case "no-op":
        return rest(s);
    }
  }

  private natAllowed(at: Hook, a: string, b: string, rule: string): void {
    if (at.type !== "nat" || (at.hook !== a && at.hook !== b))
      throw new UnsupportedRuleError(
        rule,
        rule,
        `a NAT statement reached from a ${at.type} chain at ${at.hook}`,
      );
  }

  private dnat(s: State, addr: string, port: number): State {
    const ip = canonicalIP(addr, "a DNAT address");
    return { ...s, daddr: ip, dport: port, dnat: joinHostPort(ip, port) };
  }

  private verdict(v: Verdict, s: State, at: Hook, depth: number): Outcome[] {
    switch (v.kind) {
      case "accept":
      case "drop":
      case "reject":
      case "return":
        return [{ state: s, end: v.kind }];
      case "jump":
        return this.chain(v.chain, s, at, depth + 1).map((o) =>
          o.end === "return" ? { ...o, end: "next" } : o,
        );
      case "goto":
        return this.chain(v.chain, s, at, depth + 1);
    }
  }

  private field(sel: Selector, s: State): string {
    switch (sel) {
      case "saddr":
        return this.packet.saddr;
      case "daddr":
        return s.daddr;
      case "l4proto":
        return this.packet.protocol;
      case "dport":
        return String(s.dport);
    }
  }

  /** Whether one literal (of a rule or a set element) matches the packet's field. */
  private literalMatches(sel: Selector, literal: string, s: State, rule: string): boolean {
    const actual = this.field(sel, s);
    switch (sel) {
      case "saddr":
      case "daddr": {
        if (literal.includes("/")) {
          if (!parseIPLenient(literal.split("/")[0]))
            throw new UnsupportedRuleError(rule, literal, "an unreadable CIDR");
          return cidrContains(literal, actual);
        }
        return canonicalIP(literal, `an address in rule ${rule}`) === canonicalIP(actual, "a packet address");
      }
      case "l4proto": {
        const proto = PROTOCOL_NUMBERS[literal] ?? literal;
        if (proto !== "tcp" && proto !== "udp" && proto !== "sctp")
          throw new UnsupportedRuleError(rule, literal, "an unknown protocol");
        return proto === actual;
      }
      case "dport":
        if (!/^\d+$/.test(literal))
          throw new UnsupportedRuleError(rule, literal, "a port that is not a number");
        return Number(literal) === Number(actual);
    }
  }

  private elementMatches(selectors: readonly Selector[], key: string, s: State, rule: string): boolean {
    const parts = key.split(" . ");
    if (parts.length !== selectors.length)
      throw new UnsupportedRuleError(
        rule,
        key,
        `an element with ${parts.length} parts for ${selectors.length}`,
      );
    return selectors.every((sel, k) => this.literalMatches(sel, parts[k]!.trim(), s, rule));
  }

  private mapLookup(
    name: string,
    selectors: readonly Selector[],
    s: State,
    rule: string,
  ): [key: string, value: string] | undefined {
    const map = this.table.maps.get(name);
    if (!map) throw new UnsupportedRuleError(rule, `@${name}`, "a lookup in a missing map");
    for (const [key, value] of map.elements)
      if (this.elementMatches(selectors, key, s, rule)) return [key, value];
    return undefined;
  }

  private matches(t: Term, s: State, rule: string): boolean {
    switch (t.kind) {
      case "compare":
        return t.values.some((v) => this.literalMatches(t.selector, v, s, rule)) !== t.negated;
      case "lookup": {
        const set = this.table.sets.get(t.set);
        if (!set) throw new UnsupportedRuleError(rule, `@${t.set}`, "a lookup in a missing set");
        const found = [...set.elements.keys()].some((key) => this.elementMatches(t.selectors, key, s, rule));
        return found !== t.negated;
      }
      case "fib-local":
        return this.isLocal(t.of === "saddr" ? this.packet.saddr : s.daddr) !== t.negated;
      case "ct-state":
        for (const st of t.states)
          if (!CT_STATES.has(st)) throw new UnsupportedRuleError(rule, st, "an unknown ct state");
        return t.states.includes("new");
      case "ct-status":
        if (t.statuses.some((st) => st !== "dnat"))
          throw new UnsupportedRuleError(rule, t.statuses.join(","), "a ct status other than dnat");
        return s.dnat !== undefined;
      case "mark-test":
        return ((s.mark & t.mask) >>> 0 === t.value) !== t.negated;
      default:
        throw new UnsupportedRuleError(rule, t.kind, "not a match");
    }
  }
}

/** How many values of `numgen random mod N offset O` `pred` accepts, and how many it does not. */
function numgenBranches(
  mod: number,
  offset: number,
  pred: (v: number) => boolean,
): { hit: number; miss: number } {
  let hit = 0;
  let miss = 0;
  for (let v = offset; v < offset + mod; v++) {
    if (pred(v)) hit++;
    else miss++;
  }
  return { hit, miss };
}

const CANONICAL = new Map<string, string | undefined>();

function canonicalIP(text: string, what: string): string {
  let ip = CANONICAL.get(text);
  if (ip === undefined && !CANONICAL.has(text)) {
    ip = parseIPLenient(text)?.ip;
    CANONICAL.set(text, ip);
  }
  if (ip === undefined) throw new Error(`packet tracer: ${what} is not an IP: ${text}`);
  return ip;
}

function pathOf(s: State): Omit<PathEnd, "verdict"> {
  return { dnat: s.dnat, masq: s.masq, probability: s.prob, trail: s.trail };
}

function outputOf(ends: readonly PathEnd[]): string {
  const labels = new Set<string>();
  for (const e of ends) {
    if (e.verdict === "drop") labels.add("DROP");
    else if (e.verdict === "reject") labels.add("REJECT");
    else labels.add(e.dnat ?? UNHANDLED);
  }
  if (labels.size === 1 && labels.has(UNHANDLED)) return "";
  return [...labels].sort().join(", ");
}
