// In-memory netfilter tables for SimulatedIptables: chains with policies and counters, rules in their
// canonical text, and jump reference counts (a referenced chain cannot be deleted). Operations
// return a Failure instead of throwing; the CLI and restore front ends word it per backend.

import type { Table } from "../types.ts";

export const BUILTIN_CHAINS: Readonly<Record<Table, readonly string[]>> = {
  filter: ["INPUT", "FORWARD", "OUTPUT"],
  nat: ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"],
  mangle: ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"],
  raw: ["PREROUTING", "OUTPUT"],
  security: ["INPUT", "FORWARD", "OUTPUT"],
};

export function isTable(name: string): name is Table {
  return Object.hasOwn(BUILTIN_CHAINS, name);
}

/** Verdicts a user chain may not be named after (both backends refuse them). */
export const STANDARD_TARGETS: ReadonlySet<string> = new Set(["ACCEPT", "DROP", "QUEUE", "RETURN"]);

/** Extension targets the fake treats as installed; anything else after -j must be a user chain. */
export const EXTENSION_TARGETS: ReadonlySet<string> = new Set([
  ...["MASQUERADE", "DNAT", "SNAT", "REDIRECT", "NETMAP", "MARK", "CONNMARK", "REJECT", "LOG", "NFLOG"],
  ...["NOTRACK", "CT", "TPROXY", "TCPMSS", "CHECKSUM", "CLASSIFY", "NFQUEUE", "SET", "TRACE", "AUDIT"],
  ...["HMARK", "TEE", "DSCP", "TOS", "TTL", "HL", "SECMARK", "CONNSECMARK", "IDLETIMER", "LED"],
]);

/** Longest user chain name: XT_EXTENSION_MAXNAMELEN (29) less the terminating NUL. */
export const MAX_CHAIN_NAME = 28;

export interface SimulatedRule {
  /** Canonical argument text, as iptables-save prints it after "-A CHAIN ". */
  readonly spec: string;
  /** The jump/goto target, if any (kept for reference counting). */
  readonly target: string | undefined;
  packets: number;
  bytes: number;
}

export interface SimulatedChain {
  readonly name: string;
  readonly builtin: boolean;
  /** "ACCEPT"/"DROP" for built-in chains, "-" for user chains. */
  policy: string;
  packets: number;
  bytes: number;
  rules: SimulatedRule[];
}

export type Failure =
  | { kind: "noChain"; chain: string }
  | { kind: "chainExists"; chain: string }
  | { kind: "noRule"; chain: string; chainMissing: boolean }
  | { kind: "badTarget"; target: string }
  | { kind: "jumpToBuiltin"; chain: string; target: string }
  | { kind: "chainBusy"; chain: string; reason: "notEmpty" | "referenced" }
  | { kind: "builtinChain"; chain: string }
  | { kind: "chainNameTooLong"; chain: string }
  | { kind: "chainNameClash"; chain: string }
  | { kind: "indexTooBig"; op: "insertion" | "deletion" };

export class SimulatedTable {
  readonly chains = new Map<string, SimulatedChain>();
  /** Number of rules in this table jumping to each chain. */
  private readonly refs = new Map<string, number>();

  constructor(readonly name: Table) {
    for (const c of BUILTIN_CHAINS[name]) {
      this.chains.set(c, { name: c, builtin: true, policy: "ACCEPT", packets: 0, bytes: 0, rules: [] });
    }
  }

  clone(): SimulatedTable {
    const t = new SimulatedTable(this.name);
    t.chains.clear();
    for (const [name, c] of this.chains) {
      t.chains.set(name, { ...c, rules: c.rules.map((r) => ({ ...r })) });
    }
    for (const [name, n] of this.refs) t.refs.set(name, n);
    return t;
  }

  /** Built-in chains in kernel order, then user chains sorted by name (as both save tools print). */
  orderedChains(): SimulatedChain[] {
    const all = [...this.chains.values()];
    const user = all
      .filter((c) => !c.builtin)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return [...all.filter((c) => c.builtin), ...user];
  }

  references(chain: string): number {
    return this.refs.get(chain) ?? 0;
  }

  validateNewChainName(chain: string): Failure | undefined {
    if (chain.length > MAX_CHAIN_NAME) return { kind: "chainNameTooLong", chain };
    if (STANDARD_TARGETS.has(chain)) return { kind: "chainNameClash", chain };
    return undefined;
  }

