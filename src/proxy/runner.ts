// Drives syncProxyRules: informer events ask for a sync with run(), and this decides when one
// actually happens. Bursts of changes collapse into one sync, syncs are rate limited so a busy
// cluster cannot pin the CPU on iptables-restore, and a periodic sync repairs drift even when
// nothing changes. Behaves like upstream's BoundedFrequencyRunner, plus retry with backoff when
// the sync itself fails.

import { type Logger, nullLogger } from "../log/logger.ts";
import { Backoff } from "../util/backoff.ts";
import { type Clock, realClock, type TimerHandle } from "../util/clock.ts";
import { TokenBucket } from "../util/token-bucket.ts";

export interface BoundedFrequencyRunnerOptions {
  name: string;
  fn: () => Promise<void>;
  /** Least time from the end of one run to the start of the next (bursts excepted); 0: no limit. */
  minIntervalMs: number;
  /** Most time between runs: a run happens this long after the last one even if nobody asks. */
  maxIntervalMs: number;
  /** Runs allowed back to back before minInterval applies; refills one per minInterval. */
  burstRuns?: number;
  clock?: Clock;
  logger?: Logger;
}

/** Failed runs are retried no sooner than this, whatever minInterval is, to spare the host. */
const MIN_FAILURE_BACKOFF_MS = 1000;

type State = "new" | "running" | "stopped";

function validate(o: BoundedFrequencyRunnerOptions, burstRuns: number): void {
  const bad = (what: string) => new RangeError(`${o.name}: ${what}`);
  if (!(o.minIntervalMs >= 0)) throw bad(`minInterval (${o.minIntervalMs}ms) must be >= 0`);
  if (!(o.maxIntervalMs > 0)) throw bad(`maxInterval (${o.maxIntervalMs}ms) must be > 0`);
  if (o.maxIntervalMs < o.minIntervalMs) {
    throw bad(`maxInterval (${o.maxIntervalMs}ms) must be >= minInterval (${o.minIntervalMs}ms)`);
  }
  if (!Number.isInteger(burstRuns) || burstRuns < 1)
    throw bad(`burstRuns (${burstRuns}) must be a positive integer`);
}

export class BoundedFrequencyRunner {
  private readonly name: string;
  private readonly fn: () => Promise<void>;
  private readonly minInterval: number;
  private readonly maxInterval: number;
  private readonly clock: Clock;
  private readonly log: Logger;
  /** Absent when minInterval is 0: every request may run at once. */
  private readonly limiter: TokenBucket | undefined;
  /** Doubles per consecutive failure from max(minInterval, 1s), capped at maxInterval; no jitter. */
  private readonly backoff: Backoff;

  private state: State = "new";
  /** True from the moment fn is called until its promise settles. */
  private busy = false;
  private inFlight: Promise<void> | undefined;
  /** A run was asked for and has not started yet. */
  private requested = false;
  private kickQueued = false;
  /** The single wake-up: periodic run, deferred run or retry, whichever is soonest. */
  private timer: TimerHandle | undefined;
  private timerDueAt = Number.POSITIVE_INFINITY;
  private lastRunEnd = Number.NEGATIVE_INFINITY;
  /** Soonest retry asked for while it could not be applied yet (during a run, before start). */
  private retryAt: number | undefined;
  private consecutiveFailures = 0;

  constructor(opts: BoundedFrequencyRunnerOptions) {
    const burstRuns = opts.burstRuns ?? 2;
    validate(opts, burstRuns);
    this.name = opts.name;
    this.fn = opts.fn;
    this.minInterval = opts.minIntervalMs;
    this.maxInterval = opts.maxIntervalMs;
    this.clock = opts.clock ?? realClock;
    this.log = opts.logger ?? nullLogger;
    this.limiter =
      opts.minIntervalMs > 0 ? new TokenBucket(burstRuns, opts.minIntervalMs, this.clock.now()) : undefined;
    this.backoff = new Backoff({
      initialMs: Math.max(opts.minIntervalMs, MIN_FAILURE_BACKOFF_MS),
      maxMs: opts.maxIntervalMs,
      factor: 2,
      jitter: 0,
    });
  }

