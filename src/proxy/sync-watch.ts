// Lets a reader of the kernel between syncs (a drift check) know whether a sync ran while it
// read: the proxier hands each sync to watch(), the reader waits for idle(), takes a mark, reads,
// and asks changedSince(mark). A sync's start and its end both move the mark.

export class SyncWatch {
  private generation = 0;
  private current: Promise<void> = Promise.resolve();

  /** Runs one sync, counted at its start and its end; its result (or failure) is the caller's. */
  watch(sync: () => Promise<void>): Promise<void> {
    this.generation++;
    const run = sync().finally(() => {
      this.generation++;
    });
    this.current = run.catch(() => {});
    return run;
  }

  /** Resolves once the sync under way, if any, has ended (whatever its outcome). */
  idle(): Promise<void> {
    return this.current;
  }

  /** What changedSince compares with. */
  mark(): number {
    return this.generation;
  }

  /** True when a sync started or ended since `mark` was taken. */
  changedSince(mark: number): boolean {
    return mark !== this.generation;
  }
}
