// A Clock for tests: time moves only when the test says so, and timers fire in due order.

import { setImmediate } from "node:timers";
import type { Clock, TimerHandle } from "../clock.ts";

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
