// The real Exec: spawns host tools directly (no shell, so arguments are never re-parsed) and
// turns every way a child can end into an ExecResult instead of an exception.

import { spawn } from "node:child_process";
import { constants as osConstants } from "node:os";
import type { Readable, Writable } from "node:stream";
import { collectYoungGarbage } from "../runtime.ts";
import { TimeSlice } from "../util/time-slice.ts";
import type { Exec, ExecInput, ExecRequest, ExecResult } from "./types.ts";

export interface RealExecOptions {
  /** Extra environment for every child, on top of the parent's. LC_ALL=C always wins. */
  env?: Record<string, string>;
}

/** Exit code reported when timeoutMs elapsed (the convention of coreutils `timeout`). */
export const TIMEOUT_EXIT_CODE = 124;
/** Exit code reported when the program could not be found (the shell convention). */
export const NOT_FOUND_EXIT_CODE = 127;
/** Exit code reported when the program exists but could not be executed. */
export const CANNOT_EXECUTE_EXIT_CODE = 126;

// Collect raw chunks and decode once: repeated string concatenation of a 50 MB
// iptables-save dump is quadratic, and decoding per chunk can split multi-byte characters.
function collect(stream: Readable | null): () => string {
  const chunks: Buffer[] = [];
  let size = 0;
  stream?.on("data", (chunk: Buffer) => {
    chunks.push(chunk);
    size += chunk.length;
  });
  return () => Buffer.concat(chunks, size).toString("utf8");
}

/** Bytes of filtered-out output between two young collections (see collectLines). */
const BYTES_PER_COLLECTION = 4 << 20;

/**
 * Like collect, keeping only the lines that start with `prefix` (each with its newline). The
 * bytes are searched as they are, the kept lines' bytes copied out of each chunk together and
 * decoded once at the end: no string per line. The chunks are garbage at once, and are
 * collected every few MB: in a process with a big heap the runtime would otherwise let them pile
 * up to about that heap's size (150 MB for one 55 MB iptables-save).
 */
function collectLines(stream: Readable | null, prefix: string): () => string {
  const start = Buffer.from(prefix, "utf8");
  const needle = Buffer.from(`\n${prefix}`, "utf8");
  const kept: Buffer[] = [];
  // [from, to) of each line kept from the chunk being scanned.
  const ranges: number[] = [];
  // What the unfinished last line carries into the next chunk: its bytes (copied) while it may
  // still be kept, "skip" once it is known not to start with the prefix.
  let carry: Buffer | "skip" | undefined;
  let unread = 0;
  const keepIfStarts = (line: Buffer) => {
    if (line.length >= start.length && line.subarray(0, start.length).equals(start)) kept.push(line);
  };
  const scan = (chunk: Buffer) => {
    let pos = 0;
    if (carry !== undefined) {
      const nl = chunk.indexOf(10);
      if (nl < 0) {
        if (carry !== "skip") carry = Buffer.concat([carry, chunk]);
        return;
      }
      if (carry !== "skip") keepIfStarts(Buffer.concat([carry, chunk.subarray(0, nl + 1)]));
      carry = undefined;
      pos = nl + 1;
    }
    // `pos` is where a line starts.
    while (pos < chunk.length) {
      if (chunk.length - pos < start.length) {
        carry = Buffer.from(chunk.subarray(pos));
        return;
      }
      if (chunk.subarray(pos, pos + start.length).equals(start)) {
        const nl = chunk.indexOf(10, pos);
        if (nl < 0) {
          carry = Buffer.from(chunk.subarray(pos));
          return;
        }
        ranges.push(pos, nl + 1);
        pos = nl + 1;
        continue;
      }
      const next = chunk.indexOf(needle, pos);
      if (next >= 0) {
        pos = next + 1;
        continue;
      }
      // No kept line starts further on in this chunk; only an unfinished last one, cut before
      // its prefix was whole, still may.
      const last = chunk.lastIndexOf(10);
      if (last < pos) carry = "skip";
      else if (last + 1 === chunk.length) carry = undefined;
      else if (chunk.length - (last + 1) >= start.length) carry = "skip";
      else carry = Buffer.from(chunk.subarray(last + 1));
      return;
    }
  };
  // The kept lines of one chunk, copied into one buffer of their own.
  const copyRanges = (chunk: Buffer) => {
    if (ranges.length === 0) return;
    let size = 0;
    for (let r = 0; r < ranges.length; r += 2) size += ranges[r + 1]! - ranges[r]!;
    const out = Buffer.allocUnsafe(size);
    let at = 0;
    for (let r = 0; r < ranges.length; r += 2) at += chunk.copy(out, at, ranges[r]!, ranges[r + 1]!);
    kept.push(out);
    ranges.length = 0;
  };
  stream?.on("data", (chunk: Buffer) => {
    scan(chunk);
    copyRanges(chunk);
    unread += chunk.length;
    if (unread >= BYTES_PER_COLLECTION) {
      unread = 0;
      collectYoungGarbage();
    }
  });
  return () => {
    if (carry !== undefined && carry !== "skip") keepIfStarts(carry);
    carry = undefined;
    return Buffer.concat(kept).toString("utf8");
  };
}

/** Characters per stdin write: a big input (a 30 MB restore) is never encoded in one piece. */
export const STDIN_PIECE = 1 << 20;

