// DistinctStrings against a Set: the same members, in first-added order, whatever the strings
// (collisions, growth past the size expected, empty and non-ASCII strings).

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { DistinctStrings } from "../../src/util/distinct-strings.ts";

describe("DistinctStrings", () => {
  test("holds what a Set holds, in order, and says which adds were new (generated lists)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom("a", "b", "é", "")), {
          maxLength: 300,
        }),
        fc.nat(400),
        (list, expected) => {
          const model = new Set<string>();
          const d = new DistinctStrings(expected);
          for (const s of list) {
            expect(d.add(s)).toBe(!model.has(s));
            model.add(s);
          }
          expect(d.values).toEqual([...model]);
          expect(d.size).toBe(model.size);
          for (const s of list) expect(d.has(s)).toBe(true);
          expect(d.has("not in any list: too long")).toBe(false);
        },
      ),
      { numRuns: 500, seed: 3903 },
    );
  });

  test("100,000 addresses with every one repeated: 100,000 kept, in order", () => {
    const ips = Array.from({ length: 100_000 }, (_, i) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    const d = new DistinctStrings(10);
    for (const ip of ips) d.add(ip);
    for (const ip of ips) expect(d.add(ip)).toBe(false);
    expect(d.values).toEqual(ips);
  });
});
