// The one boundary through which kube-proxy-ts touches host tools. Everything that spawns a
// process goes through an Exec; typed host clients interpret exit codes and output.

/**
 * What a child reads on stdin: one text, or pieces written one after another, each taken from
 * the iterable only once the child has read the ones before (so a big input, such as a 60 MB
 * nft transaction, never has to exist as one string, nor all at once). An iterable that throws
 * instead of yielding its next piece ends the run: the child is killed before it could read a
 * cut-off input as a whole one.
 */
export type ExecInput = string | Iterable<string>;

export interface ExecRequest {
  /** Program name or path, e.g. "iptables-restore". */
  readonly cmd: string;
  readonly args: readonly string[];
  /** Written to the child's stdin, then stdin is closed. */
  readonly stdin?: ExecInput;
  /** Kill the child after this many milliseconds; the result then has timedOut = true. */
  readonly timeoutMs?: number;
  /**
   * Keep only the stdout lines that start with this text, dropping the others as they arrive:
   * a caller that needs a few lines of a big output (the chain names of a 50 MB iptables-save)
   * never holds it whole. An Exec may ignore it and return every line, so the caller still
   * picks its lines out of what it gets.
   */
  readonly keepStdoutLinesStartingWith?: string;
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

/** A request whose stdin is one text: what fakes and the dry-run recorder read. */
export type TextExecRequest = Omit<ExecRequest, "stdin"> & { readonly stdin?: string };

/** The whole input as one text (an iterable of pieces is read to its end). */
export function inputText(input: ExecInput): string {
  return typeof input === "string" ? input : [...input].join("");
}

/** The whole input, when reading it again is possible: a one-time iterable was read by the run. */
export function rereadableInputText(input: ExecInput): string | undefined {
  if (typeof input === "string") return input;
  return Array.isArray(input) ? input.join("") : undefined;
}

export function withTextInput(req: ExecRequest): TextExecRequest {
  if (req.stdin === undefined || typeof req.stdin === "string") return req as TextExecRequest;
  return { ...req, stdin: inputText(req.stdin) };
}