  newChain(chain: string): Failure | undefined {
    const bad = this.validateNewChainName(chain);
    if (bad) return bad;
    if (this.chains.has(chain)) return { kind: "chainExists", chain };
    this.chains.set(chain, { name: chain, builtin: false, policy: "-", packets: 0, bytes: 0, rules: [] });
    return undefined;
  }

  flush(chain?: string): Failure | undefined {
    if (chain === undefined) {
      for (const c of this.chains.values()) this.clearRules(c);
      return undefined;
    }
    const c = this.chains.get(chain);
    if (!c) return { kind: "noChain", chain };
    this.clearRules(c);
    return undefined;
  }

  deleteChain(chain: string): Failure | undefined {
    const c = this.chains.get(chain);
    if (!c) return { kind: "noChain", chain };
    if (c.builtin) return { kind: "builtinChain", chain };
    if (this.references(chain) > 0) return { kind: "chainBusy", chain, reason: "referenced" };
    if (c.rules.length > 0) return { kind: "chainBusy", chain, reason: "notEmpty" };
    this.chains.delete(chain);
    return undefined;
  }

  /** Drops every user chain and empties the built-in ones: what a flushing restore starts from. */
  resetForRestore(resetPolicies: boolean): void {
    for (const [name, c] of this.chains) {
      if (!c.builtin) this.chains.delete(name);
      else {
        c.rules = [];
        if (resetPolicies) c.policy = "ACCEPT";
      }
    }
    this.refs.clear();
  }

  /** A rule's target must be a known target or an existing user chain of this table. */
  checkTarget(chain: string, target: string | undefined): Failure | undefined {
    if (target === undefined || STANDARD_TARGETS.has(target) || EXTENSION_TARGETS.has(target))
      return undefined;
    const c = this.chains.get(target);
    if (!c) return { kind: "badTarget", target };
    if (c.builtin) return { kind: "jumpToBuiltin", chain, target };
    return undefined;
  }

  /** Inserts at 1-based `position`; undefined appends. */
  addRule(chain: string, rule: SimulatedRule, position?: number): Failure | undefined {
    const c = this.chains.get(chain);
    if (!c) return { kind: "noChain", chain };
    const bad = this.checkTarget(chain, rule.target);
    if (bad) return bad;
    if (position === undefined) c.rules.push(rule);
    else {
      if (position < 1 || position > c.rules.length + 1) return { kind: "indexTooBig", op: "insertion" };
      c.rules.splice(position - 1, 0, rule);
    }
    this.addRef(rule.target, 1);
    return undefined;
  }

  findRule(chain: string, spec: string): number {
    return this.chains.get(chain)?.rules.findIndex((r) => r.spec === spec) ?? -1;
  }

  /** Deletes the first rule with this spec, or the rule at a 1-based number. */
  deleteRule(chain: string, which: string | number): Failure | undefined {
    const c = this.chains.get(chain);
    if (!c) return { kind: "noRule", chain, chainMissing: true };
    const i = typeof which === "number" ? which - 1 : c.rules.findIndex((r) => r.spec === which);
    if (typeof which === "number" && (i < 0 || i >= c.rules.length))
      return { kind: "indexTooBig", op: "deletion" };
    if (i < 0) return { kind: "noRule", chain, chainMissing: false };
    const [gone] = c.rules.splice(i, 1);
    this.addRef(gone?.target, -1);
    return undefined;
  }

  setPolicy(chain: string, policy: string): Failure | undefined {
    const c = this.chains.get(chain);
    if (!c?.builtin) return { kind: "noChain", chain };
    c.policy = policy;
    return undefined;
  }

  zeroCounters(): void {
    for (const c of this.chains.values()) {
      c.packets = 0;
      c.bytes = 0;
      for (const r of c.rules) {
        r.packets = 0;
        r.bytes = 0;
      }
    }
  }

  private clearRules(c: SimulatedChain): void {
    for (const r of c.rules) this.addRef(r.target, -1);
    c.rules = [];
  }

  private addRef(target: string | undefined, delta: number): void {
    if (target === undefined || !this.chains.has(target)) return;
    const n = (this.refs.get(target) ?? 0) + delta;
    if (n <= 0) this.refs.delete(target);
    else this.refs.set(target, n);
  }
}
