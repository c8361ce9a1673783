// A dual-stack node runs one proxier per IP family; the sync loop sees one Proxier. Both
// families are always attempted, so a failure in one never leaves the other stale.

import type { Proxier, SyncInput } from "./proxier.ts";

export class MultiFamilyProxier implements Proxier {
  constructor(private readonly proxiers: readonly Proxier[]) {}

  async sync(input: SyncInput): Promise<void> {
    // One family after the other: the kernel serialises restores anyway (xtables lock), and
    // the --dry-run plan then reads family by family.
    const failed: unknown[] = [];
    for (const p of this.proxiers) {
      try {
        await p.sync(input);
      } catch (err) {
        failed.push(err);
      }
    }
    if (failed.length === 1) throw failed[0];
    if (failed.length > 1) throw new AggregateError(failed, "sync failed for every IP family");
  }
}
