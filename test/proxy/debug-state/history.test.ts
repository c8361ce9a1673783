// The sync history behind /debug/state: one record per sync, what each family noted, the
// outcome, only the newest records kept, and the sync under way while it runs.

import { describe, expect, test } from "bun:test";
import { SyncHistory } from "../../../src/proxy/debug-state/history.ts";
import { syncRecordSchema } from "../../../src/proxy/debug-state/schema.ts";

function clocks() {
  const c = { wall: Date.UTC(2026, 0, 2, 3, 4, 5), mono: 1000 };
  return { c, opts: { wallClock: () => c.wall, monotonic: () => c.mono } };
}

describe("sync history", () => {
  test("a sync's record: start, duration, the families' notes and the outcome", () => {
    const { c, opts } = clocks();
    const h = new SyncHistory(opts);
    const s = h.begin({ services: 3, endpoints: 2 });
    expect(h.inProgress).toEqual({ number: 1, start: "2026-01-02T03:04:05.000Z" });
    s.family("IPv4", true, { count: 120, unit: "rules" });
    s.family("IPv6", true);
    c.mono += 42.5;
    s.finish();
    expect(h.inProgress).toBeNull();
    const [r] = h.records();
    expect(r).toEqual({
      number: 1,
      kind: "full",
      start: "2026-01-02T03:04:05.000Z",
      durationMs: 42.5,
      result: "ok",
      changedServices: 3,
      changedEndpoints: 2,
      families: [
        { family: "IPv4", fullSync: true, written: { count: 120, unit: "rules" } },
        { family: "IPv6", fullSync: true },
      ],
    });
    expect(syncRecordSchema.parse(r)).toEqual(r!);
  });

  test("changes told after the record opens are the record's; after it closes, ignored", () => {
    const h = new SyncHistory(clocks().opts);
    const s = h.begin();
    expect(h.inProgress?.number).toBe(1);
    s.changes({ services: 100_000, endpoints: 1 });
    s.finish();
    s.changes({ services: 7, endpoints: 7 });
    expect(h.records().map((r) => [r.changedServices, r.changedEndpoints])).toEqual([[100_000, 1]]);
  });

  test("partial when no family synced in full, full when one did, unknown when none said", () => {
    const h = new SyncHistory(clocks().opts);
    const a = h.begin({ services: 0, endpoints: 1 });
    a.family("IPv4", false, { count: 4, unit: "rules" });
    a.finish();
    const b = h.begin({ services: 0, endpoints: 1 });
    b.family("IPv4", false);
    b.family("IPv6", true);
    b.finish();
    const c = h.begin({ services: 0, endpoints: 0 });
    c.finish({ error: new Error("no proxier answered") });
    expect(h.records().map((r) => [r.number, r.kind, r.result])).toEqual([
      [3, "unknown", "failed"],
      [2, "full", "ok"],
      [1, "partial", "ok"],
    ]);
  });

  test("a failed sync keeps the error's text", () => {
    const h = new SyncHistory(clocks().opts);
    const s = h.begin({ services: 1, endpoints: 0 });
    s.family("IPv4", false);
    s.finish({ error: new Error("iptables-restore: line 3 failed") });
    expect(h.records()[0]).toMatchObject({
      kind: "partial",
      result: "failed",
      error: "iptables-restore: line 3 failed",
    });
  });

  test("only the newest records are kept, newest first", () => {
    const h = new SyncHistory({ ...clocks().opts, keep: 3 });
    for (let i = 0; i < 7; i++) h.begin({ services: i, endpoints: 0 }).finish();
    expect(h.records().map((r) => r.number)).toEqual([7, 6, 5]);
    expect(new SyncHistory().records()).toEqual([]);
  });

  test("notes after the end, or a second end, change nothing", () => {
    const h = new SyncHistory(clocks().opts);
    const s = h.begin({ services: 0, endpoints: 0 });
    s.family("IPv4", false);
    s.finish();
    s.family("IPv4", true);
    s.finish({ error: "late" });
    expect(h.records()).toHaveLength(1);
    expect(h.records()[0]).toMatchObject({ kind: "partial", result: "ok", families: [{ fullSync: false }] });
  });

  test("a family noted twice keeps its last note", () => {
    const h = new SyncHistory(clocks().opts);
    const s = h.begin({ services: 0, endpoints: 0 });
    s.family("IPv4", true, { count: 1, unit: "rules" });
    s.family("IPv4", false, { count: 2, unit: "rules" });
    s.finish();
    expect(h.records()[0]?.families).toEqual([
      { family: "IPv4", fullSync: false, written: { count: 2, unit: "rules" } },
    ]);
  });
});
