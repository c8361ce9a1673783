import { describe, expect, test } from "bun:test";
import { TokenBucket, tokenBucket } from "../../src/util/token-bucket.ts";

/**
 * True when `p` settles before a zero-delay timer fires: it did not wait on a timer of its own.
 * Judged by order, not by the clock, so a busy machine cannot change the answer.
 */
async function settlesWithoutATimer(p: Promise<unknown>): Promise<boolean> {
  let timerFired = false;
  const timer = new Promise<void>((r) =>
    setTimeout(() => {
      timerFired = true;
      r();
    }, 0),
  );
  await Promise.race([p, timer]);
  return !timerFired;
}

describe("tokenBucket", () => {
  test("allows a burst, then spaces requests at qps", async () => {
    let now = 0;
    const limiter = tokenBucket(10, 2, () => now);
    const started = Date.now();
    expect(await settlesWithoutATimer(limiter.take())).toBe(true);
    expect(await settlesWithoutATimer(limiter.take())).toBe(true);
    const third = limiter.take();
    let done = false;
    void third.then(() => {
      done = true;
    });
    // Timers fire in the order they are due, however late: the 30 ms one before the third
    // take's 100 ms wait.
    await new Promise((r) => setTimeout(r, 30));
    expect(done).toBe(false);
    await third;
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    now = 1000;
    expect(await settlesWithoutATimer(limiter.take())).toBe(true);
  });

  test("qps <= 0 means no limit", async () => {
    const limiter = tokenBucket(0, 0);
    for (let i = 0; i < 100; i++) expect(await settlesWithoutATimer(limiter.take())).toBe(true);
  });
});

describe("TokenBucket", () => {
  test("starts full, refills one token per interval, never beyond capacity", () => {
    const b = new TokenBucket(2, 1000, 0);
    expect([b.tryAccept(0), b.tryAccept(0), b.tryAccept(0)]).toEqual([true, true, false]);
    expect(b.waitMs(400)).toBe(600);
    expect(b.tryAccept(1000)).toBe(true);
    expect(b.tryAccept(1000)).toBe(false);
    expect([b.tryAccept(100_000), b.tryAccept(100_000), b.tryAccept(100_000)]).toEqual([true, true, false]);
  });

  test("a clock stepping backwards grants no tokens", () => {
    const b = new TokenBucket(1, 1000, 5000);
    expect(b.tryAccept(5000)).toBe(true);
    expect(b.tryAccept(0)).toBe(false);
    expect(b.waitMs(0)).toBe(1000);
  });

  test("reserve takes a token even when there is none; the debt queues later takers", () => {
    const b = new TokenBucket(2, 100, 0);
    expect([b.reserve(0), b.reserve(0), b.reserve(0), b.reserve(0)]).toEqual([0, 0, 100, 200]);
    expect(b.reserve(250)).toBe(50);
    expect(b.tryAccept(1000)).toBe(true);
  });

  test("reserve waits as long as a bucket counting fractional tokens at qps would", () => {
    // The API limiter's arithmetic before it shared this bucket: tokens refill at qps, a take
    // always takes one, and a negative balance is the wait.
    const qps = 10;
    const burst = 3;
    let tokens = burst;
    let last = 0;
    const fractional = (t: number) => {
      tokens = Math.min(burst, tokens + ((t - last) / 1000) * qps);
      last = t;
      tokens -= 1;
      return tokens >= 0 ? 0 : (-tokens / qps) * 1000;
    };
    const b = new TokenBucket(burst, 1000 / qps, 0);
    for (const t of [0, 0, 0, 0, 0, 50, 120, 120, 400, 1000, 1000, 1001, 1500, 1500, 1500, 1500, 9000]) {
      expect(b.reserve(t)).toBeCloseTo(fractional(t), 9);
    }
  });
});
