import { describe, expect, test } from "bun:test";
import { formatRFC3339Nano, GO_ZERO_TIME } from "../../../src/proxy/healthcheck/go-time.ts";

const at = Date.UTC(2024, 4, 1, 10, 0, 0);

describe("formatRFC3339Nano (Go's encoding/json time text)", () => {
  test.each([
    ["whole second: no fraction at all", at, "2024-05-01T10:00:00Z"],
    ["trailing zeros dropped", at + 500, "2024-05-01T10:00:00.5Z"],
    ["sub-millisecond precision kept", at + 12.25, "2024-05-01T10:00:00.01225Z"],
    ["never: Go's zero time", undefined, GO_ZERO_TIME],
  ] as const)("%s", (_name, ms, want) => {
    expect(formatRFC3339Nano(ms)).toBe(want);
  });

  test("it is what Date parses back to the same instant (millisecond part)", () => {
    expect(Date.parse(formatRFC3339Nano(at + 123))).toBe(at + 123);
  });
});
