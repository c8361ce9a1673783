// Typed failure of the nfacct tool.

import { HostToolError } from "../errors.ts";

// The kernel answers EBUSY to adding a name that exists (nfacct prints strerror).
export const NFACCT_EXISTS = /Device or resource busy|File exists/;
export const NFACCT_MISSING = /No such file or directory/;

export class NfacctError extends HostToolError {
  override readonly name = "NfacctError";
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`nfacct ${args.join(" ")}: exit code ${exitCode}: ${stderr.trim() || "(no output)"}`);
  }

  /** No counter by the name given. */
  isNotFound(): boolean {
    return NFACCT_MISSING.test(this.stderr);
  }

  /** A counter by the name given exists already. */
  isExists(): boolean {
    return NFACCT_EXISTS.test(this.stderr);
  }
}
