import { describe, expect, test } from "bun:test";
import { Backoff, sleep } from "../../src/util/backoff.ts";

describe("Backoff", () => {
  test("doubles from the initial delay and never exceeds the cap, jitter included", () => {
    const b = new Backoff({ initialMs: 500, maxMs: 30_000, jitter: 0.5, random: () => 0 });
    expect([b.next(), b.next(), b.next(), b.next()]).toEqual([500, 1000, 2000, 4000]);
    const top = new Backoff({ initialMs: 500, maxMs: 30_000, jitter: 0.5, random: () => 0.999 });
    const delays = Array.from({ length: 20 }, () => top.next());
    expect(Math.max(...delays)).toBe(30_000);
    expect(delays[0]).toBeGreaterThan(700);
  });

  test("jitter spreads delays between base and base x (1 + jitter)", () => {
    const seen = new Set<number>();
    for (const r of [0, 0.25, 0.5, 0.75])
      seen.add(new Backoff({ initialMs: 1000, jitter: 0.5, random: () => r }).next());
    expect([...seen].sort((a, b) => a - b)).toEqual([1000, 1125, 1250, 1375]);
  });

  test("reset starts again from the initial delay", () => {
    const b = new Backoff({ initialMs: 100, jitter: 0 });
    b.next();
    b.next();
    b.reset();
    expect(b.next()).toBe(100);
  });

  test("sleep ends early when aborted", async () => {
    const ctl = new AbortController();
    const started = Date.now();
    const p = sleep(10_000, ctl.signal);
    setTimeout(() => ctl.abort(), 20);
    await p;
    // Judged against the other outcome (the full 10 s), not against the machine's speed.
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
