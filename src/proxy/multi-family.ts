// A dual-stack node runs one proxier per IP family; the sync loop sees one Proxier. Both
// families are always attempted, so a failure in one never leaves the other stale.

import type { Proxier, SyncInput } from "./proxier.ts";

export class MultiFamilyProxier implements Proxier {
  constructor(private readonly proxiers: readonly Proxier[]) {}

  async sync(input: SyncInput): Promise<void> {
    const results = await Promise.allSettled(this.proxiers.map((p) => p.sync(input)));
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed.length === 1) throw failed[0]?.reason;
    if (failed.length > 1)
      throw new AggregateError(
        failed.map((f) => f.reason),
        "sync failed for every IP family",
      );
  }
}
