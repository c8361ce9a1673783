// Time as a dependency: code that waits (the sync runner, backoffs, graceful termination) takes a
// Clock so tests can drive time by hand instead of sleeping.

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

/**
 * A clock that reads `base` plus an offset moved on by hand, its timers still on `base`: a
 * replay steps it so each snapshot comes later than any of a proxier's delays after the last.
 */
export function steppedClock(base: Clock = realClock): { readonly clock: Clock; advance(ms: number): void } {
  let offset = 0;
  return {
    clock: {
      now: () => base.now() + offset,
      setTimeout: (fn, ms) => base.setTimeout(fn, ms),
      clearTimeout: (handle) => base.clearTimeout(handle),
    },
    advance(ms) {
      offset += ms;
    },
  };
}

/** Resolves after ms on the given clock; handy inside code under test that must take time. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}
