import { describe, expect, test } from "bun:test";
import { StringMap } from "../../src/util/string-map.ts";

describe("StringMap", () => {
  test("agrees with a Map, iteration order included, through adds, replaces, deletes and clears", () => {
    const table = new StringMap<number>();
    const map = new Map<string, number>();
    let seed = 11;
    const next = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    for (let step = 0; step < 60_000; step++) {
      // Phases of growth and of shrinking, so the arrays are compacted and the index rebuilt.
      const growing = Math.floor(step / 15_000) % 2 === 0;
      const key = `ns/svc-${next(2000)}:p${next(5)}`;
      const op = next(10);
      if (op < (growing ? 6 : 2)) {
        table.set(key, step);
        map.set(key, step);
      } else if (op < 7 && table.has(key)) {
        // A value changed where it is kept: found once, read and written there.
        const at = table.positionOf(key);
        expect(table.valueAt(at)).toBe(map.get(key)!);
        table.setValueAt(at, -step);
        map.set(key, -step);
      } else if (op < 9) {
        expect(table.delete(key)).toBe(map.delete(key));
      } else {
        expect(table.get(key)).toBe(map.get(key));
        expect(table.has(key)).toBe(map.has(key));
        expect(table.positionOf(key) >= 0).toBe(map.has(key));
      }
      expect(table.size).toBe(map.size);
      if (step % 5000 === 0) expect([...table]).toEqual([...map]);
      if (step === 40_000) {
        table.clear();
        map.clear();
        table.reserve(3000);
      }
    }
    expect([...table.keys()]).toEqual([...map.keys()]);
    expect([...table.values()]).toEqual([...map.values()]);
  });

  test("deleting during an iteration skips the deleted entries, as a Map's iteration does", () => {
    const table = new StringMap<number>();
    const map = new Map<string, number>();
    for (let i = 0; i < 200; i++) {
      table.set(`k${i}`, i);
      map.set(`k${i}`, i);
    }
    const walk = (m: StringMap<number> | Map<string, number>) => {
      const seen: string[] = [];
      for (const [k] of m) {
        seen.push(k);
        if (k === "k0") for (let i = 1; i < 150; i++) m.delete(`k${i}`);
      }
      return seen;
    };
    expect(walk(table)).toEqual(walk(map));
    expect([...table.keys()]).toEqual([...map.keys()]);
  });
});