  /** Starts the loop. The first run comes from run() or, failing that, after maxInterval. */
  start(): void {
    if (this.state === "running") return;
    this.state = "running";
    this.log.v(3).info("Loop running", { runner: this.name });
    if (this.busy) return; // a run left over from before stop(); it reschedules when it ends
    this.setTimerIn(this.maxInterval);
    this.applyRetry();
    if (this.requested) this.kick();
  }

  /** Stops scheduling runs and waits for one already under way. */
  async stop(): Promise<void> {
    if (this.state === "running") this.log.v(3).info("Loop stopping", { runner: this.name });
    this.state = "stopped";
    this.clearTimer();
    this.retryAt = undefined;
    await this.inFlight;
  }

  /** Asks for a run as soon as the rate limit allows; requests before that collapse into one. */
  run(): void {
    this.requested = true;
    this.kick();
  }

  /** Ensures a run no later than ms from now (sooner if already due); the rate limit still applies. */
  retryAfter(ms: number): void {
    const at = this.clock.now() + Math.max(0, ms);
    if (this.retryAt === undefined || at < this.retryAt) this.retryAt = at;
    if (this.state === "running" && !this.busy) this.applyRetry();
  }

  /** Defers the attempt to a microtask so a synchronous flurry of run() calls costs one check. */
  private kick(): void {
    if (this.state !== "running" || this.busy || this.kickQueued) return;
    this.kickQueued = true;
    queueMicrotask(() => {
      this.kickQueued = false;
      if (this.requested) this.tryRun();
    });
  }

  private tryRun(): void {
    if (this.state !== "running" || this.busy) return;
    const now = this.clock.now();
    if (this.limiter && !this.limiter.tryAccept(now)) {
      this.deferUntilAllowed(now, this.limiter);
      return;
    }
    this.requested = false;
    this.clearTimer();
    this.busy = true;
    this.inFlight = this.execute();
  }

  /**
   * Upstream waits minInterval from the end of the last run; the bucket's own wait is never
   * longer than that, but taking the max keeps us from spinning if the clock misbehaves.
   */
  private deferUntilAllowed(now: number, limiter: TokenBucket): void {
    const sinceLast = Math.max(0, now - this.lastRunEnd);
    const wait = Math.max(this.minInterval - sinceLast, limiter.waitMs(now));
    this.log
      .v(4)
      .info("Run deferred by rate limit", { runner: this.name, sinceLastMs: sinceLast, waitMs: wait });
    if (now + wait < this.timerDueAt) this.setTimerAt(now + wait);
  }

  private async execute(): Promise<void> {
    let error: unknown;
    let failed = false;
    try {
      await this.fn();
    } catch (err) {
      failed = true;
      error = err;
    }
    this.lastRunEnd = this.clock.now();
    this.busy = false;
    this.inFlight = undefined;
    if (this.state !== "running") return;
    this.afterRun(failed, error);
  }

  private afterRun(failed: boolean, error: unknown): void {
    this.setTimerIn(this.maxInterval);
    if (failed) {
      this.consecutiveFailures++;
      const delay = this.backoff.next();
      this.log.error("Run failed, retrying with backoff", {
        runner: this.name,
        err: error instanceof Error ? error : String(error),
        failures: this.consecutiveFailures,
        retryInMs: delay,
      });
      this.retryAfter(delay);
    } else {
      this.consecutiveFailures = 0;
      this.backoff.reset();
      this.log
        .v(3)
        .info("Ran", { runner: this.name, nextPossibleMs: this.minInterval, periodicMs: this.maxInterval });
    }
    this.applyRetry();
    if (this.requested) this.tryRun();
  }

  private applyRetry(): void {
    const at = this.retryAt;
    if (at === undefined) return;
    this.retryAt = undefined;
    if (at < this.timerDueAt) {
      this.log.v(3).info("Retry scheduled", { runner: this.name, inMs: at - this.clock.now() });
      this.setTimerAt(at);
    }
  }

  private setTimerIn(ms: number): void {
    this.setTimerAt(this.clock.now() + ms);
  }

  private setTimerAt(at: number): void {
    this.clearTimer();
    this.timerDueAt = at;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerDueAt = Number.POSITIVE_INFINITY;
        this.tryRun();
      },
      Math.max(0, at - this.clock.now()),
    );
  }

  private clearTimer(): void {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDueAt = Number.POSITIVE_INFINITY;
  }
}
