// iptables-restore semantics for SimulatedIptables, as recorded from iptables 1.8.9:
// - Each *table section is applied at its COMMIT, on its own: a failure in a later section
//   leaves earlier sections committed (both backends).
// - Without --noflush a section starts from an empty table: every chain flushed, every user chain
//   deleted. nft also resets the built-in policies to ACCEPT; legacy keeps them.
// - With --noflush, ":CHAIN - [0:0]" creates a missing user chain or flushes an existing one; a
//   built-in chain line only sets the policy (its rules stay).
// - A rule may only jump to a known target or to a user chain that exists at that line.
// - Legacy reports every failure at the offending line, at once. nft parses first and runs the
//   commands at COMMIT, in order: the first failing command wins, and a jump to a missing chain is
//   reported at the COMMIT line; parse errors (bad chain names, stray text) still win by line.

import type { ExecResult } from "../../../exec/types.ts";
import { formatRuleArgs, ruleTarget, splitRuleLine } from "../rule-args.ts";
import type { Table } from "../types.ts";
import {
  type Flavor,
  restoreBadArgument,
  restoreBadTable,
  restoreCommitExpected,
  restoreFailure,
  restoreLineFailed,
  restoreParameterProblem,
} from "./messages.ts";
import { type Failure, isTable, type SimulatedRule, SimulatedTable } from "./tables.ts";

export interface RestoreRequest {
  readonly noFlush: boolean;
  readonly counters: boolean;
  /** -T TABLE: sections of other tables are read but not applied. */
  readonly onlyTable?: string;
}

interface Section {
  readonly name: Table;
  readonly tx: SimulatedTable;
  readonly skip: boolean;
}

// Failures nft detects while parsing (reported at once) rather than while committing.
const PARSE_TIME: ReadonlySet<Failure["kind"]> = new Set(["chainNameTooLong", "chainNameClash"]);

const COMMANDS = new Set([
  ...["-A", "--append", "-I", "--insert", "-D", "--delete", "-N", "--new-chain", "-X", "--delete-chain"],
  ...["-F", "--flush", "-P", "--policy", "-Z", "--zero"],
]);

const OK: ExecResult = { code: 0, stdout: "", stderr: "" };

function parseCounters(text: string): { packets: number; bytes: number } | undefined {
  const m = /^\[(\d+):(\d+)\]$/.exec(text);
  return m ? { packets: Number(m[1]), bytes: Number(m[2]) } : undefined;
}

function zeroBuiltinCounters(t: SimulatedTable): void {
  for (const c of t.chains.values()) {
    if (c.builtin) {
      c.packets = 0;
      c.bytes = 0;
    }
  }
}

