// Typed failures of the ip tool. The client decides what an exit means ("File exists" on a
// link add is success for ensureDummyDevice) and raises a NetlinkError for the rest.

import { HostToolError } from "../errors.ts";
import { firstLine } from "../tool-output.ts";

/** One line of an `ip -batch` input that ip refused ("Command failed -:N"). */
export interface BatchLineFailure {
  readonly line: number;
  readonly text: string;
  /** What ip printed for it ("Error: ipv4: Address not found."). */
  readonly message: string;
}

export class NetlinkError extends HostToolError {
  override readonly name = "NetlinkError";
  /** The first refused batch line (a field: JavaScriptCore sets an own "line" on every Error). */
  readonly line: number | undefined;

  constructor(
    readonly command: string,
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
    /** For batches: every refused line. */
    readonly failures: readonly BatchLineFailure[] = [],
    message?: string,
  ) {
    super(message ?? `${command} ${args.join(" ")}: exit code ${exitCode}: ${firstLine(stderr)}`);
    this.line = failures[0]?.line;
  }

  /** The device named does not exist. */
  isNotFound(): boolean {
    return /does not exist|Cannot find device/.test(this.stderr);
  }

  /** The link or address to add exists already ("RTNETLINK answers: File exists"). */
  isExists(): boolean {
    return /File exists/.test(this.stderr);
  }

  /** The kernel cannot create this kind of link (e.g. no dummy module). */
  get isUnsupportedType(): boolean {
    return /Unknown device type/.test(this.stderr);
  }
}

/**
 * Pairs ip's batch messages with the lines they belong to: ip prints the error, then
 * "Command failed -:N" (N counts input lines from 1).
 */
export function parseBatchFailures(stderr: string, input: string): BatchLineFailure[] {
  const inputLines = input.split("\n");
  const out: BatchLineFailure[] = [];
  let pending: string[] = [];
  for (const raw of stderr.split("\n")) {
    const l = raw.trim();
    if (l === "") continue;
    const m = /^Command failed (?:\S*):(\d+)$/.exec(l);
    if (m) {
      const line = Number(m[1]);
      out.push({ line, text: inputLines[line - 1] ?? "", message: pending.join("; ") || "(no message)" });
      pending = [];
    } else {
      pending.push(l);
    }
  }
  return out;
}
