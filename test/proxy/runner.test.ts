import { describe, expect, test } from "bun:test";
import { memoryLogger } from "../../src/log/logger.ts";
import { BoundedFrequencyRunner } from "../../src/proxy/runner.ts";
import { sleep } from "../../src/util/clock.ts";
import { FakeClock } from "../../src/util/testing/fake-clock.ts";

interface HarnessOpts {
  minIntervalMs?: number;
  maxIntervalMs?: number;
  burstRuns?: number;
  /** Fake time each run takes. */
  runMs?: number;
  /** Decides per run (1-based) whether it fails. */
  fails?: (n: number) => boolean;
  /** Called at the start of each run, before it takes time. */
  during?: (n: number) => void;
}

function harness(o: HarnessOpts = {}) {
  const clock = new FakeClock();
  const logger = memoryLogger();
  const starts: number[] = [];
  let active = 0;
  let maxActive = 0;
  const runner: BoundedFrequencyRunner = new BoundedFrequencyRunner({
    name: "sync-runner",
    minIntervalMs: o.minIntervalMs ?? 1000,
    maxIntervalMs: o.maxIntervalMs ?? 10_000,
    ...(o.burstRuns === undefined ? {} : { burstRuns: o.burstRuns }),
    clock,
    logger,
    fn: async () => {
      starts.push(clock.now());
      const n = starts.length;
      active++;
      maxActive = Math.max(maxActive, active);
      try {
        o.during?.(n);
        if (o.runMs) await sleep(clock, o.runMs);
        if (o.fails?.(n)) throw new Error(`iptables-restore failed (run ${n})`);
      } finally {
        active--;
      }
    },
  });
  /** Stops the runner, moving fake time on so a run in flight can finish. */
  const stop = async () => {
    const stopping = runner.stop();
    await clock.advanceAsync(o.runMs ?? 0);
    await stopping;
  };
  return { clock, logger, starts, runner, stop, maxActive: () => maxActive };
}

