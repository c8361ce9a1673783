// Drift: what the kernel holds that differs from the proxy's own record of what its syncs wrote
// (another program deleted a rule, a set element, a real server...). Each mode compares its
// record with the kernel (RunningMode.drift); this module holds the shared shapes, the counter
// every difference found at runtime increments, and the periodic check that logs a line and
// asks for a repairing sync.

import { Counter, type Registry } from "prom-client";
import type { Logger } from "../log/logger.ts";
import { errText } from "../util/err-text.ts";
import type { IPFamily } from "../util/net/family.ts";
import { alpha } from "./metrics/metrics.ts";

export const DIFFERENCE_KINDS = [
  "table",
  "chain",
  "rule",
  "set",
  "set-element",
  "virtual-server",
  "real-server",
] as const;

export type DifferenceKind = (typeof DIFFERENCE_KINDS)[number];

/** One difference; `expected` is the record's side, `found` the kernel's ("absent" when missing). */
export interface Difference {
  readonly kind: DifferenceKind;
  /** The object, as an operator would look it up (e.g. "nat KUBE-SERVICES", "ip kube-proxy service-ips"). */
  readonly what: string;
  readonly expected: string;
  readonly found: string;
  /** Which family's proxier found it (dual-stack nodes run two). */
  readonly ipFamily?: IPFamily;
}

/** "1 rule", "3 rules": a chain's size as a difference states it. */
export const ruleCount = (n: number): string => (n === 1 ? "1 rule" : `${n} rules`);

/** What /debug/drift answers. */
export interface DriftReport {
  readonly mode: string;
  /** Why nothing was compared (a sync is pending that rewrites everything anyway). */
  readonly skipped?: string;
  readonly differences: readonly Difference[];
}

/** The differences of one family's proxier, or why it could not compare now. */
export type FamilyDrift = { readonly differences: Difference[] } | { readonly skipped: string };

/** Every family's answer in one report: the differences concatenated, the reasons to skip joined. */
export function mergeDrift(mode: string, answers: readonly FamilyDrift[]): DriftReport {
  const differences: Difference[] = [];
  const skipped: string[] = [];
  for (const a of answers) {
    if ("skipped" in a) skipped.push(a.skipped);
    else differences.push(...a.differences);
  }
  return { mode, ...(skipped.length > 0 ? { skipped: skipped.join("; ") } : {}), differences };
}

export const DRIFT_METRIC = "kubeproxy_ts_drift_differences_total";

/** The counter of differences found by the periodic check, by kind (not upstream's: our own prefix). */
export function createDriftCounter(registry: Registry): Counter<"kind"> {
  return new Counter({
    name: DRIFT_METRIC,
    help: alpha(
      "Differences between the kernel and what kube-proxy-ts last wrote, found by its periodic drift check",
    ),
    labelNames: ["kind"],
    registers: [registry],
  });
}

/** At most this many differences are named in the log line (the route lists them all). */
const NAMED_IN_LOG = 10;

function change(d: Difference): string {
  if (d.found === "absent") return `missing (${d.expected})`;
  if (d.expected === "absent") return `unexpected (${d.found})`;
  return `${d.expected} -> ${d.found}`;
}

/** The log line's fields: a count per kind and the first differences by name. */
export function driftLogFields(differences: readonly Difference[]): Record<string, string | number> {
  const byKind = new Map<string, number>();
  for (const d of differences) byKind.set(d.kind, (byKind.get(d.kind) ?? 0) + 1);
  const named = differences.slice(0, NAMED_IN_LOG).map((d) => `${d.kind} ${d.what}: ${change(d)}`);
  if (differences.length > NAMED_IN_LOG) named.push(`... ${differences.length - NAMED_IN_LOG} more`);
  return {
    count: differences.length,
    kinds: [...byKind].map(([k, n]) => `${k}=${n}`).join(","),
    differences: named.join("; "),
  };
}

export interface DriftCheckerOptions {
  readonly check: () => Promise<DriftReport>;
  /** Makes the next sync rewrite what drifted (a full sync), and queues it. */
  readonly repair: () => void;
  readonly counter: Counter<"kind">;
  readonly log: Logger;
  readonly intervalMs: number;
}

/**
 * The drift checks of a real run: every intervalMs, and whenever /debug/drift asks. The modes
 * read the kernel through child processes, so the HTTP servers keep answering meanwhile.
 */
export class DriftChecker {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  /** The check under way: a second asker (the route during a periodic check) shares it. */
  private running: Promise<DriftReport> | undefined;

  constructor(private readonly o: DriftCheckerOptions) {}

  start(): void {
    if (this.o.intervalMs <= 0 || this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), this.o.intervalMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private async tick(): Promise<void> {
    try {
      await this.checkOnce();
    } catch (err) {
      this.o.log.error("Drift check failed", { err: errText(err) });
    } finally {
      if (!this.stopped) this.start();
    }
  }

  /**
   * One check, periodic or asked for (/debug/drift): what drifted is counted, logged and
   * repaired by a full sync. Rejects when the kernel could not be read.
   */
  checkOnce(): Promise<DriftReport> {
    this.running ??= this.runCheck().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async runCheck(): Promise<DriftReport> {
    const report = await this.o.check();
    const { differences } = report;
    if (differences.length === 0) return report;
    for (const d of differences) this.o.counter.inc({ kind: d.kind });
    this.o.log.error("Kernel state drifted from what kube-proxy-ts wrote; requesting a full sync", {
      mode: report.mode,
      ...driftLogFields(differences),
    });
    this.o.repair();
    return report;
  }
}

/** KPTS_DRIFT_CHECK_INTERVAL_MS overrides the interval (tests); 0 turns the periodic check off. */
export const DRIFT_INTERVAL_ENV = "KPTS_DRIFT_CHECK_INTERVAL_MS";
export const DEFAULT_DRIFT_INTERVAL_MS = 5 * 60 * 1000;

export function driftIntervalMs(env: Readonly<Record<string, string | undefined>>): number {
  const raw = env[DRIFT_INTERVAL_ENV];
  if (raw === undefined || raw === "") return DEFAULT_DRIFT_INTERVAL_MS;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : DEFAULT_DRIFT_INTERVAL_MS;
}
