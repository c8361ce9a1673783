import { describe, expect, test } from "bun:test";
import { boundFor, countNewlines, ReadAllowance } from "../../src/host/tool-bound.ts";

const bound = { baseMs: 60_000, perThousandLinesMs: 15_000 };

describe("boundFor", () => {
  test("a base, plus an allowance for every whole 1,000 lines", () => {
    expect(boundFor(bound, 0)).toBe(60_000);
    expect(boundFor(bound, 999)).toBe(60_000);
    expect(boundFor(bound, 1000)).toBe(75_000);
    expect(boundFor(bound, 1999)).toBe(75_000);
    expect(boundFor(bound, 20_002)).toBe(60_000 + 20 * 15_000);
  });

  test("a count that is no count leaves the base", () => {
    expect(boundFor(bound, -5)).toBe(60_000);
    expect(boundFor(bound, Number.NaN)).toBe(60_000);
    expect(boundFor(bound, Number.POSITIVE_INFINITY)).toBe(60_000);
  });
});

describe("countNewlines", () => {
  test("counts over one text or its pieces, wherever the pieces are cut", () => {
    expect(countNewlines("")).toBe(0);
    expect(countNewlines("a\nb\n")).toBe(2);
    expect(countNewlines("a\nb")).toBe(1);
    expect(countNewlines(["a\n", "b", "\nc\n"])).toBe(3);
    expect(countNewlines([])).toBe(0);
  });
});

describe("ReadAllowance", () => {
  test("the first read has the base", () => {
    expect(new ReadAllowance(bound).nextMs()).toBe(60_000);
  });

  test("the next read is sized by what the last one printed plus what was written since", () => {
    const reads = new ReadAllowance(bound);
    reads.read("line\n".repeat(2500));
    expect(reads.nextMs()).toBe(60_000 + 2 * 15_000);
    reads.wrote(600);
    expect(reads.nextMs()).toBe(60_000 + 3 * 15_000);
    reads.read("line\n");
    expect(reads.nextMs()).toBe(60_000);
  });

  test("a read that timed out doubles the next one's bound, until a read gets through", () => {
    const reads = new ReadAllowance(bound);
    reads.timedOut(reads.nextMs());
    expect(reads.nextMs()).toBe(120_000);
    reads.timedOut(reads.nextMs());
    expect(reads.nextMs()).toBe(240_000);
    reads.read("line\n".repeat(20_000));
    expect(reads.nextMs()).toBe(60_000 + 20 * 15_000);
  });
});