describe("BoundedFrequencyRunner", () => {
  test("many requests before a run collapse into one run", async () => {
    const h = harness();
    h.runner.start();
    for (let i = 0; i < 100; i++) h.runner.run();
    await h.clock.advanceAsync(5000);
    expect(h.starts).toEqual([0]);
    await h.stop();
  });

  test("a burst of burstRuns runs back to back, the next waits for the token to refill", async () => {
    const h = harness({ minIntervalMs: 1000, burstRuns: 2 });
    h.runner.start();
    for (let i = 0; i < 3; i++) {
      h.runner.run();
      await h.clock.settle();
    }
    expect(h.starts).toEqual([0, 0]);
    await h.clock.advanceAsync(999);
    expect(h.starts).toEqual([0, 0]);
    await h.clock.advanceAsync(1);
    expect(h.starts).toEqual([0, 0, 1000]);
    await h.stop();
  });

  test("with burstRuns 1 every run is at least minInterval after the previous one ended", async () => {
    const h = harness({ minIntervalMs: 1000, burstRuns: 1, runMs: 200 });
    h.runner.start();
    h.runner.run();
    await h.clock.advanceAsync(200); // first run ends at 200
    h.runner.run();
    await h.clock.advanceAsync(1500);
    expect(h.starts).toEqual([0, 1200]);
    await h.stop();
  });

  test("minInterval 0 lifts the rate limit", async () => {
    const h = harness({ minIntervalMs: 0, burstRuns: 1 });
    h.runner.start();
    for (let i = 0; i < 4; i++) {
      h.runner.run();
      await h.clock.settle();
    }
    expect(h.starts).toEqual([0, 0, 0, 0]);
    await h.stop();
  });

  test("runs every maxInterval when nobody asks", async () => {
    const h = harness({ maxIntervalMs: 10_000 });
    h.runner.start();
    await h.clock.advanceAsync(35_000);
    expect(h.starts).toEqual([10_000, 20_000, 30_000]);
    await h.stop();
  });

  test("the periodic run counts from the last run, requested or not", async () => {
    const h = harness({ maxIntervalMs: 10_000 });
    h.runner.start();
    await h.clock.advanceAsync(4000);
    h.runner.run();
    await h.clock.advanceAsync(20_000);
    expect(h.starts).toEqual([4000, 14_000, 24_000]);
    await h.stop();
  });

  test("requests made during a run cause exactly one more run, after minInterval", async () => {
    const h = harness({
      minIntervalMs: 1000,
      burstRuns: 1,
      runMs: 300,
      during: (n) => {
        if (n === 1) for (let i = 0; i < 5; i++) h.runner.run();
      },
    });
    h.runner.start();
    h.runner.run();
    await h.clock.advanceAsync(5000);
    expect(h.starts).toEqual([0, 1300]);
    await h.stop();
  });

  test("with a spare burst token the follow-up run starts as soon as the first ends", async () => {
    const h = harness({
      minIntervalMs: 1000,
      burstRuns: 2,
      runMs: 300,
      during: (n) => {
        if (n === 1) h.runner.run();
      },
    });
    h.runner.start();
    h.runner.run();
    await h.clock.advanceAsync(5000);
    expect(h.starts).toEqual([0, 300]);
    await h.stop();
  });

  test("never runs twice at once, however requests and timers interleave", async () => {
    const h = harness({ minIntervalMs: 0, maxIntervalMs: 500, runMs: 700 });
    h.runner.start();
    for (let t = 0; t < 5000; t += 100) {
      h.runner.run();
      h.runner.retryAfter(0);
      await h.clock.advanceAsync(100);
    }
    expect(h.maxActive()).toBe(1);
    expect(h.starts.length).toBeGreaterThan(1);
    await h.stop();
  });

  test("a failing run is retried with doubling backoff from 1s and recovers", async () => {
    const h = harness({ minIntervalMs: 500, maxIntervalMs: 10_000, fails: (n) => n <= 3 });
    h.runner.start();
    h.runner.run();
    await h.clock.advanceAsync(20_000);
    // Fails at 0, 1000 (+1s), 3000 (+2s); succeeds at 7000 (+4s); then periodic.
    expect(h.starts).toEqual([0, 1000, 3000, 7000, 17_000]);
    const errors = h.logger.lines.filter((l) => l.startsWith("E"));
    expect(errors).toHaveLength(3);
    expect(errors[0]).toContain('err="iptables-restore failed (run 1)"');
    expect(errors[0]).toContain("retryInMs=1000");
    await h.stop();
  });

  test("backoff starts at minInterval when that is above 1s and is capped at maxInterval", async () => {
    const h = harness({ minIntervalMs: 1500, maxIntervalMs: 5000, burstRuns: 1, fails: () => true });
    h.runner.start();
    h.runner.run();
    await h.clock.advanceAsync(20_000);
    // +1.5s, +3s, then capped at +5s.
    expect(h.starts).toEqual([0, 1500, 4500, 9500, 14_500, 19_500]);
    await h.stop();
  });

  test("backoff resets after a successful run", async () => {
    const h = harness({
      minIntervalMs: 0,
      maxIntervalMs: 60_000,
      fails: (n) => n === 1 || n === 2 || n === 4,
    });
    h.runner.start();
    h.runner.run();
    await h.clock.advanceAsync(3000); // fail@0, fail@1000, ok@3000
    h.runner.run();
    await h.clock.advanceAsync(2000); // fail@3000, retry 1s later, not 4s
    expect(h.starts).toEqual([0, 1000, 3000, 3000, 4000]);
    await h.stop();
  });

  test("a synchronous throw from fn is handled like a rejection", async () => {
    const clock = new FakeClock();
    const starts: number[] = [];
    const runner = new BoundedFrequencyRunner({
      name: "sync-throw",
      minIntervalMs: 0,
      maxIntervalMs: 60_000,
      clock,
      fn: (() => {
        starts.push(clock.now());
        if (starts.length === 1) throw new Error("boom");
        return Promise.resolve();
      }) as () => Promise<void>,
    });
    runner.start();
    runner.run();
    await clock.advanceAsync(2000);
    expect(starts).toEqual([0, 1000]);
    await runner.stop();
  });

  test("retryAfter brings the next run forward but never pushes the periodic one back", async () => {
    const h = harness({ maxIntervalMs: 10_000 });
    h.runner.start();
    h.runner.run();
    await h.clock.settle();
    h.runner.retryAfter(2000);
    h.runner.retryAfter(50_000);
    await h.clock.advanceAsync(12_500);
    expect(h.starts).toEqual([0, 2000, 12_000]);
    await h.stop();
  });

  test("retryAfter called from inside a run applies once the run ends, within the rate limit", async () => {
    const h = harness({
      minIntervalMs: 1000,
      burstRuns: 1,
      during: (n) => {
        if (n === 1) h.runner.retryAfter(300);
      },
    });
    h.runner.start();
    h.runner.run();
    await h.clock.advanceAsync(3000);
    expect(h.starts).toEqual([0, 1000]);
    await h.stop();
  });

  test("requests before start() wait for it", async () => {
    const h = harness();
    h.runner.run();
    await h.clock.advanceAsync(30_000);
    expect(h.starts).toEqual([]);
    h.runner.start();
    await h.clock.settle();
    expect(h.starts).toEqual([30_000]);
    await h.stop();
  });

  test("stop() waits for the run in flight and no run happens afterwards", async () => {
    const h = harness({ runMs: 500, maxIntervalMs: 1000 });
    h.runner.start();
    h.runner.run();
    await h.clock.advanceAsync(100);
    let stopped = false;
    const stopping = h.runner.stop().then(() => {
      stopped = true;
    });
    h.runner.run();
    await h.clock.advanceAsync(300);
    expect(stopped).toBe(false);
    await h.clock.advanceAsync(100);
    await stopping;
    expect(stopped).toBe(true);
    h.runner.run();
    h.runner.retryAfter(0);
    await h.clock.advanceAsync(60_000);
    expect(h.starts).toEqual([0]);
    expect(h.clock.pendingTimers()).toEqual([]);
  });

  const invalid: [string, { minIntervalMs: number; maxIntervalMs: number; burstRuns?: number }][] = [
    ["maxInterval below minInterval", { minIntervalMs: 2000, maxIntervalMs: 1000 }],
    ["negative minInterval", { minIntervalMs: -1, maxIntervalMs: 1000 }],
    ["zero maxInterval", { minIntervalMs: 0, maxIntervalMs: 0 }],
    ["zero burstRuns", { minIntervalMs: 0, maxIntervalMs: 1000, burstRuns: 0 }],
  ];
  for (const [name, opts] of invalid) {
    test(`rejects ${name}`, () => {
      expect(() => new BoundedFrequencyRunner({ name: "bad", fn: async () => {}, ...opts })).toThrow(
        RangeError,
      );
    });
  }
});
