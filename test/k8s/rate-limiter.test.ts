import { describe, expect, test } from "bun:test";
import { tokenBucket } from "../../src/k8s/rate-limiter.ts";

describe("tokenBucket", () => {
  test("allows a burst, then spaces requests at qps", async () => {
    let now = 0;
    const limiter = tokenBucket(10, 2, () => now);
    const started = Date.now();
    await limiter.take();
    await limiter.take();
    expect(Date.now() - started).toBeLessThan(50);
    const third = limiter.take();
    let done = false;
    void third.then(() => {
      done = true;
    });
    await new Promise((r) => setTimeout(r, 30));
    expect(done).toBe(false);
    await third;
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    now = 1000;
    const t = Date.now();
    await limiter.take();
    expect(Date.now() - t).toBeLessThan(50);
  });

  test("qps <= 0 means no limit", async () => {
    const limiter = tokenBucket(0, 0);
    const started = Date.now();
    for (let i = 0; i < 100; i++) await limiter.take();
    expect(Date.now() - started).toBeLessThan(100);
  });
});
