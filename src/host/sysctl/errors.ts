// Typed failure of reading or writing a sysctl (or nf_conntrack's hashsize).

import { HostToolError } from "../errors.ts";

export class SysctlError extends HostToolError {
  override readonly name = "SysctlError";
  constructor(
    readonly sysctl: string,
    message: string,
    readonly value?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** The sysctl (or parameter file) does not exist: the failed write's errno is ENOENT. */
  isNotFound(): boolean {
    return (this.cause as NodeJS.ErrnoException | undefined)?.code === "ENOENT";
  }

  /** Sysctls are never created, so nothing can exist already. */
  isExists(): boolean {
    return false;
  }
}
