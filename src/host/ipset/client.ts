// Typed client for the ipset tool: the version check of ipvs mode's prerequisites, reading every
// set with one `ipset save`, and writing a whole sync with one `ipset restore -exist`. The script
// lines are rendered by lines.ts, entries are understood by entries.ts, and save-parser.ts reads
// `ipset save`.

import { type Exec, type ExecInput, type ExecResult, inputText } from "../../exec/types.ts";
import { type Logger, nullLogger } from "../../log/logger.ts";
import { VersionParseError, versionAtLeast } from "../../util/version.ts";
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

/** Newlines in the input, counted without splitting it. */
function countLines(input: string | readonly string[]): number {
  let n = 0;
  for (const piece of typeof input === "string" ? [input] : input) {
    for (let at = piece.indexOf("\n"); at >= 0; at = piece.indexOf("\n", at + 1)) n++;
  }
  return n;
}

export interface IpsetClientOptions {
  exec: Exec;
  logger?: Logger;
  /** Bound on every run except the version probe. */
  timeoutMs?: number;
}

const VERSION_TIMEOUT_MS = 10_000;
const DEFAULT_TIMEOUT_MS = 60_000;

export function createIpsetClient({ exec, logger, timeoutMs }: IpsetClientOptions): IpsetClient {
  const log = (logger ?? nullLogger).named("ipset");
  const bound = timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const run = (args: string[], stdin?: ExecInput): Promise<ExecResult> =>
    exec.run({ cmd: "ipset", args, timeoutMs: bound, ...(stdin !== undefined ? { stdin } : {}) });

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
      const res = await run(args);
      if (res.code !== 0) throw new IpsetError("ipset", args, res.code, res.stderr || res.stdout);
      return parseIpsetSave(res.stdout);
    },

    async restore(script: ExecInput) {
      let input: ExecInput;
      if (typeof script !== "string") {
        if (Array.isArray(script) && script.length === 0) return;
        input = script;
      } else {
        if (script.trim() === "") return;
        input = script.endsWith("\n") ? script : `${script}\n`;
      }
      const args = ["restore", "-exist"];
      // A script made as it is read is not read an extra time to be counted.
      const lines = typeof input === "string" || Array.isArray(input) ? countLines(input) : undefined;
      log.v(4).info("Running ipset restore", { lines });
      const res = await run(args, input);
      if (res.code === 0) return;
      const err = new IpsetError("ipset", args, res.code, res.stderr || res.stdout, inputText(input));
      log.error("ipset restore failed", { err, line: err.line });
      throw err;
    },

    async destroy(name: string) {
      const args = ["destroy", setName(name)];
      const res = await run(args);
      if (res.code === 0) return;
      const err = new IpsetError("ipset", args, res.code, res.stderr || res.stdout);
      if (/does not exist/.test(err.reason)) return;
      throw err;
    },
  };
}
