// A record of what iptables-restore --noflush inputs did to the chains they named, for drift
// checks: per table and chain, how many rules it holds and, while the record holds few rules in
// all, their lines. It is read off the input as the restore reads it (tap), staged, and kept
// only once the restore succeeded (commit). Reading a line costs little more than finding its
// chain: rules are normalized (rule-key.ts, a few microseconds each) only when a check compares
// them, so a 10,000-Service full sync (300,000 rules) pays nothing for a check that may not come.
// Past the limit a chain is known by its rule count alone, as nftables mode's are.
// One Service of 100 ports x 10,000 endpoints has a million chains: a chain is one number in a
// StringMap, under the name string the proxier holds anyway (DeclaredChains) or a copy of its
// own, never a slice of the input (that would keep the input's pieces alive); objects only for
// chains whose lines are kept. A record per chain had cost ~500 bytes (~140 MiB for the 300,000
// chains of a 100,000-port Service).

import { parseIptablesSave } from "../../host/iptables/save-parser.ts";
import type { RestoreInput } from "../../host/iptables/types.ts";
import { flatString } from "../../util/flat-string.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { StringMap } from "../../util/string-map.ts";
import { type Difference, ruleCount } from "../drift.ts";
import { ruleKey } from "./rule-key.ts";

/** Rule lines kept, at most, for comparing rule by rule. */
export const LINES_KEPT = 20_000;

/** One chain as recorded: its rule count, and its lines ("-A CHAIN ...") when kept. */
export interface RecordedChain {
  readonly count: number;
  readonly lines: readonly string[] | undefined;
}

/** One table's chains, by name. */
export interface RecordedTable {
  readonly size: number;
  get(chain: string): RecordedChain | undefined;
  has(chain: string): boolean;
  keys(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, RecordedChain]>;
}

/** Table -> chain -> what it holds. */
export type RecordedRules = ReadonlyMap<string, RecordedTable>;

// A staged chain is one number: the rules appended since it was last emptied, times 8, plus
// these bits.
const FLUSHED = 1;
const DELETED = 2;
/** Some appended line was not kept (past the limit): the chain is known by its count. */
const LINES_DROPPED = 4;
const ADDED = 8;
/**
 * The chains an input declares in one table, in the order it declares them, as strings held
 * elsewhere anyway (the port states' chain names): the record keeps them as its keys instead of
 * a copy of each name (a Service of 100 ports x 10,000 endpoints declares a million chains).
 */
export interface DeclaredChains {
  readonly table: string;
  readonly chains: readonly string[];
}

/** What one restore input did to one table's chains. */
class StagedTable {
  readonly chains = new StringMap<number>();
  /** Appended lines kept, for chains with any (absent: none kept, or LINES_DROPPED). */
  readonly added = new Map<string, string[]>();
  /** "-D" lines, for chains with any. */
  readonly removed = new Map<string, string[]>();
  /** The chain the last line named, and where its state is: a chain's rules come together. */
  private lastChain: string | undefined;
  private lastAt = -1;
  /** The chains the input is expected to declare, in order, and the next one. */
  private expected: readonly string[] = [];
  private next = 0;

  /** Expects `chains` to be declared in this order (see DeclaredChains). */
  expect(chains: readonly string[]): void {
    this.chains.reserve(chains.length);
    this.expected = chains;
    this.next = 0;
  }

  /**
   * Where the state of `chain` (a slice of the input) is kept. A chain not seen before starts
   * at 0, under the expected string when it is the next one expected, else under a copy of its
   * own name (never the slice). Nothing is deleted while a table is staged, so a position holds
   * and a new key's is the count of keys before it.
   */
  at(chain: string): number {
    if (chain === this.lastChain) return this.lastAt;
    let at = this.chains.positionOf(chain);
    if (at < 0) {
      const expected = this.expected[this.next];
      const key = expected === chain ? expected : flatString(chain);
      if (key === expected) this.next++;
      at = this.chains.size;
      this.chains.set(key, 0);
    }
    this.lastChain = chain;
    this.lastAt = at;
    return at;
  }
}

/** A table as committed: per chain its count times 2, plus 1 when its lines are kept. */
class CommittedTable implements RecordedTable {
  constructor(
    readonly chains: StringMap<number>,
    /** Kept lines, for chains with lines kept and not empty. */
    readonly lines: Map<string, readonly string[]>,
  ) {}

  get size(): number {
    return this.chains.size;
  }

  get(chain: string): RecordedChain | undefined {
    const v = this.chains.get(chain);
    return v === undefined ? undefined : this.decode(chain, v);
  }

  has(chain: string): boolean {
    return this.chains.has(chain);
  }

  keys(): IterableIterator<string> {
    return this.chains.keys();
  }

