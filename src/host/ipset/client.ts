// Typed client for the ipset tool: the version check of ipvs mode's prerequisites, reading every
// set with one `ipset save`, and writing a whole sync with one `ipset restore -exist`. The script
// lines are rendered by lines.ts, entries are understood by entries.ts, and save-parser.ts reads
// `ipset save`.

import { type Exec, type ExecInput, type ExecResult, inputText } from "../../exec/types.ts";
import { type Logger, nullLogger } from "../../log/logger.ts";
import { VersionParseError, versionAtLeast } from "../../util/version.ts";
import { boundFor, countNewlines, ReadAllowance, type ToolBound } from "../tool-bound.ts";
import { IpsetError } from "./errors.ts";
import { setName } from "./restore-text.ts";
import { parseIpsetSave } from "./save-parser.ts";
import { type IpsetClient, MIN_IPSET_VERSION } from "./types.ts";

/** "ipset v7.17, protocol version: 7" -> "7.17"; undefined when no version is present. */
export function parseIpsetVersion(output: string): string | undefined {
  return /\bv(\d+\.\d+(?:\.\d+)?)\b/.exec(output)?.[1];
}

export function ipsetVersionSupported(version: string): boolean {
  try {
    return versionAtLeast(version, MIN_IPSET_VERSION);
  } catch (err) {
    if (err instanceof VersionParseError) return false;
    throw err;
  }
}

export interface IpsetClientOptions {
  exec: Exec;
  logger?: Logger;
  /** Bound on every run except the version probe, for a small input or output. */
  timeoutMs?: number;
  /** Added to the bound of a restore or a save per 1,000 lines read or expected. */
  perThousandLinesMs?: number;
}

const VERSION_TIMEOUT_MS = 10_000;
const DEFAULT_TIMEOUT_MS = 60_000;
/**
 * `ipset restore` took 26 s for 20,000 lines and `ipset save` 24 s for as many in an emulated
 * guest; some ten times that leaves room for a loaded node.
 */
export const IPSET_PER_THOUSAND_LINES_MS = 15_000;

export function createIpsetClient({
  exec,
  logger,
  timeoutMs,
  perThousandLinesMs,
}: IpsetClientOptions): IpsetClient {
  const log = (logger ?? nullLogger).named("ipset");
  const bound: ToolBound = {
    baseMs: timeoutMs ?? DEFAULT_TIMEOUT_MS,
    perThousandLinesMs: perThousandLinesMs ?? IPSET_PER_THOUSAND_LINES_MS,
  };
  const reads = new ReadAllowance(bound);
  const run = (args: string[], ms: number, stdin?: ExecInput): Promise<ExecResult> =>
    exec.run({ cmd: "ipset", args, timeoutMs: ms, ...(stdin !== undefined ? { stdin } : {}) });

  return {
    async version() {
      const res = await exec.run({ cmd: "ipset", args: ["--version"], timeoutMs: VERSION_TIMEOUT_MS });
      if (res.code === 127) return { ok: false, detail: "ipset not found" };
      if (res.code !== 0) {
        const why = res.timedOut ? "timed out" : res.stderr.trim() || `exit code ${res.code}`;
        return { ok: false, detail: `ipset --version failed: ${why}` };
      }
      const version = parseIpsetVersion(res.stdout);
      if (!version) {
        return { ok: false, detail: `cannot parse ipset version from ${JSON.stringify(res.stdout.trim())}` };
      }
      return { ok: true, version };
    },

    async listSets() {
      const args = ["save"];
      const ms = reads.nextMs();
      const res = await run(args, ms);
      if (res.timedOut) reads.timedOut(ms);
      else reads.read(res.stdout);
      if (res.code !== 0) throw new IpsetError("ipset", args, res.code, res.stderr || res.stdout);
      return parseIpsetSave(res.stdout);
    },

    async restore(script: ExecInput, size?: { readonly lines?: number }) {
      let input: ExecInput;
      if (typeof script !== "string") {
        if (Array.isArray(script) && script.length === 0) return;
        input = script;
      } else {
        if (script.trim() === "") return;
        input = script.endsWith("\n") ? script : `${script}\n`;
      }
      const args = ["restore", "-exist"];
      // A script made as it is read is not read an extra time to be counted: its maker says.
      const lines =
        typeof input === "string" || Array.isArray(input) ? countNewlines(input) : (size?.lines ?? 0);
      log.v(4).info("Running ipset restore", { lines });
      const res = await run(args, boundFor(bound, lines), input);
      // Even a failed restore has mostly been applied (see IpsetClient.restore).
      reads.wrote(lines);
      if (res.code === 0) return;
      const err = new IpsetError("ipset", args, res.code, res.stderr || res.stdout, inputText(input));
      log.error("ipset restore failed", { err, line: err.line });
      throw err;
    },

    async destroy(name: string) {
      const args = ["destroy", setName(name)];
      const res = await run(args, bound.baseMs);
      if (res.code === 0) return;
      const err = new IpsetError("ipset", args, res.code, res.stderr || res.stdout);
      if (/does not exist/.test(err.reason)) return;
      throw err;
    },
  };
}
