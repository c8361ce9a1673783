// A record of what iptables-restore --noflush inputs did to the chains they named, for drift
// checks: per table and chain, how many rules it holds and, while the record holds few rules in
// all, their lines. It is read off the input as the restore reads it (tap), staged, and kept
// only once the restore succeeded (commit). Reading a line costs little more than finding its
// chain: rules are normalized (rule-key.ts, a few microseconds each) only when a check compares
// them, so a 10,000-Service full sync (300,000 rules) pays nothing for a check that may not come.
// Past the limit a chain is known by its rule count alone, as nftables mode's are.

import { parseIptablesSave } from "../../host/iptables/save-parser.ts";
import type { RestoreInput } from "../../host/iptables/types.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { type Difference, ruleCount } from "../drift.ts";
import { ruleKey } from "./rule-key.ts";

/** Rule lines kept, at most, for comparing rule by rule. */
export const LINES_KEPT = 20_000;

interface StagedChain {
  /** Declared (":CHAIN") or flushed ("-F"): what the record held is gone. */
  flushed: boolean;
  deleted: boolean;
  /** Rules appended; their lines while the record keeps lines (else `complete` is false). */
  addedCount: number;
  readonly added: string[];
  complete: boolean;
  /** "-D" lines. */
  readonly removed: string[];
}

/** One chain as recorded: its rule count, and its lines ("-A CHAIN ...") when kept. */
export interface RecordedChain {
  readonly count: number;
  readonly lines: readonly string[] | undefined;
}

/** Table -> chain -> what it holds. */
export type RecordedRules = ReadonlyMap<string, ReadonlyMap<string, RecordedChain>>;

export class RestoreRecord {
  private readonly tables = new Map<string, Map<string, RecordedChain>>();
  private staged = new Map<string, Map<string, StagedChain>>();
  /** Lines the record keeps, and lines staged to be kept. */
  private keptLines = 0;
  private stagedLines = 0;
  /** False until a restore that names every chain (a full sync) succeeded, and after a failure. */
  valid = false;

  get rules(): RecordedRules {
    return this.tables;
  }

  /** `input` as it is, read through the record: what it does is staged as the restore reads it. */
  tap(input: RestoreInput): Iterable<string> {
    const pieces = typeof input === "string" ? [input] : input;
    const self = this;
    return {
      *[Symbol.iterator]() {
        // Read again (an error's context): staged afresh.
        self.staged = new Map();
        self.stagedLines = 0;
        let table: Map<string, StagedChain> | undefined;
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
    table: Map<string, StagedChain> | undefined,
  ): Map<string, StagedChain> | undefined {
    const c0 = text.charCodeAt(from);
    if (c0 === 42 /* * */) {
      const name = text.slice(from + 1, to).trim();
      let t = this.staged.get(name);
      if (!t) {
        t = new Map();
        this.staged.set(name, t);
      }
      return t;
    }
    if (!table) return table;
    const chainOf = (name: string): StagedChain => {
      let c = table.get(name);
      if (!c) {
        c = { flushed: false, deleted: false, addedCount: 0, added: [], complete: true, removed: [] };
        table.set(name, c);
      }
      return c;
    };
    if (c0 === 58 /* : */) {
      const space = text.indexOf(" ", from);
      emptied(chainOf(text.slice(from + 1, space < 0 || space > to ? to : space)), false);
      return table;
    }
    if (c0 !== 45 /* - */) return text.startsWith("COMMIT", from) && to - from === 6 ? undefined : table;
    // "-X CHAIN ...": the option letter, then the chain's name.
    const op = text[from + 1];
    if (text.charCodeAt(from + 2) !== 32) return table;
    let end = text.indexOf(" ", from + 3);
    if (end < 0 || end > to) end = to;
    const c = chainOf(text.slice(from + 3, end));
    switch (op) {
      case "X":
      case "F":
        emptied(c, op === "X");
        break;
      case "D":
        c.removed.push(text.slice(from, to));
        break;
      case "A":
      case "I":
        c.addedCount++;
        if (c.complete && this.keptLines + this.stagedLines < LINES_KEPT) {
          c.added.push(text.slice(from, to));
          this.stagedLines++;
        } else c.complete = false;
    }
    return table;
  }

  /** The restore succeeded: what it did is the record. `complete`: it named every chain (full sync). */
  commit(complete: boolean): void {
    if (complete) {
      this.tables.clear();
      this.keptLines = 0;
    }
    for (const [name, staged] of this.staged) {
      let t = this.tables.get(name);
      if (!t) {
        t = new Map();
        this.tables.set(name, t);
      }
      for (const [chain, c] of staged) {
        const before = t.get(chain);
        this.keptLines -= before?.lines?.length ?? 0;
        if (c.deleted) {
          t.delete(chain);
          continue;
        }
        const base: RecordedChain = c.flushed || !before ? { count: 0, lines: [] } : before;
        let lines = base.lines ? [...base.lines] : undefined;
        let count = base.count;
        for (const removed of c.removed) {
          count = Math.max(0, count - 1);
          if (!lines) continue;
          const key = ruleKey(argsOf(removed));
          const i = lines.findIndex((l) => ruleKey(argsOf(l)) === key);
          if (i >= 0) lines.splice(i, 1);
        }
        count += c.addedCount;
        lines = lines && c.complete ? [...lines, ...c.added] : undefined;
        this.keptLines += lines?.length ?? 0;
        t.set(chain, { count, lines });
      }
    }
    this.staged = new Map();
    this.stagedLines = 0;
    if (complete) this.valid = true;
  }

  /** The restore failed: nothing it said happened. */
  abandon(): void {
    this.staged = new Map();
    this.stagedLines = 0;
    this.valid = false;
  }
}

function emptied(c: StagedChain, deleted: boolean): void {
  c.flushed = true;
  c.deleted = deleted;
  c.addedCount = 0;
  c.added.length = 0;
  c.complete = true;
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
