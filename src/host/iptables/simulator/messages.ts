// How each backend words a failure, for SimulatedIptables. The texts and exit codes are the ones
// iptables 1.8.9 prints (recorded in network namespaces, see test/host/iptables/fake-vs-real),
// so the real client's error parsing is exercised by the fake exactly as by the binaries.

import type { ExecResult } from "../../../exec/types.ts";
import type { IPFamily } from "../../../util/net/family.ts";
import type { IptablesBackend } from "../types.ts";
import type { Failure } from "./tables.ts";

export interface Flavor {
  readonly backend: IptablesBackend;
  readonly version: string;
  readonly family: IPFamily;
  /** Base name the program was invoked as ("iptables-nft-restore"). */
  readonly invoked: string;
}

/** "iptables" or "ip6tables": how the command names itself in messages. */
export function programName(f: Flavor): string {
  return f.family === "IPv6" ? "ip6tables" : "iptables";
}

function mode(f: Flavor): string {
  return f.backend === "legacy" ? "legacy" : "nf_tables";
}

/** "iptables v1.8.9 (legacy)"; releases before 1.8 print no mode. */
export function versionBanner(f: Flavor, program: string): string {
  const [major = 0, minor = 0] = f.version.split(".").map(Number);
  const withMode = major > 1 || (major === 1 && minor >= 8);
  return withMode ? `${program} v${f.version} (${mode(f)})` : `${program} v${f.version}`;
}

/** Legacy restore names itself "iptables-restore" whatever it was invoked as; nft uses argv[0]. */
export function restoreProgram(f: Flavor): string {
  return f.backend === "legacy" ? `${programName(f)}-restore` : f.invoked;
}

const fail = (code: number, stderr: string): ExecResult => ({ code, stdout: "", stderr });

function tryHelp(program: string): string {
  return `Try \`${program} -h' or '${program} --help' for more information.\n`;
}

/** A parameter problem (exit 2) as the iptables command prints it. */
export function cliParameterProblem(f: Flavor, message: string): ExecResult {
  return fail(2, `${versionBanner(f, programName(f))}: ${message}\n${tryHelp(programName(f))}`);
}

/** A failed iptables command (-N, -X, -A, ...). */
export function cliFailure(f: Flavor, x: Failure): ExecResult {
  const p = programName(f);
  const legacy = f.backend === "legacy";
  switch (x.kind) {
    case "noChain":
    case "builtinChain":
      return fail(1, `${p}: No chain/target/match by that name.\n`);
    case "chainExists":
      return fail(1, `${p}: Chain already exists.\n`);
    case "noRule":
      // Legacy blames the rule when the chain exists and the chain when it does not; nft always the rule.
      return legacy && !x.chainMissing
        ? fail(1, `${p}: No chain/target/match by that name.\n`)
        : fail(1, `${p}: Bad rule (does a matching rule exist in that chain?).\n`);
    case "badTarget":
      return legacy
        ? fail(
            2,
            `${versionBanner(f, p)}: Couldn't load target \`${x.target}':No such file or directory\n\n${tryHelp(p)}`,
          )
        : fail(2, `${versionBanner(f, p)}: Chain '${x.target}' does not exist\n${tryHelp(p)}`);
    case "jumpToBuiltin":
      return legacy
        ? fail(1, `${p}: Invalid argument.\n`)
        : fail(
            4,
            `${versionBanner(f, p)}:  RULE_APPEND failed (No such file or directory): rule in chain ${x.chain}\n`,
          );
    case "chainBusy":
      if (!legacy) {
        return fail(
          4,
          `${versionBanner(f, p)}:  CHAIN_DEL failed (Device or resource busy): chain ${x.chain}\n`,
        );
      }
      return fail(1, `${p}: ${x.reason === "notEmpty" ? "Directory not empty." : "Too many links."}\n`);
    case "chainNameTooLong":
    case "chainNameClash":
      return cliParameterProblem(f, nameProblem(f, x));
    case "indexTooBig":
      return fail(1, `${p}: Index of ${x.op} too big.\n`);
  }
}

