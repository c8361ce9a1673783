// Typed failure of reading the kernel's facts.

import { HostToolError } from "../errors.ts";

export class KernelError extends HostToolError {
  override readonly name = "KernelError";

  /** Raised only when the kernel's release cannot be read: no object was named. */
  isNotFound(): boolean {
    return false;
  }

  isExists(): boolean {
    return false;
  }
}
