// The real IpvsClient: reads the table with one `ipvsadm -L -n --exact` and writes every change
// of a sync with one `ipvsadm --restore`, so exec calls per sync stay constant.
//
// ipvsadm --restore runs each line as a separate ipvsadm invocation: a kernel refusal ("Service
// already exists") is printed and the next line still runs, and the exit status is that of the
// LAST line only. So success means exit 0 and nothing on stderr. ipvsadm never names the line it
// refused; the client works that out from the message and its own input (see IpvsLineFailure).

import { type Exec, type ExecInput, type ExecResult, inputText } from "../../exec/types.ts";
import { type Logger, nullLogger } from "../../log/logger.ts";
import { boundFor, ReadAllowance, type ToolBound } from "../tool-bound.ts";
import { IpvsError, type IpvsLineFailure, isUnavailableMessage } from "./errors.ts";
import { parseIpvsList, restoreInput, serviceArgs } from "./format.ts";
import { type IpvsadmCommand, MAX_TIMEOUT, parseIpvsadmArgs, restoreLineWords } from "./syntax.ts";
import type { IpvsChanges, IpvsClient, IpvsService, IpvsTimeouts, VirtualServerKey } from "./types.ts";

export interface IpvsClientOptions {
  exec: Exec;
  logger?: Logger;
  /** Program to run (default "ipvsadm"). */
  command?: string;
  /** Bound on every run, for a small input or output. */
  timeoutMs?: number;
  /** Added to the bound of a restore or a whole-table listing per 1,000 lines read or expected. */
  perThousandLinesMs?: number;
}

const DEFAULT_TIMEOUT_MS = 60_000;
/**
 * `ipvsadm --restore` took 39 s for 110,000 lines and a listing of them 10.5 s in an emulated
 * guest; over ten times that leaves room for a loaded node.
 */
export const IPVSADM_PER_THOUSAND_LINES_MS = 5_000;

export const LIST_ARGS: readonly string[] = ["-L", "-n", "--exact"];
export const RESTORE_ARGS: readonly string[] = ["--restore"];

type Kind = IpvsadmCommand["kind"];

// ipvs_strerror() messages (libipvs), by the commands that can produce them.
const KERNEL_MESSAGES: readonly [RegExp, readonly Kind[]][] = [
  [/^Service already exists$/, ["add-service"]],
  [/^Scheduler (or persistence engine )?not found$/, ["add-service", "edit-service"]],
  [/^No such service$/, ["edit-service", "delete-service"]],
  [/^Service not defined$/, ["add-server", "edit-server", "delete-server"]],
  [/^Destination already exists$/, ["add-server"]],
  [/^No such destination$/, ["edit-server", "delete-server"]],
];

const MUTATING: readonly Kind[] = [
  "add-service",
  "edit-service",
  "delete-service",
  "add-server",
  "edit-server",
  "delete-server",
];

// check_ipvs_version()'s warning on very old kernels: printed on every run, never the error.
const VERSION_WARNING =
  /^(Warning: IPVS version mismatch|Kernel compiled with IPVS version|ipvsadm v\S+ +requires minimum IPVS version)/;

/** Messages of a failed restore, minus the "Try ... --help" hints and the version warning. */
function messages(stderr: string): string[] {
  return stderr
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("Try `") && !VERSION_WARNING.test(l));
}

/**
 * Matches ipvsadm's messages to the input lines that can have produced them. ipvsadm runs the
 * lines in order and prints one message per refused line, so message k belongs to a line after
 * message k-1's and before message k+1's; a message pins a line when one candidate remains.
 * The exit status is the last line's, so it tells whether that line was refused too.
 */
export function attributeRestoreFailures(
  input: string,
  stderr: string,
  exitCode?: number,
): IpvsLineFailure[] {
  const lines = input.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const parsed = lines.map((text) => {
    const words = restoreLineWords(text);
    return words.length === 0 ? undefined : parseIpvsadmArgs(words);
  });
  // A command-line error stops ipvsadm at the first line it cannot parse: nothing runs after it.
  const firstBad = parsed.findIndex((p) => p !== undefined && !p.ok);
  const lastRun = firstBad < 0 ? lines.length : firstBad + 1;
  const linesOf = (kinds: readonly Kind[]) => {
    const out: number[] = [];
    parsed.forEach((p, i) => {
      if (i + 1 <= lastRun && p?.ok && kinds.includes(p.command.kind)) out.push(i + 1);
    });
    return out;
  };
  const msgs = messages(stderr);
  let lastLine = 0;
  parsed.forEach((p, i) => {
    if (p !== undefined) lastLine = i + 1;
  });
  const candidates = msgs.map((message, k) => {
    const kernel = KERNEL_MESSAGES.find(([re]) => re.test(message));
    if (!kernel && firstBad >= 0 && !parsed[firstBad]!.ok && parsed[firstBad]!.message === message) {
      return [firstBad + 1];
    }
    const lines = linesOf(kernel ? kernel[1] : MUTATING);
    if (firstBad >= 0) return lines;
    // Without a command-line error every line ran, and the exit status is the last one's.
    if (exitCode === 0) return lines.filter((l) => l !== lastLine);
    if (exitCode === 255 && k === msgs.length - 1 && lines.includes(lastLine)) return [lastLine];
    return lines;
  });
  // Order constraints: earliest possible line front to back, latest possible back to front.
  const earliest: number[] = [];
  let floor = 0;
  for (const c of candidates) {
    floor = c.find((l) => l > floor) ?? Number.POSITIVE_INFINITY;
    earliest.push(floor);
  }
  const latest: number[] = new Array<number>(candidates.length);
  let ceiling = Number.POSITIVE_INFINITY;
  for (let k = candidates.length - 1; k >= 0; k--) {
    ceiling = [...candidates[k]!].reverse().find((l) => l < ceiling) ?? Number.NEGATIVE_INFINITY;
    latest[k] = ceiling;
  }
  return msgs.map((message, k) => {
    const narrowed = candidates[k]!.filter((l) => l >= earliest[k]! && l <= latest[k]!);
    const pool = narrowed.length > 0 ? narrowed : candidates[k]!;
    const only = pool.length === 1 ? pool[0] : undefined;
    return only !== undefined
      ? { message, line: only, text: lines[only - 1] ?? "", candidates: pool }
      : { message, candidates: pool };
  });
}

