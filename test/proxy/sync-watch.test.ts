import { describe, expect, test } from "bun:test";
import { SyncWatch } from "../../src/proxy/sync-watch.ts";

describe("SyncWatch", () => {
  test("a mark taken between syncs holds until a sync starts, and moves again when it ends", async () => {
    const w = new SyncWatch();
    const mark = w.mark();
    expect(w.changedSince(mark)).toBe(false);
    let finish = () => {};
    const run = w.watch(() => new Promise<void>((r) => (finish = r)));
    expect(w.changedSince(mark)).toBe(true);
    const during = w.mark();
    finish();
    await run;
    expect(w.changedSince(during)).toBe(true);
  });

  test("idle() waits for the sync under way and does not fail with it; the sync's caller sees the failure", async () => {
    const w = new SyncWatch();
    let fail = (_: Error) => {};
    const run = w.watch(() => new Promise<void>((_, reject) => (fail = reject)));
    let idle = false;
    const waiting = w.idle().then(() => {
      idle = true;
    });
    expect(idle).toBe(false);
    fail(new Error("restore failed"));
    await expect(run).rejects.toThrow("restore failed");
    await waiting;
    expect(idle).toBe(true);
  });
});
