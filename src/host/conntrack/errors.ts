// Typed failure of the conntrack tool.

import { HostToolError } from "../errors.ts";

/** What conntrack prints (and exits 1 with) when a delete matched nothing: not a failure for us. */
export const NO_CONNECTION_TO_DELETE = "0 flow entries have been deleted";

export class ConntrackError extends HostToolError {
  override readonly name = "ConntrackError";
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`conntrack ${args.join(" ")}: exit code ${exitCode}: ${stderr.trim() || "(no output)"}`);
  }

  /** No entry matched: a delete found nothing, or the entry named does not exist. */
  isNotFound(): boolean {
    return this.stderr.includes(NO_CONNECTION_TO_DELETE) || /such conntrack doesn't exist/.test(this.stderr);
  }

  /** The entry to create exists already. */
  isExists(): boolean {
    return /File exists/.test(this.stderr);
  }
}
