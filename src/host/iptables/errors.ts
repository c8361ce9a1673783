// Typed failures of the iptables tools. Exec never throws on an exit status; the client turns a
// failed run into one of these so callers can tell "chain missing" from "lock held" from "line 42
// of the restore input was rejected" without matching strings themselves.

import { HostToolError } from "../errors.ts";
import { firstLine as firstToolLine } from "../tool-output.ts";
import type { RestoreInput } from "./types.ts";

/** iptables exits 4 for a "resource problem": above all, the xtables lock was not acquired in time. */
export const EXIT_RESOURCE_PROBLEM = 4;

// What legacy and nft print when the chain, rule or target named does not exist.
const NOT_FOUND_MARKERS = [
  "No chain/target/match by that name",
  "No such file or directory",
  "does a matching rule exist",
  "does not exist",
];

export class IptablesError extends HostToolError {
  override readonly name: string = "IptablesError";
  constructor(
    /** Program run, e.g. "iptables-nft". */
    readonly command: string,
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
    message?: string,
  ) {
    super(message ?? `${command} ${args.join(" ")}: exit code ${exitCode}: ${firstLine(stderr)}`);
  }

  /**
   * Exit 4, a "resource problem": the xtables lock was not acquired in time (legacy), or the
   * kernel refused the change as busy (nft, e.g. deleting a chain that is still referenced).
   */
  get isResourceProblem(): boolean {
    return this.exitCode === EXIT_RESOURCE_PROBLEM;
  }

  /** The chain, rule or jump target named does not exist (upstream's IsNotFoundError). */
  isNotFound(): boolean {
    return isNotFoundMessage(this.stderr);
  }

  /** The chain to create exists already (legacy: "Chain already exists", nft: "File exists"). */
  isExists(): boolean {
    return /Chain already exists|File exists/.test(this.stderr);
  }
}

export function isNotFoundMessage(stderr: string): boolean {
  return NOT_FOUND_MARKERS.some((m) => stderr.includes(m));
}

// iptables >= 1.8.8 prints this on every run given -W; it is never the error.
const WAIT_INTERVAL_NOTICE = "Ignoring deprecated --wait-interval option.";

/** iptables' first line worth quoting: comments and the --wait-interval notice are noise. */
function firstLine(text: string): string {
  return firstToolLine(text, (l) => l.startsWith("#") || l === WAIT_INTERVAL_NOTICE);
}

/** One numbered line of the restore input (numbering starts at 1, as iptables-restore counts). */
export interface InputLine {
  readonly line: number;
  readonly text: string;
}

/** Lines of context logged on each side of the line iptables-restore rejected (upstream uses 3). */
export const RESTORE_CONTEXT_LINES = 3;

export class IptablesRestoreError extends IptablesError {
  override readonly name = "IptablesRestoreError";
  /** Input line the tool blamed; undefined when its message names none (e.g. lock timeout). */
  readonly line: number | undefined;
  /** What went wrong, without the program banner and the "Try --help" trailer. */
  readonly reason: string;
  /** The blamed line with up to RESTORE_CONTEXT_LINES lines either side. */
  readonly context: readonly InputLine[];

  constructor(
    command: string,
    args: readonly string[],
    exitCode: number,
    stderr: string,
    input: RestoreInput,
  ) {
    const line = parseRestoreErrorLine(stderr);
    const reason = restoreErrorReason(stderr);
    const where = line === undefined ? "" : `: input error on line ${line}`;
    super(command, args, exitCode, stderr, `${command}${where}: exit code ${exitCode}: ${reason}`);
    this.line = line;
    this.reason = reason;
    this.context = line === undefined ? [] : extractLines(input, line, RESTORE_CONTEXT_LINES);
  }

