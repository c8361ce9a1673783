// The one boundary through which kube-proxy-ts touches host tools. Everything that spawns a
// process goes through an Exec; typed host clients interpret exit codes and output.

export interface ExecRequest {
  /** Program name or path, e.g. "iptables-restore". */
  readonly cmd: string;
  readonly args: readonly string[];
  /** Written to the child's stdin, then stdin is closed. */
  readonly stdin?: string;
  /** Kill the child after this many milliseconds; the result then has timedOut = true. */
  readonly timeoutMs?: number;
}

export interface ExecResult {
  /** Exit code; 127 when the program could not be started (not found), 124 on timeout. */
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut?: boolean;
}

export interface Exec {
  /** Never rejects because of the child's exit status; callers decide what an exit means. */
  run(req: ExecRequest): Promise<ExecResult>;
}
