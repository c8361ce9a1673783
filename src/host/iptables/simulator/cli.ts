// The iptables command forms SimulatedIptables answers: -N -X -F -S -L -C -A -I -D -P -Z, with
// -t TABLE anywhere and the xtables lock flags (-w [SECONDS], -W USECONDS) accepted.

import type { ExecResult } from "../../../exec/types.ts";
import { formatRuleArgs, ruleTarget } from "../rule-args.ts";
import type { Table } from "../types.ts";
import {
  cliFailure,
  cliParameterProblem,
  type Flavor,
  lockHeld,
  programName,
  versionBanner,
} from "./messages.ts";
import { type Failure, isTable, type SimulatedChain, type SimulatedTable } from "./tables.ts";

export interface CliState {
  readonly flavor: Flavor;
  /** The table, created on first use as the kernel does. */
  table(name: Table): SimulatedTable;
  /** Whether another process holds the xtables lock (honoured by legacy only). */
  readonly lockHeld: boolean;
}

interface Parsed {
  table: string;
  waited: boolean;
  command: string | undefined;
  rest: string[];
}

const COMMAND_ALIASES: Readonly<Record<string, string>> = {
  "--new-chain": "-N",
  "--delete-chain": "-X",
  "--flush": "-F",
  "--list-rules": "-S",
  "--list": "-L",
  "--check": "-C",
  "--append": "-A",
  "--insert": "-I",
  "--delete": "-D",
  "--policy": "-P",
  "--zero": "-Z",
  "--version": "-V",
};
const COMMANDS = new Set(["-N", "-X", "-F", "-S", "-L", "-C", "-A", "-I", "-D", "-P", "-Z", "-V"]);
const READ_ONLY = new Set(["-S", "-L", "-C", "-V"]);
// Output flags that only matter to listings.
const LIST_FLAGS = new Set(["-n", "--numeric", "-v", "--verbose", "-x", "--exact", "--line-numbers"]);

function parse(args: readonly string[]): Parsed {
  const out: Parsed = { table: "filter", waited: false, command: undefined, rest: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "-w" || a === "--wait") {
      out.waited = true;
      if (/^\d+$/.test(args[i + 1] ?? "")) i++;
    } else if (a === "-W" || a === "--wait-interval") i++;
    else if (a === "-t" || a === "--table") out.table = args[++i] ?? "";
    else if (out.command === undefined && (COMMANDS.has(a) || COMMAND_ALIASES[a])) {
      out.command = COMMAND_ALIASES[a] ?? a;
    } else if (!(LIST_FLAGS.has(a) && (out.command === "-L" || out.command === "-S"))) out.rest.push(a);
  }
  return out;
}

const ok = (stdout = ""): ExecResult => ({ code: 0, stdout, stderr: "" });

function ruleLine(chain: string, spec: string): string {
  return spec === "" ? `-A ${chain}` : `-A ${chain} ${spec}`;
}

function listRules(t: SimulatedTable, only?: SimulatedChain): string {
  const chains = only ? [only] : t.orderedChains();
  const heads = chains.map((c) => (c.builtin ? `-P ${c.name} ${c.policy}` : `-N ${c.name}`));
  const rules = chains.flatMap((c) => c.rules.map((r) => ruleLine(c.name, r.spec)));
  return [...heads, ...rules].map((l) => `${l}\n`).join("");
}

// An approximation of `iptables -L -n`: the header lines are exact, the columns are not.
function listTable(t: SimulatedTable, only?: SimulatedChain): string {
  const blocks = (only ? [only] : t.orderedChains()).map((c) => {
    const head = c.builtin
      ? `Chain ${c.name} (policy ${c.policy})`
      : `Chain ${c.name} (${t.references(c.name)} references)`;
    const cols = `${"target".padEnd(10)} ${"prot".padEnd(4)} opt ${"source".padEnd(20)} ${"destination".padEnd(20)}`;
    const rows = c.rules.map((r) => `${(r.target ?? "").padEnd(10)} all  --  ${r.spec}`);
    return [head, cols, ...rows].join("\n");
  });
  return `${blocks.join("\n\n")}\n`;
}