  /** Multi-line text for the log: the reason, then the numbered context with the blamed line marked. */
  formatForLog(): string {
    const head = `${this.command} failed (exit code ${this.exitCode})${
      this.line === undefined ? "" : ` at line ${this.line}`
    }: ${this.reason}`;
    if (this.context.length === 0) return head;
    const width = String(this.context[this.context.length - 1]!.line).length;
    const body = this.context.map(
      (l) => `${l.line === this.line ? ">" : " "} ${String(l.line).padStart(width)}: ${l.text}`,
    );
    return [head, ...body].join("\n");
  }
}

// The shapes iptables-restore uses to name a line, most specific first:
//   legacy and nft, parameter problem (exit 2):  "Error occurred at line: 5"
//   legacy, rejected command (exit 1):            "iptables-restore: line 42 failed"
//   nft, rejected command (exit 1):               "iptables-nft-restore: line 2 failed: No chain/..."
//   nft, kernel refused the batch (exit 1 or 4):  "line 3: CHAIN_DEL failed (Device or resource busy): chain B"
//   both, unterminated table (exit 1):            "iptables-restore: COMMIT expected at line 4"
const LINE_PATTERNS: readonly RegExp[] = [
  /Error occurred at line: (\d+)/,
  /\bline (\d+) failed\b/,
  /^line (\d+): /m,
  /COMMIT expected at line (\d+)/,
  /\bline:? (\d+)\b/,
];

/** The input line iptables-restore blamed, or undefined when stderr names none. */
export function parseRestoreErrorLine(stderr: string): number | undefined {
  for (const re of LINE_PATTERNS) {
    const m = re.exec(stderr);
    if (m?.[1]) {
      const n = Number(m[1]);
      if (Number.isSafeInteger(n) && n > 0) return n;
    }
  }
  return undefined;
}

/** stderr minus the noise: version banners, the "Try ... --help" hint, the line marker itself. */
export function restoreErrorReason(stderr: string): string {
  const parts: string[] = [];
  for (const raw of stderr.split("\n")) {
    let l = raw.trim();
    if (l === "" || l.startsWith("Try `") || l.startsWith("Error occurred at line")) continue;
    if (l === WAIT_INTERVAL_NOTICE) continue;
    if (l.startsWith("# Warning:")) continue;
    // "iptables-restore v1.8.9 (legacy): Couldn't load target" -> "Couldn't load target"
    l = l.replace(/^ip6?tables(?:-legacy|-nft)?-restore(?: v[\d.]+(?: \([a-z_]+\))?)?: ?/, "");
    if (l !== "") parts.push(l);
  }
  return parts.join("; ") || "(no output)";
}

/**
 * Lines [line - radius, line + radius] of `data`, numbered from 1. Scans only up to the last
 * wanted line, so a 30 MB restore input is neither split into an array nor joined to show seven
 * lines; a line may run across pieces. A line past the end (as in "COMMIT expected at line N+1")
 * yields the tail that exists.
 */
export function extractLines(data: RestoreInput, line: number, radius: number): InputLine[] {
  const first = Math.max(1, line - radius);
  const last = line + radius;
  const out: InputLine[] = [];
  let n = 1; // the line being read
  let parts: string[] = []; // its text so far, when it is wanted
  let empty = true; // whether it has no text yet
  for (const piece of typeof data === "string" ? [data] : data) {
    let start = 0;
    while (n <= last) {
      const end = piece.indexOf("\n", start);
      const to = end < 0 ? piece.length : end;
      if (to > start) empty = false;
      if (n >= first) parts.push(piece.slice(start, to));
      if (end < 0) break;
      if (n >= first) out.push({ line: n, text: parts.join("") });
      parts = [];
      empty = true;
      n++;
      start = end + 1;
    }
    if (n > last) return out;
  }
  // The text after the last newline is a line of its own when there is any (an empty input is
  // one empty line); a trailing newline ends the line before it and starts none.
  if (n >= first && (!empty || n === 1)) out.push({ line: n, text: parts.join("") });
  return out;
}