function nameProblem(f: Flavor, x: { kind: "chainNameTooLong" | "chainNameClash"; chain: string }): string {
  if (x.kind === "chainNameClash") {
    return f.backend === "legacy"
      ? `error creating chain '${x.chain}':File exists`
      : "chain name may not clash with target name";
  }
  return f.backend === "legacy"
    ? `Invalid chain name \`${x.chain}' (28 chars max)`
    : `chain name \`${x.chain}' too long (must be under 29 chars)`;
}

// nft words the exit-1 failures after the line number; legacy prints the bare line.
function nftCommandMessage(x: Failure): string | undefined {
  switch (x.kind) {
    case "noChain":
    case "builtinChain":
      return "No chain/target/match by that name.";
    case "chainExists":
      return "Chain already exists.";
    case "noRule":
      return "Bad rule (does a matching rule exist in that chain?).";
    case "indexTooBig":
      return `Index of ${x.op} too big.`;
    default:
      return undefined;
  }
}

/** A restore parameter problem (exit 2): message, then "Error occurred at line: N". */
export function restoreParameterProblem(f: Flavor, line: number, message: string, banner = true): ExecResult {
  const rp = restoreProgram(f);
  const head = banner ? `${versionBanner(f, rp)}: ${message}` : message;
  return fail(2, `${head}\nError occurred at line: ${line}\n${tryHelp(rp)}`);
}

/**
 * A failed command inside a restore. `line` is the command's line; `commitLine` the COMMIT that
 * ends its table, which is where nft reports a jump to a missing chain (legacy blames the rule).
 */
export function restoreFailure(f: Flavor, x: Failure, line: number, commitLine: number): ExecResult {
  const rp = restoreProgram(f);
  const legacy = f.backend === "legacy";
  switch (x.kind) {
    case "badTarget":
      return legacy
        ? restoreParameterProblem(f, line, `Couldn't load target \`${x.target}':No such file or directory\n`)
        : restoreParameterProblem(f, commitLine, `Chain '${x.target}' does not exist`);
    case "chainNameTooLong":
    case "chainNameClash":
      return restoreParameterProblem(f, line, nameProblem(f, x));
    case "chainBusy":
      if (!legacy) {
        return fail(
          4,
          `${versionBanner(f, rp)}: \nline ${line}: CHAIN_DEL failed (Device or resource busy): chain ${x.chain}\n`,
        );
      }
      break;
    case "jumpToBuiltin":
      if (!legacy) {
        return fail(
          4,
          `${versionBanner(f, rp)}: \nline ${line}: RULE_APPEND failed (No such file or directory): rule in chain ${x.chain}\n`,
        );
      }
      break;
  }
  const detail = legacy ? undefined : nftCommandMessage(x);
  return fail(1, `${rp}: line ${line} failed${detail ? `: ${detail}` : ""}\n`);
}

/** A line outside any *table section (both backends: "line N failed", nothing more). */
export function restoreLineFailed(f: Flavor, line: number): ExecResult {
  return fail(1, `${restoreProgram(f)}: line ${line} failed\n`);
}

export function restoreCommitExpected(f: Flavor, line: number): ExecResult {
  return fail(1, `${restoreProgram(f)}: COMMIT expected at line ${line}\n`);
}

export function restoreBadTable(f: Flavor, line: number, table: string): ExecResult {
  const rp = restoreProgram(f);
  return f.backend === "legacy"
    ? restoreParameterProblem(f, line, `${rp}: unable to initialize table '${table}'\n`)
    : restoreParameterProblem(f, line, `${rp}: line ${line} table name '${table}' invalid`);
}

export function restoreBadArgument(f: Flavor, line: number, arg: string): ExecResult {
  return restoreParameterProblem(f, line, `Bad argument \`${arg}'`, false);
}

/** The xtables lock is only taken by the legacy tools; nft ignores -w. */
export function lockHeld(waited: boolean): ExecResult {
  return fail(
    4,
    waited
      ? "Another app is currently holding the xtables lock. Stopped waiting after 5s.\n"
      : "Another app is currently holding the xtables lock. Perhaps you want to use the -w option?\n",
  );
}