// Resolves true once the pipe drained, false when it broke (the child went away).
function drained(stdin: Writable): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      stdin.off("drain", onDrain);
      stdin.off("error", onBroken);
      stdin.off("close", onBroken);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onBroken = () => done(false);
    stdin.on("drain", onDrain);
    stdin.on("error", onBroken);
    stdin.on("close", onBroken);
  });
}

// Writes the input a piece at a time, each once the pipe took the last: the child reads at its
// own pace and only one piece exists as bytes, not a UTF-8 copy of the whole input at once. The
// next piece is asked for only then, so an input made as it is read is never whole either.
// Resolves with the error of an input that failed to make its next piece (stdin is then left
// open: the caller kills the child, which must not take what it read so far for all of it).
async function writeInput(stdin: Writable, input: ExecInput): Promise<Error | undefined> {
  const pieces = (typeof input === "string" ? [input] : input)[Symbol.iterator]();
  // An input made as it is read (a big nft transaction) is computed here, piece by piece.
  const slice = new TimeSlice();
  try {
    let piece = pieces.next();
    while (!piece.done) {
      if (slice.due) await slice.pause();
      const text = piece.value;
      let from = 0;
      let more = true;
      while (from < text.length) {
        let to = Math.min(text.length, from + STDIN_PIECE);
        // A surrogate pair split between two pieces would be encoded as two replacement characters.
        const last = text.charCodeAt(to - 1);
        if (to < text.length && last >= 0xd800 && last <= 0xdbff) to--;
        more = stdin.write(text.slice(from, to), "utf8");
        from = to;
        if (!more && from < text.length && !(await drained(stdin))) return undefined;
      }
      piece = pieces.next();
      if (!more && !piece.done && !(await drained(stdin))) return undefined;
    }
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
  stdin.end();
  return undefined;
}

// A child killed by a signal has no exit code; report 128+signo like a shell does.
function signalExitCode(signal: NodeJS.Signals | null): number {
  if (!signal) return 1;
  const signo = (osConstants.signals as Record<string, number | undefined>)[signal];
  return 128 + (signo ?? 0);
}

function spawnFailure(req: ExecRequest, err: NodeJS.ErrnoException): ExecResult {
  if (err.code === "ENOENT") {
    return { code: NOT_FOUND_EXIT_CODE, stdout: "", stderr: `${req.cmd}: command not found` };
  }
  if (err.code === "EACCES") {
    return { code: CANNOT_EXECUTE_EXIT_CODE, stdout: "", stderr: `${req.cmd}: permission denied` };
  }
  return { code: CANNOT_EXECUTE_EXIT_CODE, stdout: "", stderr: `${req.cmd}: ${err.message}` };
}

export function createRealExec(opts: RealExecOptions = {}): Exec {
  const env = { ...process.env, ...opts.env, LC_ALL: "C" };

  return {
    run(req: ExecRequest): Promise<ExecResult> {
      const cmd = req.cmd;
      return new Promise((resolve) => {
        const hasStdin = req.stdin !== undefined;
        let child: ReturnType<typeof spawn>;
        try {
          child = spawn(req.cmd, [...req.args], {
            env,
            stdio: [hasStdin ? "pipe" : "ignore", "pipe", "pipe"],
          });
        } catch (err) {
          // Invalid arguments (e.g. a NUL byte) throw synchronously; still answer with a result.
          resolve(spawnFailure(req, err as NodeJS.ErrnoException));
          return;
        }
        const prefix = req.keepStdoutLinesStartingWith;
        const stdout = prefix === undefined ? collect(child.stdout) : collectLines(child.stdout, prefix);
        const stderr = collect(child.stderr);

        let settled = false;
        let timedOut = false;
        let inputFailure: string | undefined;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const finish = (result: ExecResult) => {
          if (settled) return;
          settled = true;
          if (timer) clearTimeout(timer);
          resolve(result);
        };

        child.on("error", (err: NodeJS.ErrnoException) => {
          // After a successful spawn, errors (e.g. a failed kill) are not the child's result.
          if (child.pid === undefined) finish(spawnFailure(req, err));
        });

        if (req.timeoutMs !== undefined) {
          timer = setTimeout(() => {
            timedOut = true;
            child.kill("SIGKILL");
          }, req.timeoutMs);
        }

        child.on("exit", () => {
          // A grandchild may still hold our pipes open after a timeout kill; stop waiting on it.
          if (timedOut) {
            child.stdout?.destroy();
            child.stderr?.destroy();
          }
        });

        child.on("close", (code, signal) => {
          if (child.pid === undefined) return; // spawn failed; the "error" handler answered
          if (timedOut) {
            finish({ code: TIMEOUT_EXIT_CODE, stdout: stdout(), stderr: stderr(), timedOut: true });
          } else if (inputFailure !== undefined) {
            finish({
              code: code || signalExitCode(signal),
              stdout: stdout(),
              stderr: inputFailure + stderr(),
            });
          } else {
            finish({ code: code ?? signalExitCode(signal), stdout: stdout(), stderr: stderr() });
          }
        });

        if (hasStdin && child.stdin) {
          // A child may exit without reading its input (EPIPE); its exit status tells the story.
          child.stdin.on("error", () => {});
          void writeInput(child.stdin, req.stdin!).then((failed) => {
            if (!failed) return;
            inputFailure = `${cmd}: its input could not be made (${failed.message}); killed before reading the rest\n`;
            child.kill("SIGKILL");
          });
        }
      });
    },
  };
}