  *[Symbol.iterator](): IterableIterator<[string, RecordedChain]> {
    for (const [chain, v] of this.chains) yield [chain, this.decode(chain, v)];
  }

  private decode(chain: string, v: number): RecordedChain {
    return { count: Math.floor(v / 2), lines: v & 1 ? (this.lines.get(chain) ?? []) : undefined };
  }
}

export class RestoreRecord {
  private readonly tables = new Map<string, CommittedTable>();
  private staged = new Map<string, StagedTable>();
  /** Lines the record keeps, and lines staged to be kept. */
  private keptLines = 0;
  private stagedLines = 0;
  /** False until a restore that names every chain (a full sync) succeeded, and after a failure. */
  valid = false;

  get rules(): RecordedRules {
    return this.tables;
  }

  /**
   * `input` as it is, read through the record: what it does is staged as the restore reads it.
   * `declared`: chains it declares, whose names the record may keep (see DeclaredChains).
   */
  tap(input: RestoreInput, declared?: DeclaredChains): Iterable<string> {
    const pieces = typeof input === "string" ? [input] : input;
    const self = this;
    return {
      *[Symbol.iterator]() {
        // Read again (an error's context): staged afresh.
        self.staged = new Map();
        self.stagedLines = 0;
        if (declared) {
          const expected = new StagedTable();
          expected.expect(declared.chains);
          self.staged.set(declared.table, expected);
        }
        let table: StagedTable | undefined;
        let carry = "";
        for (const piece of pieces) {
          let from = 0;
          for (let at = piece.indexOf("\n"); at >= 0; at = piece.indexOf("\n", from)) {
            table =
              carry === ""
                ? self.stageLine(piece, from, at, table)
                : self.stageLine(carry + piece.slice(from, at), 0, carry.length + at - from, table);
            carry = "";
            from = at + 1;
          }
          carry += piece.slice(from);
          yield piece;
        }
        if (carry) self.stageLine(carry, 0, carry.length, table);
      },
    };
  }

  /**
   * The line text[from, to). Most lines of a big input are rules past what the record keeps:
   * for them only the chain's name is sliced out.
   */
  private stageLine(
    text: string,
    from: number,
    to: number,
    table: StagedTable | undefined,
  ): StagedTable | undefined {
    const c0 = text.charCodeAt(from);
    if (c0 === 42 /* * */) {
      const name = text.slice(from + 1, to).trim();
      let t = this.staged.get(name);
      if (!t) {
        t = new StagedTable();
        this.staged.set(name, t);
      }
      return t;
    }
    if (!table) return table;
    if (c0 === 58 /* : */) {
      const space = text.indexOf(" ", from);
      const name = text.slice(from + 1, space < 0 || space > to ? to : space);
      this.emptied(table, name, table.at(name), false);
      return table;
    }
    if (c0 !== 45 /* - */) return text.startsWith("COMMIT", from) && to - from === 6 ? undefined : table;
    // "-X CHAIN ...": the option letter, then the chain's name.
    const op = text[from + 1];
    if (text.charCodeAt(from + 2) !== 32) return table;
    let end = text.indexOf(" ", from + 3);
    if (end < 0 || end > to) end = to;
    const name = text.slice(from + 3, end);
    const at = table.at(name);
    const state = table.chains.valueAt(at);
    switch (op) {
      case "X":
      case "F":
        this.emptied(table, name, at, op === "X");
        break;
      case "D": {
        const line = text.slice(from, to);
        const removed = table.removed.get(name);
        if (removed) removed.push(line);
        else table.removed.set(name, [line]);
        break;
      }
      case "A":
      case "I": {
        if (!(state & LINES_DROPPED) && this.keptLines + this.stagedLines < LINES_KEPT) {
          const line = text.slice(from, to);
          const added = table.added.get(name);
          if (added) added.push(line);
          else table.added.set(name, [line]);
          this.stagedLines++;
          table.chains.setValueAt(at, state + ADDED);
        } else {
          if (!(state & LINES_DROPPED)) {
            this.stagedLines -= table.added.get(name)?.length ?? 0;
            table.added.delete(name);
          }
          table.chains.setValueAt(at, (state | LINES_DROPPED) + ADDED);
        }
      }
    }
    return table;
  }

  /** Declared (":CHAIN"), flushed or deleted: what the record held of it is gone. */
  private emptied(table: StagedTable, chain: string, at: number, deleted: boolean): void {
    if (!(table.chains.valueAt(at) & LINES_DROPPED)) {
      this.stagedLines -= table.added.get(chain)?.length ?? 0;
      table.added.delete(chain);
    }
    table.chains.setValueAt(at, FLUSHED | (deleted ? DELETED : 0));
  }