export function createIpvsClient(opts: IpvsClientOptions): IpvsClient {
  const { exec } = opts;
  const log = (opts.logger ?? nullLogger).named("ipvs");
  const command = opts.command ?? "ipvsadm";
  const bound: ToolBound = {
    baseMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    perThousandLinesMs: opts.perThousandLinesMs ?? IPVSADM_PER_THOUSAND_LINES_MS,
  };
  const reads = new ReadAllowance(bound);

  async function run(
    args: readonly string[],
    stdin?: ExecInput,
    timeoutMs = bound.baseMs,
  ): Promise<ExecResult> {
    return exec.run({ cmd: command, args, timeoutMs, ...(stdin !== undefined ? { stdin } : {}) });
  }

  function failure(args: readonly string[], res: ExecResult, what: string): IpvsError {
    const stderr = res.stderr || res.stdout;
    if (res.code === 127) {
      return new IpvsError({
        kind: "not-found",
        message: `${command} not found`,
        args,
        exitCode: 127,
        stderr,
      });
    }
    if (isUnavailableMessage(stderr)) {
      return new IpvsError({
        kind: "unavailable",
        message: `${what}: IPVS is not available in this kernel: ${stderr.trim().split("\n")[0]}`,
        args,
        exitCode: res.code,
        stderr,
      });
    }
    const why = res.timedOut ? "timed out" : (messages(stderr)[0] ?? `exit code ${res.code}`);
    return new IpvsError({ kind: "failed", message: `${what}: ${why}`, args, exitCode: res.code, stderr });
  }

  return {
    noteWritten: (lines) => reads.wrote(lines),
    async read(): Promise<IpvsService[]> {
      const ms = reads.nextMs();
      const res = await run(LIST_ARGS, undefined, ms);
      if (res.timedOut) reads.timedOut(ms);
      else reads.read(res.stdout);
      if (res.code !== 0) throw failure(LIST_ARGS, res, "listing IPVS services");
      return parseIpvsList(res.stdout);
    },

    async readServices(keys: readonly VirtualServerKey[]): Promise<IpvsService[]> {
      const one = async (key: VirtualServerKey) => {
        const args = [...LIST_ARGS, ...serviceArgs(key).split(" ")];
        const res = await run(args);
        if (res.code === 0) return parseIpvsList(res.stdout);
        // ipvsadm's answer for a virtual server the kernel does not have.
        if (res.code !== 127 && /^No such service$/m.test(res.stderr)) return [];
        throw failure(args, res, "listing an IPVS service");
      };
      return (await Promise.all(keys.map(one))).flat();
    },

    async apply(changes: IpvsChanges): Promise<void> {
      if (changes.length === 0) return;
      // Whole lines in pieces, made as ipvsadm reads them: the input never exists whole.
      const input = restoreInput(changes);
      log.v(4).info("Running ipvsadm --restore", { lines: changes.length });
      const res = await run(RESTORE_ARGS, input, boundFor(bound, changes.length));
      reads.wrote(changes.length);
      const refused = messages(res.stderr);
      if (res.code === 0 && refused.length === 0) return;
      if (res.code === 127 || isUnavailableMessage(res.stderr) || res.timedOut) {
        throw failure(RESTORE_ARGS, res, "applying IPVS changes");
      }
      const failures = attributeRestoreFailures(inputText(input), res.stderr, res.code);
      const first = failures[0];
      const where = first?.line !== undefined ? ` (line ${first.line}: ${first.text})` : "";
      const err = new IpvsError({
        kind: "restore",
        message: `ipvsadm --restore refused ${failures.length} of ${changes.length} changes: ${first?.message ?? `exit code ${res.code}`}${where}`,
        args: RESTORE_ARGS,
        exitCode: res.code,
        stderr: res.stderr,
        failures,
      });
      log.error("ipvsadm --restore failed", { err, failures: failures.length });
      throw err;
    },

    async setTimeouts(t: IpvsTimeouts): Promise<void> {
      const values = [t.tcp, t.tcpFin, t.udp];
      for (const v of values) {
        if (!Number.isInteger(v) || v < 0 || v > MAX_TIMEOUT) {
          throw new IpvsError({
            kind: "invalid",
            message: `ipvs: timeout ${v} is out of range 0-${MAX_TIMEOUT}`,
          });
        }
      }
      // 0 leaves a timeout as it is (the kernel skips zero values), so all zeros change nothing.
      if (values.every((v) => v === 0)) return;
      const args = ["--set", ...values.map(String)];
      const res = await run(args);
      if (res.code !== 0 || messages(res.stderr).length > 0)
        throw failure(args, res, "setting IPVS timeouts");
    },

    async flush(): Promise<void> {
      const args = ["-C"];
      const res = await run(args);
      if (res.code !== 0 || messages(res.stderr).length > 0) throw failure(args, res, "flushing IPVS");
    },
  };
}
