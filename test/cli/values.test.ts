import { describe, expect, test } from "bun:test";
import { findFlag } from "../../src/cli/flags.ts";
import {
  combineFlagValues,
  parseBool,
  parseFlagValue,
  parseFloatText,
  parseGoInt,
  parseList,
} from "../../src/cli/values.ts";

function spec(name: string) {
  const found = findFlag(name);
  if (!found) throw new Error(`no flag ${name}`);
  return found;
}

describe("Go-compatible scalar parsing", () => {
  test.each([
    ["42", 42],
    ["-999", -999],
    ["+7", 7],
    ["0x1F", 31],
    ["0o17", 15],
    ["017", 15],
    ["0b101", 5],
    ["1_000", 1000],
    ["0x_ff", 255],
    ["0", 0],
  ] as const)("parseGoInt(%p) = %p", (text, value) => {
    expect(parseGoInt(text)).toBe(value);
  });

  test.each(["", "1.5", "abc", "1__0", "1_", "_1", "08", "0x", "--1", "1e3"])(
    "parseGoInt(%p) is undefined",
    (text) => {
      expect(parseGoInt(text)).toBeUndefined();
    },
  );

  test.each([
    ["true", true],
    ["T", true],
    ["1", true],
    ["False", false],
    ["0", false],
    ["f", false],
  ] as const)("parseBool(%p) = %p", (text, value) => {
    expect(parseBool(text)).toBe(value);
  });

  test.each(["yes", "on", "", "tRuE"])("parseBool(%p) is undefined", (text) => {
    expect(parseBool(text)).toBeUndefined();
  });

  test.each([
    ["5", 5],
    ["7.5", 7.5],
    ["1e2", 100],
    [".5", 0.5],
  ] as const)("parseFloatText(%p) = %p", (text, value) => {
    expect(parseFloatText(text)).toBe(value);
  });

  test.each(["", "Inf", "NaN", "5qps", "1e999"])("parseFloatText(%p) is undefined", (text) => {
    expect(parseFloatText(text)).toBeUndefined();
  });

  test("lists split on commas, trim and drop empty items", () => {
    expect(parseList(" 192.0.2.0/24 , 2001:db8::/32,,")).toEqual(["192.0.2.0/24", "2001:db8::/32"]);
    expect(parseList("")).toEqual([]);
  });
});

describe("parseFlagValue by kind", () => {
  test.each([
    ["iptables-sync-period", "1m30s", 90_000],
    ["kube-api-qps", "2.5", 2.5],
    ["kube-api-burst", "20", 20],
    ["masquerade-all", "false", false],
    ["nodeport-addresses", "192.0.2.0/24,primary", ["192.0.2.0/24", "primary"]],
    ["feature-gates", "A=true, B=false", { A: true, B: false }],
    ["vmodule", "iptables=4,ipvs=2", { iptables: 4, ipvs: 2 }],
    ["output", "json", "json"],
  ] as const)("--%s=%p", (name, text, value) => {
    expect(parseFlagValue(spec(name), text)).toEqual({ ok: true, value });
  });

  test.each([
    ["iptables-sync-period", "30", "missing unit"],
    ["kube-api-burst", "ten", "must be an integer"],
    ["kube-api-burst", "3000000000", "must be within [-2147483648, 2147483647]"],
    ["v", "-1", "must be within [0, 4294967295]"],
    ["kube-api-qps", "fast", "must be a number"],
    ["cleanup", "maybe", "must be true or false"],
    ["feature-gates", "A", "must have the form key=value"],
    ["feature-gates", "A=yes", "value must be true or false"],
    ["vmodule", "iptables=high", "level must be a number"],
    ["output", "xml", "must be one of text, json"],
    ["iptables-backend", "nftables", "must be one of auto, legacy, nft"],
  ] as const)("--%s=%p fails with %p", (name, text, why) => {
    const parsed = parseFlagValue(spec(name), text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toContain(why);
  });

  test("repeated list flags append, maps merge, scalars keep the last value", () => {
    expect(combineFlagValues(spec("ipvs-exclude-cidrs"), ["192.0.2.0/24"], ["198.51.100.0/24"])).toEqual([
      "192.0.2.0/24",
      "198.51.100.0/24",
    ]);
    expect(combineFlagValues(spec("feature-gates"), { A: true }, { A: false, B: true })).toEqual({
      A: false,
      B: true,
    });
    expect(combineFlagValues(spec("v"), 2, 5)).toBe(5);
  });
});