export function runIptablesCli(state: CliState, args: readonly string[]): ExecResult {
  const f = state.flavor;
  const p = parse(args);
  if (p.command === "-V") return ok(`${bannerFor(f)}\n`);
  if (p.command === undefined) return cliParameterProblem(f, "no command specified");
  if (!isTable(p.table)) {
    const prog = programName(f);
    return {
      code: 3,
      stdout: "",
      stderr: `${bannerFor(f)}: can't initialize ${prog} table \`${p.table}': Table does not exist (do you need to insmod?)\nPerhaps ${prog} or your kernel needs to be upgraded.\n`,
    };
  }
  if (state.lockHeld && f.backend === "legacy" && !READ_ONLY.has(p.command)) return lockHeld(p.waited);

  const t = state.table(p.table);
  const [chain, ...rest] = p.rest;
  const needChain = () => cliParameterProblem(f, `option "${p.command}" requires an argument`);
  const done = (failure: ReturnType<SimulatedTable["flush"]>) => (failure ? cliFailure(f, failure) : ok());

  switch (p.command) {
    case "-N":
      return chain === undefined ? needChain() : done(t.newChain(chain));
    case "-X":
      if (chain !== undefined) return done(t.deleteChain(chain));
      for (const c of t.orderedChains()) {
        if (c.builtin) continue;
        const bad = t.deleteChain(c.name);
        if (bad) return cliFailure(f, bad);
      }
      return ok();
    case "-F":
      return done(t.flush(chain));
    case "-Z":
      t.zeroCounters();
      return ok();
    case "-P":
      return chain === undefined ? needChain() : done(t.setPolicy(chain, rest[0] ?? ""));
    case "-S":
    case "-L": {
      const only = chain === undefined ? undefined : t.chains.get(chain);
      if (chain !== undefined && !only) return cliFailure(f, { kind: "noChain", chain });
      return ok(p.command === "-S" ? listRules(t, only) : listTable(t, only));
    }
    case "-C": {
      if (chain === undefined) return needChain();
      const unknownTarget = checkedTarget(t, chain, rest);
      if (unknownTarget) return cliFailure(f, unknownTarget);
      const spec = formatRuleArgs(rest, f.family);
      if (t.findRule(chain, spec) >= 0) return ok();
      return cliFailure(f, { kind: "noRule", chain, chainMissing: !t.chains.has(chain) });
    }
    case "-A":
    case "-I": {
      if (chain === undefined) return needChain();
      const numbered = p.command === "-I" && /^\d+$/.test(rest[0] ?? "");
      const ruleArgs = numbered ? rest.slice(1) : rest;
      const rule = {
        spec: formatRuleArgs(ruleArgs, f.family),
        target: ruleTarget(ruleArgs),
        packets: 0,
        bytes: 0,
      };
      // The command line checks the target before it looks for the chain.
      const badTarget = t.checkTarget(chain, rule.target);
      if (badTarget) return cliFailure(f, badTarget);
      const pos = p.command === "-A" ? undefined : numbered ? Number(rest[0]) : 1;
      return done(t.addRule(chain, rule, pos));
    }
    case "-D": {
      if (chain === undefined) return needChain();
      if (rest.length === 1 && /^\d+$/.test(rest[0]!)) return done(t.deleteRule(chain, Number(rest[0])));
      const unknownTarget = checkedTarget(t, chain, rest);
      if (unknownTarget) return cliFailure(f, unknownTarget);
      return done(t.deleteRule(chain, formatRuleArgs(rest, f.family)));
    }
    default:
      return cliParameterProblem(f, `unknown command "${p.command}"`);
  }
}

// -C and -D load the rule's target before looking for the rule: an unknown one is exit 2.
function checkedTarget(t: SimulatedTable, chain: string, args: readonly string[]): Failure | undefined {
  const bad = t.checkTarget(chain, ruleTarget(args));
  return bad?.kind === "badTarget" ? bad : undefined;
}

function bannerFor(f: Flavor): string {
  return versionBanner(f, programName(f));
}
