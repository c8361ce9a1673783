// Client-side request rate limit (--kube-api-qps / --kube-api-burst), a token bucket like
// client-go's: bursts up to `burst` requests, then `qps` per second on average.

export interface RateLimiter {
  /** Resolves when a request may go out (or at once if the signal aborts). */
  take(signal?: AbortSignal): Promise<void>;
}

export const unlimited: RateLimiter = { take: () => Promise.resolve() };

export function tokenBucket(qps: number, burst: number, now: () => number = Date.now): RateLimiter {
  if (!(qps > 0)) return unlimited;
  const capacity = Math.max(1, Math.floor(burst));
  let tokens = capacity;
  let last = now();
  return {
    take(signal) {
      const t = now();
      tokens = Math.min(capacity, tokens + ((t - last) / 1000) * qps);
      last = t;
      // Tokens may go negative: that debt is each waiter's place in the queue.
      tokens -= 1;
      if (tokens >= 0) return Promise.resolve();
      const waitMs = (-tokens / qps) * 1000;
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