/** Applies restore input to `tables` (committing section by section) and answers as the binary would. */
export function applyRestore(
  tables: Map<Table, SimulatedTable>,
  input: string,
  req: RestoreRequest,
  flavor: Flavor,
): ExecResult {
  const legacy = flavor.backend === "legacy";
  const lines = input.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();

  let open: Section | undefined;
  let pending: { failure: Failure; line: number } | undefined;

  const rule = (args: readonly string[], counts?: { packets: number; bytes: number }): SimulatedRule => ({
    spec: formatRuleArgs(args, flavor.family),
    target: ruleTarget(args),
    packets: req.counters ? (counts?.packets ?? 0) : 0,
    bytes: req.counters ? (counts?.bytes ?? 0) : 0,
  });

  for (let i = 0; i < lines.length; i++) {
    const n = i + 1;
    const text = lines[i]!.trim();
    if (text === "" || text.startsWith("#")) continue;

    if (!open) {
      if (!text.startsWith("*")) return restoreLineFailed(flavor, n);
      const name = text.slice(1).trim();
      if (!isTable(name)) return restoreBadTable(flavor, n, name);
      const skip = req.onlyTable !== undefined && req.onlyTable !== name;
      const tx = (tables.get(name) ?? new SimulatedTable(name)).clone();
      if (!skip) {
        if (!req.noFlush) tx.resetForRestore(!legacy);
        if (!req.noFlush || (legacy && !req.counters)) zeroBuiltinCounters(tx);
      }
      open = { name, tx, skip };
      continue;
    }

    if (text === "COMMIT") {
      if (pending) return restoreFailure(flavor, pending.failure, pending.line, n);
      if (!open.skip) tables.set(open.name, open.tx);
      open = undefined;
      continue;
    }
    if (open.skip) continue;
    const { tx } = open;

    if (text.startsWith(":")) {
      const [name = "", policy = "-", countText = ""] = text.slice(1).split(/\s+/);
      const existing = tx.chains.get(name);
      const counts = parseCounters(countText);
      if (existing?.builtin) {
        if (policy !== "-") existing.policy = policy;
        if (req.counters && counts) {
          existing.packets = counts.packets;
          existing.bytes = counts.bytes;
        }
        continue;
      }
      const bad = tx.validateNewChainName(name);
      if (bad) return restoreFailure(flavor, bad, n, n);
      if (pending) continue;
      if (existing) tx.flush(name);
      else tx.newChain(name);
      continue;
    }

    let body = text;
    let counts: { packets: number; bytes: number } | undefined;
    if (body.startsWith("[")) {
      const close = body.indexOf("]");
      counts = parseCounters(body.slice(0, close + 1));
      body = body.slice(close + 1).trim();
    }
    const tokens = splitRuleLine(body);
    const cmd = tokens[0] ?? "";
    if (!COMMANDS.has(cmd)) return restoreBadArgument(flavor, n, cmd);
    if (tokens.length < 2 && !["-F", "--flush", "-Z", "--zero", "-X", "--delete-chain"].includes(cmd)) {
      return restoreParameterProblem(flavor, n, `option "${cmd}" requires an argument`);
    }
    if (pending) continue;

    const failure = applyCommand(tx, tokens, (args) => rule(args, counts));
    if (!failure) continue;
    if (legacy || PARSE_TIME.has(failure.kind)) return restoreFailure(flavor, failure, n, n);
    pending = { failure, line: n };
  }

  if (open) return restoreCommitExpected(flavor, lines.length + 1);
  return OK;
}

function applyCommand(
  tx: SimulatedTable,
  tokens: readonly string[],
  makeRule: (args: readonly string[]) => SimulatedRule,
): Failure | undefined {
  const [cmd, chain] = tokens;
  const rest = tokens.slice(2);
  const isNumber = (s: string | undefined) => s !== undefined && /^\d+$/.test(s);
  switch (cmd) {
    case "-A":
    case "--append":
      return tx.addRule(chain!, makeRule(rest));
    case "-I":
    case "--insert":
      return isNumber(rest[0])
        ? tx.addRule(chain!, makeRule(rest.slice(1)), Number(rest[0]))
        : tx.addRule(chain!, makeRule(rest), 1);
    case "-D":
    case "--delete":
      return rest.length === 1 && isNumber(rest[0])
        ? tx.deleteRule(chain!, Number(rest[0]))
        : tx.deleteRule(chain!, makeRule(rest).spec);
    case "-N":
    case "--new-chain":
      return tx.newChain(chain!);
    case "-X":
    case "--delete-chain":
      if (chain !== undefined) return tx.deleteChain(chain);
      for (const c of tx.orderedChains()) {
        if (c.builtin) continue;
        const bad = tx.deleteChain(c.name);
        if (bad) return bad;
      }
      return undefined;
    case "-F":
    case "--flush":
      return tx.flush(chain);
    case "-P":
    case "--policy":
      return tx.setPolicy(chain!, rest[0] ?? "");
    case "-Z":
    case "--zero":
      tx.zeroCounters();
      return undefined;
    default:
      return undefined;
  }
}
