import { describe, expect, test } from "bun:test";
import {
  computeProbability,
  formatFixed10,
  ProbabilityCache,
} from "../../../src/modes/iptables/probability.ts";

describe("probabilities as upstream prints them (%0.10f)", () => {
  test("1/n with ten decimals", () => {
    expect(computeProbability(1)).toBe("1.0000000000");
    expect(computeProbability(2)).toBe("0.5000000000");
    expect(computeProbability(3)).toBe("0.3333333333");
    expect(computeProbability(6)).toBe("0.1666666667");
    expect(computeProbability(7)).toBe("0.1428571429");
    expect(computeProbability(1000)).toBe("0.0010000000");
  });

  test("an exact tie rounds half to even, as Go does (toFixed would round up)", () => {
    // 1/2048 = 0.00048828125 exactly: the digit before the tie is even, so it stays.
    expect(computeProbability(2048)).toBe("0.0004882812");
    expect((1 / 2048).toFixed(10)).toBe("0.0004882813");
    // 1/10240 is not exact in binary; its double is just above the tie, so it rounds up.
    expect(computeProbability(10240)).toBe("0.0000976563");
  });

  test("formatFixed10 handles values that are not 1/n", () => {
    expect(formatFixed10(0.125)).toBe("0.1250000000");
    expect(formatFixed10(1e-12)).toBe("0.0000000000");
  });

  test("the cache returns the same strings as computing afresh", () => {
    const cache = new ProbabilityCache();
    expect(cache.get(5)).toBe("0.2000000000");
    expect(cache.get(3)).toBe("0.3333333333");
    expect(cache.get(2048)).toBe(computeProbability(2048));
  });
});
