import { describe, expect, test } from "bun:test";
import { StringTable } from "../../../src/modes/nftables/string-table.ts";

describe("StringTable", () => {
  test("agrees with a Map through adds, replaces and deletes, one entry and many", () => {
    const table = new StringTable<number>();
    const map = new Map<string, number>();
    let seed = 7;
    const next = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    for (let step = 0; step < 20_000; step++) {
      // Few keys early (the one-entry form and its way to arrays), more later (growth, reuse of deleted slots).
      const key = `10.0.${next(step < 2000 ? 3 : 700)}.1`;
      if (next(3) === 0) {
        table.delete(key);
        map.delete(key);
      } else {
        table.set(key, step);
        map.set(key, step);
      }
      expect(table.get(key)).toBe(map.get(key));
      expect(table.size).toBe(map.size);
    }
    for (const [k, v] of map) expect(table.get(k)).toBe(v);
    expect(table.get("10.0.9999.1")).toBeUndefined();
  });
});
