// An in-memory Exec: each host tool is a handler that answers from simulated state (the
// simulators beside each host client). Tests and --dry-run replay run on it. Calls are kept so batching requirements ("one restore per sync") can be checked.

import {
  type Exec,
  type ExecRequest,
  type ExecResult,
  type TextExecRequest,
  withTextInput,
} from "./types.ts";

/** Handlers see stdin as one text, however the caller passed it. */
export type ExecHandler = (req: TextExecRequest) => ExecResult | Promise<ExecResult>;

/** Shorthand results for handlers. */
export function ok(stdout = ""): ExecResult {
  return { code: 0, stdout, stderr: "" };
}

export function fail(code: number, stderr: string, stdout = ""): ExecResult {
  return { code, stdout, stderr };
}

function baseName(cmd: string): string {
  const slash = cmd.lastIndexOf("/");
  return slash < 0 ? cmd : cmd.slice(slash + 1);
}

export class SimulatedExec implements Exec {
  /** Every request, in order, including ones no handler answered. */
  readonly calls: TextExecRequest[] = [];
  private readonly handlers = new Map<string, ExecHandler>();

  constructor(handlers: Record<string, ExecHandler> = {}) {
    for (const [cmd, handler] of Object.entries(handlers)) this.on(cmd, handler);
  }

  /** Registers (or replaces) the handler for a program name such as "ipset". */
  on(cmd: string, handler: ExecHandler): this {
    this.handlers.set(cmd, handler);
    return this;
  }

  has(cmd: string): boolean {
    return this.handlers.has(cmd) || this.handlers.has(baseName(cmd));
  }

  /** The calls made to one program, matched by its base name ("/sbin/ipset" counts as "ipset"). */
  callsTo(cmd: string): TextExecRequest[] {
    return this.calls.filter((c) => c.cmd === cmd || baseName(c.cmd) === cmd);
  }

  async run(request: ExecRequest): Promise<ExecResult> {
    const req = withTextInput(request);
    // Copy so later mutation of the caller's arrays cannot rewrite history.
    this.calls.push({ ...req, args: [...req.args] });
    // An exact registration wins; otherwise a full path finds the handler for its base name.
    const handler = this.handlers.get(req.cmd) ?? this.handlers.get(baseName(req.cmd));
    if (!handler) return { code: 127, stdout: "", stderr: `${req.cmd}: command not found` };
    return handler(req);
  }
}
