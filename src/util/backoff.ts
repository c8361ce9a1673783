// The one retry backoff: exponential, jittered (so a fleet of nodes does not hammer a recovering
// API server in lockstep) and capped (so a long outage still retries every ~30 s). List and watch
// use it as is; the sync runner uses it without jitter, from max(minInterval, 1s) to maxInterval.

export interface BackoffOptions {
  /** First delay, before jitter. */
  initialMs?: number;
  /** No delay ever exceeds this, jitter included. */
  maxMs?: number;
  factor?: number;
  /** Each delay is stretched by up to this fraction at random (0.5: base .. 1.5 x base). */
  jitter?: number;
  random?: () => number;
}

export class Backoff {
  private attempt = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  private readonly random: () => number;

  constructor(opts: BackoffOptions = {}) {
    this.initialMs = opts.initialMs ?? 500;
    this.maxMs = opts.maxMs ?? 30_000;
    this.factor = opts.factor ?? 2;
    this.jitter = opts.jitter ?? 0.5;
    this.random = opts.random ?? Math.random;
  }

  /** The delay before the next retry; each call lengthens the one after. */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * this.factor ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 64);
    return Math.min(this.maxMs, base * (1 + this.jitter * this.random()));
  }

  /** Called after a success: the next failure starts from the initial delay again. */
  reset(): void {
    this.attempt = 0;
  }
}

/** Waits ms, or less if the signal aborts first; never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
