// The last syncs of this process, for /debug/state: the sync controller opens a record per
// sync, each family's proxier notes on it whether it synced in full and what it wrote, and the
// controller closes it with the outcome. Only the newest few records are kept.

import { errText } from "../../util/err-text.ts";
import type { IPFamily } from "../../util/net/family.ts";
import type { FamilySync, SyncRecord } from "./schema.ts";

/** What a proxier tells the history about its part of one sync (SyncInput.note). */
export interface SyncNote {
  family(
    family: IPFamily,
    fullSync: boolean,
    written?: { readonly count: number; readonly unit: string },
  ): void;
}

/** Services with changes a sync applies: to their ports, and to their endpoints. */
export interface SyncChanges {
  readonly services: number;
  readonly endpoints: number;
}

/** A sync under way: proxiers note on it, the controller finishes it once. */
export interface OpenSync extends SyncNote {
  /** The changes it applies, once they are known (the maps are folded in after it opens). */
  changes(counts: SyncChanges): void;
  /** Closes the record: ok without an argument, failed with the error given. */
  finish(failure?: { readonly error: unknown }): void;
}

export interface SyncHistoryOptions {
  /** Records kept (newest first); 10 unless told. */
  readonly keep?: number;
  /** Wall-clock milliseconds (the start shown). */
  readonly wallClock?: () => number;
  /** A monotonic clock in milliseconds (the duration). */
  readonly monotonic?: () => number;
}

export const DEFAULT_KEPT_SYNCS = 10;

export class SyncHistory {
  private readonly kept: SyncRecord[] = [];
  private readonly keep: number;
  private readonly wallClock: () => number;
  private readonly monotonic: () => number;
  private started = 0;
  private running: { readonly number: number; readonly start: string } | undefined;

  constructor(opts: SyncHistoryOptions = {}) {
    this.keep = Math.max(1, opts.keep ?? DEFAULT_KEPT_SYNCS);
    this.wallClock = opts.wallClock ?? Date.now;
    this.monotonic = opts.monotonic ?? (() => performance.now());
  }

  /** Opens the record of a sync (that applies these changes, when known already). */
  begin(known: SyncChanges = { services: 0, endpoints: 0 }): OpenSync {
    let changes = known;
    const number = ++this.started;
    const start = new Date(this.wallClock()).toISOString();
    const t0 = this.monotonic();
    const families = new Map<IPFamily, FamilySync>();
    this.running = { number, start };
    let finished = false;
    return {
      changes: (counts) => {
        if (!finished) changes = counts;
      },
      family: (family, fullSync, written) => {
        if (finished) return;
        families.set(family, {
          family,
          fullSync,
          ...(written ? { written: { count: written.count, unit: written.unit } } : {}),
        });
      },
      finish: (failure) => {
        if (finished) return;
        finished = true;
        if (this.running?.number === number) this.running = undefined;
        const list = [...families.values()];
        const kind = list.length === 0 ? "unknown" : list.some((f) => f.fullSync) ? "full" : "partial";
        this.push({
          number,
          kind,
          start,
          durationMs: Math.max(0, Math.round((this.monotonic() - t0) * 1000) / 1000),
          result: failure ? "failed" : "ok",
          ...(failure ? { error: errText(failure.error) } : {}),
          changedServices: changes.services,
          changedEndpoints: changes.endpoints,
          families: list,
        });
      },
    };
  }

  /** The sync running now, if any. */
  get inProgress(): { readonly number: number; readonly start: string } | null {
    return this.running ?? null;
  }

  /** The kept records, newest first. */
  records(): readonly SyncRecord[] {
    return this.kept;
  }

  private push(r: SyncRecord): void {
    this.kept.unshift(r);
    if (this.kept.length > this.keep) this.kept.length = this.keep;
  }
}
