import { describe, expect, test } from "bun:test";
import { formatGoTime, GO_ZERO_TIME } from "../../../src/proxy/healthcheck/go-time.ts";

const at = Date.UTC(2024, 4, 1, 10, 0, 0);

describe("formatGoTime", () => {
  test.each([
    ["whole second: no fraction at all", at, undefined, "2024-05-01 10:00:00 +0000 UTC"],
    ["trailing zeros dropped", at + 500, undefined, "2024-05-01 10:00:00.5 +0000 UTC"],
    ["sub-millisecond precision kept", at + 12.25, undefined, "2024-05-01 10:00:00.01225 +0000 UTC"],
    [
      "monotonic suffix with nine digits",
      at + 1500,
      at - 2000,
      "2024-05-01 10:00:01.5 +0000 UTC m=+3.500000000",
    ],
    ["never: Go's zero time", undefined, undefined, GO_ZERO_TIME],
  ] as const)("%s", (_name, ms, origin, want) => {
    expect(formatGoTime(ms, origin)).toBe(want);
  });

  test("zero time never carries a monotonic reading", () => {
    expect(formatGoTime(undefined, 0)).toBe("0001-01-01 00:00:00 +0000 UTC");
  });
});
