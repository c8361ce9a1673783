// SimulatedIptables: one backend's netfilter tables for one IP family, answering the iptables,
// iptables-save and iptables-restore binaries through a SimulatedExec, so tests drive the real
// IptablesClient and assert on the resulting rules. Two backends on one node are two
// simulators. --dry-run replay runs on it too.

import { SimulatedExec } from "../../../exec/simulated.ts";
import type { ExecResult, TextExecRequest } from "../../../exec/types.ts";
import type { IPFamily } from "../../../util/net/family.ts";
import { versionAtLeast } from "../../../util/version.ts";
import { familyPrefix } from "../commands.ts";
import type { IptablesBackend, Table } from "../types.ts";
import { runIptablesCli } from "./cli.ts";
import { type Flavor, lockHeld, restoreParameterProblem, restoreProgram, versionBanner } from "./messages.ts";
import { applyRestore, type RestoreRequest } from "./restore.ts";
import { isTable, SimulatedTable } from "./tables.ts";

export interface SimulatedIptablesOptions {
  /** Which backend this fake impersonates (message wording, binary names). Default "nft". */
  backend?: IptablesBackend;
  /** Version the binaries report. Default "1.8.9". */
  version?: string;
  /** Time printed in iptables-save's comment lines. */
  clock?: () => Date;
  /** Also answer the unsuffixed names (iptables, iptables-save, ...). Default true. */
  plainNames?: boolean;
}

export interface SaveOptions {
  table?: Table;
  /** Print "[packets:bytes]" before each rule, as iptables-save -c does. */
  counters?: boolean;
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

// ctime(3) layout, as iptables-save prints it: "Mon Nov  3 11:14:44 2026".
function ctime(d: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  return `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]}${String(d.getUTCDate()).padStart(3)} ${time} ${d.getUTCFullYear()}`;
}

function baseName(cmd: string): string {
  return cmd.slice(cmd.lastIndexOf("/") + 1);
}

export class SimulatedIptables {
  readonly backend: IptablesBackend;
  readonly version: string;
  private familyValue: IPFamily | undefined;
  private readonly clock: () => Date;
  private readonly plainNames: boolean;
  private readonly state = new Map<Table, SimulatedTable>();
  private injected: { line: number; message: string } | undefined;
  private lock = false;

  constructor(opts: SimulatedIptablesOptions = {}) {
    this.backend = opts.backend ?? "nft";
    this.version = opts.version ?? "1.8.9";
    this.clock = opts.clock ?? (() => new Date());
    this.plainNames = opts.plainNames ?? true;
  }

  /** Set by install(); IPv4 until then. */
  get family(): IPFamily {
    return this.familyValue ?? "IPv4";
  }

  /**
   * Registers this fake as `iptables-<backend>{,-save,-restore}` (ip6tables-* for IPv6) and,
   * unless plainNames is false, the unsuffixed names.
   */
  install(exec: SimulatedExec = new SimulatedExec(), family: IPFamily = "IPv4"): SimulatedExec {
    if (this.familyValue !== undefined && this.familyValue !== family) {
      throw new Error(
        `SimulatedIptables already holds ${this.familyValue} tables; use a second fake for ${family}`,
      );
    }
    this.familyValue = family;
    const prefixes = [`${familyPrefix(family)}-${this.backend}`];
    if (this.plainNames) prefixes.push(familyPrefix(family));
    const handler = (req: TextExecRequest) => this.handle(req);
    for (const p of prefixes) {
      exec.on(p, handler).on(`${p}-save`, handler).on(`${p}-restore`, handler);
    }
    return exec;
  }

  /** Answers one invocation of iptables, iptables-save or iptables-restore (by program name). */
  handle(req: TextExecRequest): ExecResult {
    const invoked = baseName(req.cmd);
    const flavor = this.flavor(invoked);
    if (invoked.endsWith("-save")) return this.runSave(flavor, req.args);
    const res = invoked.endsWith("-restore")
      ? this.runRestore(flavor, req.args, req.stdin ?? "")
      : runIptablesCli({ flavor, lockHeld: this.lock, table: (name) => this.tableFor(name, true) }, req.args);
    // 1.8.8 and later accept -W but say on stderr that it does nothing, success or not.
    const saysWaitInterval =
      (req.args.includes("-W") || req.args.includes("--wait-interval")) &&
      versionAtLeast(this.version, "1.8.8");
    return saysWaitInterval
      ? { ...res, stderr: `Ignoring deprecated --wait-interval option.\n${res.stderr}` }
      : res;
  }

  // ---- state inspection for tests ----

  /** Tables that exist, in the order they were created. */
  tables(): Table[] {
    return [...this.state.keys()];
  }

  /** Chain names of a table: built-in chains first, then user chains sorted (iptables-save order). */
  chains(table: Table): string[] {
    return (
      this.state
        .get(table)
        ?.orderedChains()
        .map((c) => c.name) ?? []
    );
  }

  hasChain(table: Table, chain: string): boolean {
    return this.state.get(table)?.chains.has(chain) ?? false;
  }

  /** Rule arguments of a chain in canonical form (what iptables-save prints after "-A CHAIN "). */
  rules(table: Table, chain: string): string[] {
    return (
      this.state
        .get(table)
        ?.chains.get(chain)
        ?.rules.map((r) => r.spec) ?? []
    );
  }

  policy(table: Table, chain: string): string | undefined {
    const c = this.state.get(table)?.chains.get(chain);
    return c?.builtin ? c.policy : undefined;
  }

