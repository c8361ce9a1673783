// Typed failure of the nft tool.

import { HostToolError } from "../errors.ts";
import { firstLine } from "../tool-output.ts";

export class NftError extends HostToolError {
  override readonly name = "NftError";
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`nft ${args.join(" ")}: exit code ${exitCode}: ${firstLine(stderr)}`);
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
