// Under --dry-run a host tool that is not installed must not empty the plan: a dry run always
// prints the full plan. The missing tool is reported (a failed check), and its read-only
// queries are answered as the tool would answer on a host where it is installed and its tables
// are empty. With iptables missing, that means both IP families are planned, as on a host whose
// iptables can serve both. Version queries are not invented: they keep failing, so the plan
// assumes the oldest behaviour (no --random-fully, no lock flags), and checks such as
// "ipset version" keep failing too.

import { isReadOnlyCommand } from "../exec/dry-run.ts";
import { NOT_FOUND_EXIT_CODE } from "../exec/runner.ts";
import type { Exec, ExecRequest, ExecResult } from "../exec/types.ts";
import type { Check } from "../proxy/check.ts";

const ok = (stdout = ""): ExecResult => ({ code: 0, stdout, stderr: "" });
const fail = (code: number, stderr: string): ExecResult => ({ code, stdout: "", stderr });

const BUILTIN_CHAINS: Readonly<Record<string, readonly string[]>> = {
  filter: ["INPUT", "FORWARD", "OUTPUT"],
  nat: ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"],
  mangle: ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"],
  raw: ["PREROUTING", "OUTPUT"],
};

function baseName(cmd: string): string {
  return cmd.slice(cmd.lastIndexOf("/") + 1);
}

const isVersionQuery = (args: readonly string[]) =>
  args.some((a) => a === "--version" || a === "-V" || a === "-v" || a === "version");

/** `iptables -S CHAIN` / `-C CHAIN ...` on a host with empty tables: only built-in chains exist. */
function emptyIptables(tool: string, args: readonly string[]): ExecResult | undefined {
  const t = args.indexOf("-t");
  const table = (t >= 0 ? args[t + 1] : undefined) ?? "filter";
  const builtins = BUILTIN_CHAINS[table] ?? [];
  const noChain = fail(1, `${tool}: No chain/target/match by that name.\n`);
  const s = args.indexOf("-S");
  if (s >= 0) {
    const chain = args[s + 1];
    if (chain === undefined || chain.startsWith("-"))
      return ok(builtins.map((c) => `-P ${c} ACCEPT`).join("\n"));
    return builtins.includes(chain) ? ok(`-P ${chain} ACCEPT\n`) : noChain;
  }
  if (args.includes("-C")) return noChain;
  return undefined;
}

function emptyAnswer(req: ExecRequest): ExecResult | undefined {
  const tool = baseName(req.cmd);
  const args = req.args;
  if (isVersionQuery(args)) return undefined;
  if (/^ip6?tables(-legacy|-nft)?-save$/.test(tool)) return ok();
  if (/^ip6?tables(-legacy|-nft)?$/.test(tool)) return emptyIptables(tool, args);
  switch (tool) {
    case "ipset":
      if (args[0] === "save" || (args[0] === "list" && args.includes("-n"))) return ok();
      if (args[0] === "list") return fail(1, `ipset v7: The set with the given name does not exist\n`);
      return undefined;
    case "ipvsadm":
      return ok();
    case "ip": {
      if (args.includes("addr") && !args.includes("dev")) return ok();
      const dev = args.indexOf("dev");
      const device = dev >= 0 ? args[dev + 1] : args[args.indexOf("show") + 1];
      return fail(1, `Device "${device ?? ""}" does not exist.\n`);
    }
    case "nft":
      return ok();
    default:
      return undefined;
  }
}

export interface MissingToolsExec extends Exec {
  /** Programs that were asked for and are not installed, in first-use order. */
  readonly missing: readonly string[];
}

export function missingToolsAsEmpty(inner: Exec): MissingToolsExec {
  const missing: string[] = [];
  return {
    missing,
    async run(req) {
      const res = await inner.run(req);
      if (res.code !== NOT_FOUND_EXIT_CODE || !isReadOnlyCommand(req)) return res;
      const tool = baseName(req.cmd);
      if (!missing.includes(tool)) missing.push(tool);
      return emptyAnswer(req) ?? res;
    },
  };
}

/** The dry-run check that names every missing tool; undefined when none was missing. */
export function missingToolsCheck(missing: readonly string[]): Check | undefined {
  if (missing.length === 0) return undefined;
  return {
    name: "host tools",
    ok: false,
    detail: `not installed: ${missing.join(", ")}; the plan treats their tables as empty`,
  };
}