  /** The restore succeeded: what it did is the record. `complete`: it named every chain (full sync). */
  commit(complete: boolean): void {
    if (complete) {
      this.tables.clear();
      this.keptLines = 0;
    }
    for (const [name, staged] of this.staged) {
      const t = this.tables.get(name);
      this.tables.set(name, t ? this.merged(t, staged) : this.adopted(staged));
    }
    this.staged = new Map();
    this.stagedLines = 0;
    if (complete) this.valid = true;
  }

  /**
   * A table the record did not hold, made of what was staged in place (one Service's 300,000
   * chains are not copied): everything it names starts empty.
   */
  private adopted(staged: StagedTable): CommittedTable {
    const gone: string[] = [];
    for (const [chain, state] of staged.chains) {
      if (state & DELETED) {
        gone.push(chain);
        continue;
      }
      const lines = state & LINES_DROPPED ? undefined : (staged.added.get(chain) ?? []);
      this.keptLines += lines?.length ?? 0;
      // A "-D" of a rule the record never held leaves the count at 0, as merged does.
      staged.chains.set(chain, Math.floor(state / ADDED) * 2 + (lines ? 1 : 0));
    }
    for (const chain of gone) {
      staged.chains.delete(chain);
      staged.added.delete(chain);
    }
    return new CommittedTable(staged.chains, staged.added);
  }

  /** `t` with what a partial restore did to it applied. */
  private merged(t: CommittedTable, staged: StagedTable): CommittedTable {
    for (const [chain, state] of staged.chains) {
      const before = t.get(chain);
      this.keptLines -= before?.lines?.length ?? 0;
      if (state & DELETED) {
        t.chains.delete(chain);
        t.lines.delete(chain);
        continue;
      }
      const base: RecordedChain = state & FLUSHED || !before ? { count: 0, lines: [] } : before;
      let lines = base.lines ? [...base.lines] : undefined;
      let count = base.count;
      for (const removed of staged.removed.get(chain) ?? []) {
        count = Math.max(0, count - 1);
        if (!lines) continue;
        const key = ruleKey(argsOf(removed));
        const i = lines.findIndex((l) => ruleKey(argsOf(l)) === key);
        if (i >= 0) lines.splice(i, 1);
      }
      count += Math.floor(state / ADDED);
      lines = lines && !(state & LINES_DROPPED) ? [...lines, ...(staged.added.get(chain) ?? [])] : undefined;
      this.keptLines += lines?.length ?? 0;
      t.chains.set(chain, count * 2 + (lines ? 1 : 0));
      if (lines?.length) t.lines.set(chain, lines);
      else t.lines.delete(chain);
    }
    return t;
  }

  /** The restore failed: nothing it said happened. */
  abandon(): void {
    this.staged = new Map();
    this.stagedLines = 0;
    this.valid = false;
  }
}

/** A rule line's arguments: "-A CHAIN args" -> "args". */
function argsOf(line: string): string {
  const first = line.indexOf(" ");
  const second = first < 0 ? -1 : line.indexOf(" ", first + 1);
  return second < 0 ? "" : line.slice(second + 1);
}

/**
 * The differences between the record of the chains we wrote and iptables-save output of the
 * same tables (`saved`). Pure. Chains we never wrote are not looked at. A chain whose lines the
 * record kept is compared rule by rule (normalized: iptables-save prints options in its own
 * order); one known by its count alone, by its count.
 */
export function iptablesDrift(recorded: RecordedRules, saved: string, family?: IPFamily): Difference[] {
  const tag = family ? { ipFamily: family } : {};
  const kernel = parseIptablesSave(saved);
  const out: Difference[] = [];
  for (const [tableName, chains] of recorded) {
    const table = kernel.get(tableName);
    for (const [chain, rec] of chains) {
      const what = `${tableName} ${chain}`;
      const listed = table?.chains.get(chain);
      if (!listed) {
        out.push({ kind: "chain", what, expected: ruleCount(rec.count), found: "absent", ...tag });
        continue;
      }
      if (!rec.lines) {
        if (listed.rules.length !== rec.count)
          out.push({
            kind: "rule",
            what,
            expected: ruleCount(rec.count),
            found: ruleCount(listed.rules.length),
            ...tag,
          });
        continue;
      }
      // Written lines by key, each key as often as it was written.
      const want = new Map<string, string[]>();
      for (const line of rec.lines) {
        const key = ruleKey(argsOf(line));
        const same = want.get(key);
        if (same) same.push(line);
        else want.set(key, [line]);
      }
      const extra: string[] = [];
      for (const line of listed.rules) {
        const same = want.get(ruleKey(argsOf(line)));
        if (same && same.length > 0) same.pop();
        else extra.push(line);
      }
      for (const lines of want.values())
        for (const line of lines) out.push({ kind: "rule", what, expected: line, found: "absent", ...tag });
      for (const line of extra) out.push({ kind: "rule", what, expected: "absent", found: line, ...tag });
    }
  }
  return out;
}
