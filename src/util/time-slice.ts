// The proxy runs on one thread: its HTTP servers (/healthz, /livez, /metrics, the health-check
// NodePorts) answer only between tasks. A loop over 100,000 service ports is one long task unless
// it steps aside now and then; a TimeSlice tells such a loop when its share is used up, and
// pause() lets everything that waits (accepted connections, timers) run before it goes on.

import { setImmediate } from "node:timers";

/** Work between two pauses: well under the 1 s a probe may wait, at ~1 % overhead per pause. */
export const SLICE_MS = 20;

export class TimeSlice {
  private start = performance.now();

  constructor(private readonly budgetMs = SLICE_MS) {}

  /** The current slice is used up: the caller should `await pause()` at its next safe point. */
  get due(): boolean {
    return performance.now() - this.start >= this.budgetMs;
  }

  /** One turn of the event loop (I/O included), then a fresh slice. */
  async pause(): Promise<void> {
    // setImmediate, not a resolved promise: microtasks run before any I/O, so a loop awaiting
    // one would never let a connection in.
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.start = performance.now();
  }
}

/**
 * A computation written as a generator that yields at its safe points (between service ports,
 * say): the caller decides whether to pause there. Nothing is passed in or out at a yield.
 */
export type Steps<T> = Generator<void, T, void>;

/**
 * Small items (service ports, addresses) handled between two yields of a Steps: a yield costs
 * about 0.1 µs per generator it passes through, as much as the work on a port or two.
 */
export const ITEMS_PER_STEP = 64;

/** Runs `steps` to the end at once (tests, tools, and callers with nothing to serve). */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/** Runs `steps` to the end, pausing at a safe point whenever `slice` is used up. */
export async function runStepsPaced<T>(steps: Steps<T>, slice: TimeSlice): Promise<T> {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
    if (slice.due) await slice.pause();
  }
}
