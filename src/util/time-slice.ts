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