  /** Packet and byte counters of one rule (1-based), e.g. after a restore with --counters. */
  ruleCounters(table: Table, chain: string, rule: number): { packets: number; bytes: number } | undefined {
    const r = this.state.get(table)?.chains.get(chain)?.rules[rule - 1];
    return r ? { packets: r.packets, bytes: r.bytes } : undefined;
  }

  /** iptables-save output of the current state, comment lines included. */
  save(opts: SaveOptions = {}): string {
    return this.saveText(this.flavor(`${familyPrefix(this.family)}-${this.backend}-save`), opts);
  }

  // ---- state changes for tests ----

  /** Applies restore input directly (no exec), answering as iptables-restore would. */
  restore(input: string, req: RestoreRequest = { noFlush: false, counters: false }): ExecResult {
    return applyRestore(
      this.state,
      input,
      req,
      this.flavor(`${familyPrefix(this.family)}-${this.backend}-restore`),
    );
  }

  /** Seeds the tables from iptables-save text (counters kept); throws if the text is rejected. */
  load(saveText: string): void {
    const res = this.restore(saveText, { noFlush: false, counters: true });
    if (res.code !== 0) throw new Error(`SimulatedIptables.load: ${res.stderr.trim()}`);
  }

  /** Back to a fresh network namespace: no tables at all. */
  reset(): void {
    this.state.clear();
    this.injected = undefined;
    this.lock = false;
  }

  /** The next iptables-restore run fails at `line` without touching any table. */
  failNextRestore(line: number, message = "injected failure"): void {
    this.injected = { line, message };
  }

  /** While held, legacy binaries that change state exit 4 as when another process has the xtables lock. */
  holdLock(held = true): void {
    this.lock = held;
  }

  // ---- binaries ----

  private flavor(invoked: string): Flavor {
    return { backend: this.backend, version: this.version, family: this.family, invoked };
  }

  private tableFor(name: Table, create: boolean): SimulatedTable {
    let t = this.state.get(name);
    if (!t) {
      t = new SimulatedTable(name);
      if (create) this.state.set(name, t);
    }
    return t;
  }

  private runSave(f: Flavor, args: readonly string[]): ExecResult {
    const opts: SaveOptions = {};
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      if (a === "-c" || a === "--counters") opts.counters = true;
      else if (a === "-t" || a === "--table") {
        const name = args[++i] ?? "";
        if (!isTable(name)) {
          const stderr =
            f.backend === "legacy"
              ? `${versionBanner(f, `${familyPrefix(f.family)}-save`)}: Cannot initialize: Table does not exist (do you need to insmod?)\n`
              : `Table \`${name}' does not exist\n`;
          return { code: 1, stdout: "", stderr };
        }
        opts.table = name;
      } else if (a === "--version" || a === "-V") {
        return { code: 0, stdout: `${versionBanner(f, f.invoked)}\n`, stderr: "" };
      }
    }
    return { code: 0, stdout: this.saveText(f, opts), stderr: "" };
  }

  private saveText(f: Flavor, opts: SaveOptions): string {
    // Legacy creates a table it is asked to dump (the kernel loads it); nft only prints it.
    const tables = opts.table
      ? [this.tableFor(opts.table, f.backend === "legacy")]
      : [...this.state.values()];
    const program =
      f.backend === "legacy" ? `${familyPrefix(f.family)}-save v${f.version}` : versionBanner(f, f.invoked);
    const out: string[] = [];
    for (const t of tables) {
      const when = ctime(this.clock());
      out.push(`# Generated by ${program} on ${when}`, `*${t.name}`);
      const chains = t.orderedChains();
      for (const c of chains) out.push(`:${c.name} ${c.policy} [${c.packets}:${c.bytes}]`);
      for (const c of chains) {
        for (const r of c.rules) {
          const line = r.spec === "" ? `-A ${c.name}` : `-A ${c.name} ${r.spec}`;
          out.push(opts.counters ? `[${r.packets}:${r.bytes}] ${line}` : line);
        }
      }
      out.push("COMMIT", `# Completed on ${when}`);
    }
    return out.length === 0 ? "" : `${out.join("\n")}\n`;
  }

  private runRestore(f: Flavor, args: readonly string[], stdin: string): ExecResult {
    let noFlush = false;
    let counters = false;
    let waited = false;
    let onlyTable: string | undefined;
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (a === "-n" || a === "--noflush") noFlush = true;
      else if (a === "-c" || a === "--counters") counters = true;
      else if (a === "-w" || a === "--wait") {
        waited = true;
        if (/^\d+$/.test(args[i + 1] ?? "")) i++;
      } else if (a === "-W" || a === "--wait-interval") i++;
      else if (a === "-T" || a === "--table") onlyTable = args[++i];
      else if (a === "-V" || a === "--version") {
        return { code: 0, stdout: `${versionBanner(f, restoreProgram(f))}\n`, stderr: "" };
      } else {
        const rp = restoreProgram(f);
        return { code: 2, stdout: "", stderr: `${versionBanner(f, rp)}: unknown option "${a}"\n` };
      }
    }
    if (this.lock && f.backend === "legacy") return lockHeld(waited);
    if (this.injected) {
      const { line, message } = this.injected;
      this.injected = undefined;
      return restoreParameterProblem(f, line, message);
    }
    const req: RestoreRequest =
      onlyTable === undefined ? { noFlush, counters } : { noFlush, counters, onlyTable };
    return applyRestore(this.state, stdin, req, f);
  }
}

export function createSimulatedIptables(opts: SimulatedIptablesOptions = {}): SimulatedIptables {
  return new SimulatedIptables(opts);
}
