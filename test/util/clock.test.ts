import { describe, expect, test } from "bun:test";
import { realClock, sleep } from "../../src/util/clock.ts";
import { FakeClock } from "../../src/util/testing/fake-clock.ts";

describe("FakeClock", () => {
  test("starts where told and moves only on advance", () => {
    const clock = new FakeClock(5000);
    expect(clock.now()).toBe(5000);
    clock.advance(250);
    expect(clock.now()).toBe(5250);
  });

  test("fires due timers in time order, ties in scheduling order, with now() at the due time", () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    const at = (label: string, ms: number) =>
      clock.setTimeout(() => fired.push(`${label}@${clock.now()}`), ms);
    at("c", 30);
    at("a", 10);
    at("b1", 20);
    at("b2", 20);
    at("late", 100);
    clock.advance(50);
    expect(fired).toEqual(["a@10", "b1@20", "b2@20", "c@30"]);
    expect(clock.now()).toBe(50);
    expect(clock.pendingTimers()).toEqual([100]);
  });

  test("timers scheduled by callbacks fire within the same advance when due", () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    const tick = () => {
      fired.push(clock.now());
      clock.setTimeout(tick, 10);
    };
    clock.setTimeout(tick, 10);
    clock.advance(35);
    expect(fired).toEqual([10, 20, 30]);
    expect(clock.pendingTimers()).toEqual([40]);
  });

  test("zero and negative delays fire on advance(0)", () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(0), 0);
    clock.setTimeout(() => fired.push(-1), -5);
    clock.advance(0);
    expect(fired).toEqual([0, -1]);
  });

  test("clearTimeout cancels; clearing a fired timer or undefined is harmless", () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    const keep = clock.setTimeout(() => fired.push("keep"), 10);
    const drop = clock.setTimeout(() => fired.push("drop"), 20);
    clock.clearTimeout(drop);
    clock.advance(30);
    clock.clearTimeout(keep);
    clock.clearTimeout(undefined);
    expect(fired).toEqual(["keep"]);
    expect(clock.pendingTimers()).toEqual([]);
  });

  test("advanceAsync lets async work started by a timer finish at the right fake time", async () => {
    const clock = new FakeClock();
    const log: string[] = [];
    clock.setTimeout(async () => {
      log.push(`start@${clock.now()}`);
      await sleep(clock, 15);
      await Promise.resolve();
      log.push(`end@${clock.now()}`);
    }, 10);
    await clock.advanceAsync(30);
    expect(log).toEqual(["start@10", "end@25"]);
    expect(clock.now()).toBe(30);
  });

  test("settle runs pending promise continuations without moving time", async () => {
    const clock = new FakeClock(7);
    let done = false;
    void Promise.resolve()
      .then(() => Promise.resolve())
      .then(() => {
        done = true;
      });
    await clock.settle();
    expect(done).toBe(true);
    expect(clock.now()).toBe(7);
  });
});

describe("realClock", () => {
  test("setTimeout fires and clearTimeout cancels", async () => {
    const fired: string[] = [];
    const dropped = realClock.setTimeout(() => fired.push("dropped"), 1);
    realClock.clearTimeout(dropped);
    await new Promise<void>((resolve) =>
      realClock.setTimeout(() => {
        fired.push("kept");
        resolve();
      }, 5),
    );
    expect(fired).toEqual(["kept"]);
  });

  test("now() never goes backwards and reads near wall time", () => {
    const a = realClock.now();
    const b = realClock.now();
    expect(b).toBeGreaterThanOrEqual(a);
    expect(Math.abs(a - Date.now())).toBeLessThan(60_000);
  });
});
