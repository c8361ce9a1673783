import { describe, expect, test } from "bun:test";
import { formatGoDuration, formatGoDurationNs, parseGoDuration } from "../../src/config/duration.ts";

describe("parseGoDuration", () => {
  const valid: [string, number][] = [
    ["30s", 30_000],
    ["1m30s", 90_000],
    ["500ms", 500],
    ["1h", 3_600_000],
    ["2h45m", 9_900_000],
    ["0s", 0],
    ["0", 0],
    ["+0", 0],
    ["1.5s", 1_500],
    [".5s", 500],
    ["1.s", 1_000],
    ["-1s", -1_000],
    ["+5s", 5_000],
    ["1500us", 1.5],
    ["1\u00b5s", 0.001],
    ["1\u03bcs", 0.001],
    ["100ns", 0.0001],
    ["1h2m3s4ms", 3_723_004],
    ["15m0s", 900_000],
    ["24h0m0s", 86_400_000],
  ];
  test.each(valid)("%p is %p ms", (text, ms) => {
    const parsed = parseGoDuration(text);
    expect(parsed).toMatchObject({ ok: true });
    if (parsed.ok) expect(parsed.ms).toBeCloseTo(ms, 9);
  });

  const invalid: [string, string][] = [
    ["30", "missing unit"],
    ["", "empty"],
    ["s", "expected a number"],
    ["1x", 'unknown unit "x"'],
    ["1e3s", 'unknown unit "e"'],
    [".s", "expected digits"],
    ["--1s", "expected a number"],
    ["1 s", "unknown unit"],
    ["30S", 'unknown unit "S"'],
    ["2562048h", "out of range"],
    ["9223372036854775808ns", "out of range"],
  ];
  test.each(invalid)("%p is rejected (%s)", (text, why) => {
    const parsed = parseGoDuration(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toContain(why);
  });

  test("accepts the largest Go duration and its negative bound", () => {
    expect(parseGoDuration("9223372036854775807ns")).toMatchObject({ ok: true, ns: 9223372036854775807n });
    expect(parseGoDuration("-9223372036854775808ns")).toMatchObject({ ok: true, ns: -9223372036854775808n });
  });
});

describe("formatGoDuration", () => {
  const cases: [number, string][] = [
    [0, "0s"],
    [30_000, "30s"],
    [90_000, "1m30s"],
    [900_000, "15m0s"],
    [3_600_000, "1h0m0s"],
    [86_400_000, "24h0m0s"],
    [9_900_000, "2h45m0s"],
    [500, "500ms"],
    [1_500, "1.5s"],
    [1.5, "1.5ms"],
    [0.0015, "1.5\u00b5s"],
    [-1_000, "-1s"],
    [3_723_004, "1h2m3.004s"],
  ];
  test.each(cases)("%p ms prints as %p", (ms, text) => {
    expect(formatGoDuration(ms)).toBe(text);
  });

  test("prints nanoseconds below a microsecond", () => {
    expect(formatGoDurationNs(7n)).toBe("7ns");
  });

  test.each(["30s", "1m30s", "2h45m0s", "1.5s", "500ms", "-3m0s", "1h0m0.25s"])(
    "%p survives parse then format",
    (text) => {
      const parsed = parseGoDuration(text);
      if (!parsed.ok) throw new Error(parsed.error);
      expect(formatGoDuration(parsed.ms)).toBe(text);
    },
  );
});
