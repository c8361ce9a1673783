// A record of what iptables-restore --noflush inputs did to the chains they named, for drift
// checks: per table and chain, the keys (rule-key.ts) of the rules it holds. It is read off the
// input as the restore reads it (tap), staged, and kept only once the restore succeeded
// (commit). A rule is kept as a number (its key hashed; a 10,000-Service table has 300,000
// rules), and its text only while the record holds few (for naming a rule that went missing).

import { parseIptablesSave } from "../../host/iptables/save-parser.ts";
import type { RestoreInput } from "../../host/iptables/types.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { stringHash } from "../../util/string-hash.ts";
import { type Difference, ruleCount } from "../drift.ts";
import { ruleKey } from "./rule-key.ts";

/** Rule texts kept for naming missing rules, at most. */
const TEXTS_KEPT = 20_000;

interface StagedChain {
  /** Declared (":CHAIN") or flushed ("-F"): what the record held is gone. */
  flushed: boolean;
  deleted: boolean;
  readonly added: number[];
  readonly removed: number[];
}

/** Table -> chain -> rule hashes. */
export type RecordedRules = ReadonlyMap<string, ReadonlyMap<string, readonly number[]>>;

export class RestoreRecord {
  private readonly tables = new Map<string, Map<string, number[]>>();
  private staged = new Map<string, Map<string, StagedChain>>();
  private stagedTexts = new Map<number, string>();
  private texts = new Map<number, string>();
  /** False until a restore that names every chain (a full sync) succeeded, and after a failure. */
  valid = false;

  get rules(): RecordedRules {
    return this.tables;
  }

  /** The text of a rule by its hash, while kept. */
  textOf(hash: number): string | undefined {
    return this.texts.get(hash);
  }

  /** `input` as it is, read through the record: what it does is staged as the restore reads it. */
  tap(input: RestoreInput): Iterable<string> {
    const pieces = typeof input === "string" ? [input] : input;
    const self = this;
    return {
      *[Symbol.iterator]() {
        // Read again (an error's context): staged afresh.
        self.staged = new Map();
        self.stagedTexts = new Map();
        let table: Map<string, StagedChain> | undefined;
        let carry = "";
        const line = (l: string) => {
          table = self.stageLine(l, table);
        };
        for (const piece of pieces) {
          let from = 0;
          for (let at = piece.indexOf("\n"); at >= 0; at = piece.indexOf("\n", from)) {
            line(carry + piece.slice(from, at));
            carry = "";
            from = at + 1;
          }
          carry += piece.slice(from);
          yield piece;
        }
        if (carry) line(carry);
      },
    };
  }

  private stageLine(
    l: string,
    table: Map<string, StagedChain> | undefined,
  ): Map<string, StagedChain> | undefined {
    if (l.startsWith("*")) {
      const name = l.slice(1).trim();
      let t = this.staged.get(name);
      if (!t) {
        t = new Map();
        this.staged.set(name, t);
      }
      return t;
    }
    if (!table || l === "COMMIT") return l === "COMMIT" ? undefined : table;
    const chainOf = (name: string): StagedChain => {
      let c = table.get(name);
      if (!c) {
        c = { flushed: false, deleted: false, added: [], removed: [] };
        table.set(name, c);
      }
      return c;
    };
    if (l.startsWith(":")) {
      const c = chainOf(l.slice(1).split(" ")[0]!);
      c.flushed = true;
      c.deleted = false;
      c.added.length = 0;
      return table;
    }
    const m = /^-([AIDXF]) (\S+)(?: (.*))?$/.exec(l);
    if (!m) return table;
    const c = chainOf(m[2]!);
    const op = m[1]!;
    if (op === "X" || op === "F") {
      c.flushed = true;
      c.deleted = op === "X";
      c.added.length = 0;
      return table;
    }
    const hash = stringHash(ruleKey(m[3] ?? ""));
    if (op === "D") c.removed.push(hash);
    else {
      c.added.push(hash);
      if (this.texts.size + this.stagedTexts.size < TEXTS_KEPT) this.stagedTexts.set(hash, l);
    }
    return table;
  }

  /** The restore succeeded: what it did is the record. `complete`: it named every chain (full sync). */
  commit(complete: boolean): void {
    if (complete) {
      this.tables.clear();
      this.texts.clear();
    }
    for (const [name, staged] of this.staged) {
      let t = this.tables.get(name);
      if (!t) {
        t = new Map();
        this.tables.set(name, t);
      }
      for (const [chain, c] of staged) {
        if (c.deleted) {
          t.delete(chain);
          continue;
        }
        let rules = c.flushed ? [] : (t.get(chain) ?? []);
        for (const h of c.removed) {
          const i = rules.indexOf(h);
          if (i >= 0) rules = [...rules.slice(0, i), ...rules.slice(i + 1)];
        }
        t.set(chain, [...rules, ...c.added]);
      }
    }
    for (const [h, text] of this.stagedTexts) this.texts.set(h, text);
    this.staged = new Map();
    this.stagedTexts = new Map();
    if (complete) this.valid = true;
  }

  /** The restore failed: nothing it said happened. */
  abandon(): void {
    this.staged = new Map();
    this.stagedTexts = new Map();
    this.valid = false;
  }
}

/**
 * The differences between the record of the chains we wrote and iptables-save output of the
 * same tables (`saved`). Pure. Chains we never wrote are not looked at.
 */
export function iptablesDrift(
  recorded: RecordedRules,
  saved: string,
  textOf: (hash: number) => string | undefined,
  family?: IPFamily,
): Difference[] {
  const tag = family ? { ipFamily: family } : {};
  const kernel = parseIptablesSave(saved);
  const out: Difference[] = [];
  for (const [tableName, chains] of recorded) {
    const table = kernel.get(tableName);
    for (const [chain, rules] of chains) {
      const listed = table?.chains.get(chain);
      if (!listed) {
        out.push({
          kind: "chain",
          what: `${tableName} ${chain}`,
          expected: ruleCount(rules.length),
          found: "absent",
          ...tag,
        });
        continue;
      }
      const want = new Map<number, number>();
      for (const h of rules) want.set(h, (want.get(h) ?? 0) + 1);
      const extra: string[] = [];
      for (const line of listed.rules) {
        const h = stringHash(ruleKey(line.replace(/^-A \S+ ?/, "")));
        const n = want.get(h) ?? 0;
        if (n > 0) want.set(h, n - 1);
        else extra.push(line);
      }
      for (const [h, n] of want)
        for (let i = 0; i < n; i++)
          out.push({
            kind: "rule",
            what: `${tableName} ${chain}`,
            expected: textOf(h) ?? `a rule of the ${rules.length} the last sync wrote (text not kept)`,
            found: "absent",
            ...tag,
          });
      for (const line of extra)
        out.push({ kind: "rule", what: `${tableName} ${chain}`, expected: "absent", found: line, ...tag });
    }
  }
  return out;
}
