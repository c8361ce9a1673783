// The one token bucket. The sync runner asks it directly (tryAccept/waitMs on its Clock's time:
// bursts of `capacity` runs, then one per refill interval), and the API client's request limit
// (--kube-api-qps / --kube-api-burst, like client-go's) is tokenBucket(): an async take() over
// the same bucket that queues requests once the burst is spent.

/**
 * A token bucket that starts full. Credit is kept in milliseconds of refill time rather than
 * fractional tokens, so whole-millisecond clocks give exact answers.
 */
export class TokenBucket {
  private credit: number;
  private last: number;

  constructor(
    private readonly capacity: number,
    private readonly refillMs: number,
    now: number,
  ) {
    this.credit = capacity * refillMs;
    this.last = now;
  }

  tryAccept(now: number): boolean {
    this.refill(now);
    if (this.credit < this.refillMs) return false;
    this.credit -= this.refillMs;
    return true;
  }

  /** Milliseconds until tryAccept would succeed; 0 when it would now. */
  waitMs(now: number): number {
    this.refill(now);
    return Math.max(0, this.refillMs - this.credit);
  }

  /**
   * Takes a token whether or not one is there and says how long to wait for it: 0 when it was.
   * Credit may go negative: that debt is each waiter's place in the queue.
   */
  reserve(now: number): number {
    this.refill(now);
    this.credit -= this.refillMs;
    return this.credit >= 0 ? 0 : -this.credit;
  }

  private refill(now: number): void {
    // A clock that steps backwards grants nothing rather than taking credit away.
    this.credit = Math.min(this.capacity * this.refillMs, this.credit + Math.max(0, now - this.last));
    this.last = now;
  }
}

export interface RateLimiter {
  /** Resolves when a request may go out (or at once if the signal aborts). */
  take(signal?: AbortSignal): Promise<void>;
}

export const unlimited: RateLimiter = { take: () => Promise.resolve() };

/** Bursts up to `burst` requests, then `qps` per second on average; qps <= 0 is no limit. */
export function tokenBucket(qps: number, burst: number, now: () => number = Date.now): RateLimiter {
  if (!(qps > 0)) return unlimited;
  const bucket = new TokenBucket(Math.max(1, Math.floor(burst)), 1000 / qps, now());
  return {
    take(signal) {
      const waitMs = bucket.reserve(now());
      if (waitMs === 0) return Promise.resolve();
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(done, waitMs);
        signal?.addEventListener("abort", done, { once: true });
      });
    },
  };
}
