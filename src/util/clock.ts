// Time as a dependency: code that waits (the sync runner, backoffs, graceful termination) takes a
// Clock so tests can drive time by hand instead of sleeping.

import { setImmediate } from "node:timers";

declare const timerBrand: unique symbol;
/** Opaque handle returned by Clock.setTimeout; only meaningful to the clock that made it. */
export type TimerHandle = { readonly [timerBrand]: true };

export interface Clock {
  /** Milliseconds. Only differences are meaningful to callers that schedule work. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; a handle that already fired, or undefined, is ignored. */
  clearTimeout(handle: TimerHandle | undefined): void;
}

/**
 * The process clock. now() is monotonic (timeOrigin + performance.now()), so a wall-clock step
 * from NTP cannot make a rate limiter think time ran backwards; it still reads close to epoch ms.
 */
export const realClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, Math.max(0, ms)) as unknown as TimerHandle,
  clearTimeout: (handle) => {
    if (handle !== undefined) globalThis.clearTimeout(handle as unknown as ReturnType<typeof setTimeout>);
  },
};

interface FakeTimer {
  readonly id: number;
  readonly dueAt: number;
  readonly fn: () => void;
}

/** One macrotask turn: every queued microtask (promise continuation) runs before it ends. */
function macrotaskTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A clock that moves only when told to. Timers fire in due order (ties in scheduling order), and
 * now() reads each timer's due time while it fires, as if real time had passed.
 */
export class FakeClock implements Clock {
  private current: number;
  private nextId = 1;
  private readonly timers = new Map<number, FakeTimer>();

  constructor(startMs = 0) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { id, dueAt: this.current + Math.max(0, ms), fn });
    return id as unknown as TimerHandle;
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle !== undefined) this.timers.delete(handle as unknown as number);
  }

  /** Due times of the timers not yet fired, earliest first. */
  pendingTimers(): number[] {
    return [...this.timers.values()].sort(byDue).map((t) => t.dueAt);
  }

  /** Moves time forward by ms, firing due timers synchronously (including ones they schedule). */
  advance(ms: number): void {
    const end = this.current + Math.max(0, ms);
    for (let t = this.takeDue(end); t; t = this.takeDue(end)) {
      this.current = t.dueAt;
      t.fn();
    }
    this.current = end;
  }

  /**
   * Like advance, but lets promise chains settle before and after every timer, so async work
   * started by a callback (or awaiting a fake sleep) completes at the right fake time.
   */
  async advanceAsync(ms: number): Promise<void> {
    const end = this.current + Math.max(0, ms);
    await this.settle();
    for (let t = this.takeDue(end); t; t = this.takeDue(end)) {
      this.current = t.dueAt;
      t.fn();
      await this.settle();
    }
    this.current = end;
    await this.settle();
  }

  /** Runs every pending microtask without moving time. */
  async settle(): Promise<void> {
    await macrotaskTurn();
  }

  private takeDue(end: number): FakeTimer | undefined {
    let first: FakeTimer | undefined;
    for (const t of this.timers.values()) {
      if (t.dueAt <= end && (!first || byDue(t, first) < 0)) first = t;
    }
    if (first) this.timers.delete(first.id);
    return first;
  }
}

function byDue(a: FakeTimer, b: FakeTimer): number {
  return a.dueAt - b.dueAt || a.id - b.id;
}

/** Resolves after ms on the given clock; handy inside code under test that must take time. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}
