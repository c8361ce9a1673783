// How long a host tool may run before it is taken for hung and killed. A fixed bound kills a
// big but healthy run: `ipset restore` of 20,000 lines or `ipvsadm --restore` of 110,000 take
// tens of seconds on a slow node, longer under load. So a bound is a base (start-up, locks, a
// small input) plus an allowance per 1,000 lines the tool reads or is expected to print.
//
// A tool's output cannot be counted before it runs: a reading client expects about as many
// lines as its last read printed plus what it wrote since (ReadAllowance). A read that still
// outlasts its bound (the first read of a big table left by an earlier run) doubles the next
// one's, so retries get through where the same bound would fail every time.

export interface ToolBound {
  /** Bound for an empty or tiny input or output. */
  readonly baseMs: number;
  /** Added for every whole 1,000 lines read or expected (the base covers the rest). */
  readonly perThousandLinesMs: number;
}

/** The bound for a run that reads or prints about `lines` lines. */
export function boundFor(bound: ToolBound, lines: number): number {
  const n = Number.isFinite(lines) && lines > 0 ? Math.floor(lines / 1000) : 0;
  return bound.baseMs + n * bound.perThousandLinesMs;
}

/** Newlines in an input (one text or its pieces), counted without joining or splitting it. */
export function countNewlines(input: string | readonly string[]): number {
  let n = 0;
  for (const piece of typeof input === "string" ? [input] : input) {
    for (let at = piece.indexOf("\n"); at >= 0; at = piece.indexOf("\n", at + 1)) n++;
  }
  return n;
}

/**
 * The bound of a client's whole-table reads: sized by what the last read printed plus the
 * lines written since, and doubled after a read that timed out.
 */
export class ReadAllowance {
  private lastRead = 0;
  private writtenSince = 0;
  private floorMs = 0;

  constructor(private readonly bound: ToolBound) {}

  /** The bound for the next read. */
  nextMs(): number {
    return Math.max(boundFor(this.bound, this.lastRead + this.writtenSince), this.floorMs);
  }

  /** A read finished (any exit) without timing out; `output` is what it printed. */
  read(output: string): void {
    this.lastRead = countNewlines(output);
    this.writtenSince = 0;
    this.floorMs = 0;
  }

  /** A read was killed after `boundMs`: the next one gets twice as long. */
  timedOut(boundMs: number): void {
    this.floorMs = Math.max(this.floorMs, 2 * boundMs);
  }

  /** Lines written to the table since the last read (each may add a line to the next read). */
  wrote(lines: number): void {
    if (Number.isFinite(lines) && lines > 0) this.writtenSince += lines;
  }
}
