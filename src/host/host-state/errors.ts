// Typed failure of a HostState document that does not validate.

import { HostToolError } from "../errors.ts";

export class HostStateError extends HostToolError {
  constructor(readonly issues: { path: string; message: string }[]) {
    super(`invalid HostState: ${issues.map((i) => `${i.path || "(document)"}: ${i.message}`).join("; ")}`);
    this.name = "HostStateError";
  }

  /** A document that does not validate names no missing object. */
  isNotFound(): boolean {
    return false;
  }

  isExists(): boolean {
    return false;
  }
}
