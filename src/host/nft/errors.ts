// Typed failure of the nft tool. When nft read a script (`nft -f -`) it blames input lines as
// "/dev/stdin:LINE:COL-COL: Error: MESSAGE", then the line and a caret row; the error keeps every
// blamed line so a log names the operation that failed, not just the exit code.

import { HostToolError } from "../errors.ts";
import { firstLine } from "../tool-output.ts";

/** One error nft reported, with the input line it blamed when it named one. */
export interface NftErrorEntry {
  /** 1-based input line. */
  readonly line?: number;
  /** That line's text (from the input, or as nft echoed it). */
  readonly lineText?: string;
  /** nft's message without the location and "Error: " prefix. */
  readonly message: string;
}

const LOCATED = /^(?:\S+?):(\d+):(\d+)(?:-(\d+))?: Error: (.*)$/;
const UNLOCATED = /^(?:[\w ]+: )?Error: (.*)$/;

/** Reads nft's stderr into its errors; `input` supplies the exact text of blamed lines. */
export function parseNftErrors(stderr: string, input?: string): NftErrorEntry[] {
  const inputLines = input?.split("\n");
  const lines = stderr.split("\n");
  const out: NftErrorEntry[] = [];
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!.trimEnd();
    const located = LOCATED.exec(text);
    if (located) {
      const line = Number(located[1]);
      const echoed = lines[i + 1];
      const lineText = inputLines?.[line - 1] ?? echoed;
      out.push({ line, message: located[4]!, ...(lineText !== undefined ? { lineText } : {}) });
      continue;
    }
    const plain = UNLOCATED.exec(text);
    if (plain) out.push({ message: plain[1]! });
  }
  return out;
}

/** What the runner reports for a child killed by SIGSEGV (128 + 11, as a shell does). */
export const SEGFAULT_EXIT = 139;
/**
 * nft before 1.1.4 (bookworm's 1.0.6 among them) crashes reading a set that nft 1.1.2 or later
 * wrote: any transaction or listing walks every set of the family, so one such set anywhere
 * stops every sync (kubernetes#136786). Said in the error, since nft itself prints nothing.
 */
export const SEGFAULT_REASON =
  "nft crashed (SIGSEGV); nft older than 1.1.4 crashes on sets written by nft 1.1.2 or later, so another program on this node using a newer nft is the likely cause; the rules in the kernel stay as they are and the sync is retried";

export class NftError extends HostToolError {
  override readonly name = "NftError";
  /** Every error nft reported, in its order (empty when it printed none we could read). */
  readonly errors: readonly NftErrorEntry[];
  /** The first blamed input line, when nft named one. */
  readonly line: number | undefined;
  /** That line's text. */
  readonly lineText: string | undefined;
  /** The first error's message ("Could not process rule: No such file or directory"). */
  readonly reason: string;

  constructor(
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
    input?: string,
  ) {
    const errors = parseNftErrors(stderr, input);
    const first = errors.find((e) => e.line !== undefined) ?? errors[0];
    const reason = first?.message ?? (exitCode === SEGFAULT_EXIT ? SEGFAULT_REASON : firstLine(stderr));
    const where =
      first?.line === undefined
        ? ""
        : ` at line ${first.line}${first.lineText ? ` (${first.lineText.trim()})` : ""}`;
    const more =
      errors.length > 1 ? ` (and ${errors.length - 1} more error${errors.length > 2 ? "s" : ""})` : "";
    super(`nft ${args.join(" ")}${where}: exit code ${exitCode}: ${reason}${more}`);
    this.errors = errors;
    this.line = first?.line;
    this.lineText = first?.lineText;
    this.reason = reason;
  }

  /** The table (or other object) named does not exist. */
  isNotFound(): boolean {
    return /No such file or directory/.test(this.stderr);
  }

  /** The table (or other object) to create exists already. */
  isExists(): boolean {
    return /File exists/.test(this.stderr);
  }

  /** The kernel has no nf_tables: there can be nothing to list or delete. */
  get isUnsupported(): boolean {
    return /Operation not supported|Protocol not supported/.test(this.stderr);
  }
}
