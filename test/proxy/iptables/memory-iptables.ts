// A small stateful IptablesClient for the proxier tests: restore input is applied to in-memory
// tables with iptables-restore's --noflush semantics (named chains flushed or created, -A, -X),
// atomically, and rejected the way the kernel would (unknown chain, jump to a missing chain,
// deleting a chain still referenced), with the failing line number. save() prints the state.

import type {
  IPTablesFamily,
  IptablesClient,
  RestoreOptions,
  RulePosition,
  Table,
} from "../../../src/host/iptables/types.ts";

type Chains = Map<string, string[]>;

const BUILTIN: Record<string, readonly string[]> = {
  filter: ["INPUT", "FORWARD", "OUTPUT"],
  nat: ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"],
  mangle: ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"],
  raw: ["PREROUTING", "OUTPUT"],
  security: ["INPUT", "FORWARD", "OUTPUT"],
};

const TARGETS = new Set(["ACCEPT", "DROP", "REJECT", "RETURN", "MARK", "MASQUERADE", "DNAT", "SNAT", "LOG"]);

export class RestoreLineError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line} failed: ${message}`);
  }
}

function quoteArg(a: string): string {
  return /[\s"]/.test(a) ? `"${a}"` : a;
}

function jumpTarget(rule: string): string | undefined {
  const m = / -j (\S+)/.exec(` ${rule}`);
  return m?.[1];
}

export class MemoryIptables implements IptablesClient {
  readonly backend = "nft" as const;
  tables = new Map<string, Chains>();
  /** Every restore input, in order (including rejected ones). */
  readonly restores: string[] = [];
  /** Makes the next N restores fail (as if iptables-restore exited non-zero on line 2). */
  failRestores = 0;
  randomFully = false;
  saveCalls = 0;

  constructor(readonly family: IPTablesFamily = "IPv4") {}

  private table(name: string, tables = this.tables): Chains {
    let t = tables.get(name);
    if (!t) {
      t = new Map((BUILTIN[name] ?? []).map((c) => [c, []]));
      tables.set(name, t);
    }
    return t;
  }

  async save(table: Table): Promise<string> {
    this.saveCalls++;
    const t = this.table(table);
    const lines = [`*${table}`];
    for (const chain of t.keys())
      lines.push(`:${chain} ${BUILTIN[table]?.includes(chain) ? "ACCEPT" : "-"} [0:0]`);
    for (const [chain, rules] of t) for (const r of rules) lines.push(`-A ${chain} ${r}`);
    lines.push("COMMIT", "");
    return lines.join("\n");
  }

  async saveAll(): Promise<string> {
    const out: string[] = [];
    for (const name of this.tables.keys()) out.push(await this.save(name as Table));
    return out.join("");
  }

  async restoreAll(data: string, opts: RestoreOptions): Promise<void> {
    this.restores.push(data);
    if (!opts.noFlush) throw new Error("the proxier must restore with --noflush");
    if (this.failRestores > 0) {
      this.failRestores--;
      throw new RestoreLineError(2, "injected failure");
    }
    const next = new Map([...this.tables].map(([n, t]) => [n, new Map([...t].map(([c, r]) => [c, [...r]]))]));
    this.apply(data, next);
    this.tables = next;
  }

  private apply(data: string, tables: Map<string, Chains>): void {
    let current: Chains | undefined;
    const lines = data.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      const n = i + 1;
      if (line === "" || line.startsWith("#")) continue;
      if (line.startsWith("*")) current = this.table(line.slice(1), tables);
      else if (!current) throw new RestoreLineError(n, "no table");
      else if (line === "COMMIT") this.checkJumps(current, n);
      else this.applyLine(current, line, n);
    }
  }

  private applyLine(t: Chains, line: string, n: number): void {
    if (line.startsWith(":")) {
      const chain = line.slice(1, line.indexOf(" "));
      t.set(chain, []);
      return;
    }
    const [op, chain = "", ...rest] = line.split(" ");
    if (op === "-A") {
      const rules = t.get(chain);
      if (!rules) throw new RestoreLineError(n, `chain ${chain} does not exist`);
      rules.push(rest.join(" "));
    } else if (op === "-X") {
      if (!t.has(chain)) throw new RestoreLineError(n, `chain ${chain} does not exist`);
      for (const [other, rules] of t) {
        if (rules.some((r) => jumpTarget(r) === chain))
          throw new RestoreLineError(n, `${chain} is used by ${other}`);
      }
      t.delete(chain);
    } else {
      throw new RestoreLineError(n, `unsupported: ${line}`);
    }
  }

  private checkJumps(t: Chains, n: number): void {
    for (const [chain, rules] of t) {
      for (const r of rules) {
        const target = jumpTarget(r);
        if (target && !TARGETS.has(target) && !t.has(target)) {
          throw new RestoreLineError(n, `${chain} jumps to missing ${target}`);
        }
      }
    }
  }

  async ensureChain(table: Table, chain: string): Promise<boolean> {
    const t = this.table(table);
    if (t.has(chain)) return true;
    t.set(chain, []);
    return false;
  }

  async chainExists(table: Table, chain: string): Promise<boolean> {
    return this.tables.get(table)?.has(chain) ?? false;
  }

  async flushChain(table: Table, chain: string): Promise<void> {
    const t = this.table(table);
    if (!t.has(chain)) throw new Error(`no chain ${chain}`);
    t.set(chain, []);
  }

  async deleteChain(table: Table, chain: string): Promise<void> {
    this.tables.get(table)?.delete(chain);
  }

  async ensureRule(
    position: RulePosition,
    table: Table,
    chain: string,
    args: readonly string[],
  ): Promise<boolean> {
    const rules = this.table(table).get(chain);
    if (!rules) throw new Error(`no chain ${chain}`);
    const rule = args.map(quoteArg).join(" ");
    if (rules.includes(rule)) return true;
    if (position === "prepend") rules.unshift(rule);
    else rules.push(rule);
    return false;
  }

  async deleteRule(table: Table, chain: string, args: readonly string[]): Promise<void> {
    const rules = this.tables.get(table)?.get(chain);
    const rule = args.map(quoteArg).join(" ");
    const i = rules?.indexOf(rule) ?? -1;
    if (i >= 0) rules!.splice(i, 1);
  }

  async version(): Promise<string> {
    return "1.8.9";
  }

  async hasRandomFully(): Promise<boolean> {
    return this.randomFully;
  }

  /** Test helper: rules of one chain, as saved. */
  rules(table: string, chain: string): string[] {
    return this.tables.get(table)?.get(chain) ?? [];
  }

  /** Test helper: chain names of a table. */
  chains(table: string): string[] {
    return [...(this.tables.get(table)?.keys() ?? [])];
  }

  /** Simulates `iptables -F; iptables -X` in every table (e.g. a firewalld reload). */
  flushAll(): void {
    this.tables = new Map();
  }
}
