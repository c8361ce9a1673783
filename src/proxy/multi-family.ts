// A dual-stack node runs one proxier per IP family; the sync loop sees one Proxier. Both
// families are always attempted, so a failure in one never leaves the other stale.

import type { Proxier, SyncInput } from "./proxier.ts";

export class MultiFamilyProxier implements Proxier {
  private preparing: Promise<void> | undefined;

  constructor(private readonly proxiers: readonly Proxier[]) {}

  async sync(input: SyncInput): Promise<void> {
    // A first sync that finds preparation under way waits for all of it: one family's restore
    // must not hold the xtables lock while the other family's preparation waits for it.
    await this.preparing;
    // One family after the other: the kernel serialises restores anyway (xtables lock), and
    // the --dry-run plan then reads family by family.
    const failed: unknown[] = [];
    for (const [i, p] of this.proxiers.entries()) {
      // A turn of the event loop between families: what the last one scheduled for after its
      // sync (the collection of a big payload) runs before the next one builds its own.
      if (i > 0) await new Promise<void>((resolve) => setTimeout(resolve, 0));
      try {
        await p.sync(input);
      } catch (err) {
        failed.push(err);
      }
    }
    if (failed.length === 1) throw failed[0];
    if (failed.length > 1) throw new AggregateError(failed, "sync failed for every IP family");
  }

  prepare(): Promise<void> {
    // In family order, as the syncs run: the xtables lock would serialise them anyway.
    this.preparing ??= (async () => {
      for (const p of this.proxiers) await p.prepare?.();
    })();
    return this.preparing;
  }
}
