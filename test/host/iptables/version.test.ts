import { describe, expect, test } from "bun:test";
import {
  iptablesWaitFlags,
  modeBackend,
  parseIptablesVersion,
  restoreWaitFlags,
  supportsRandomFully,
} from "../../../src/host/iptables/version.ts";

describe("parseIptablesVersion", () => {
  const table: [string, ReturnType<typeof parseIptablesVersion>][] = [
    ["iptables v1.8.9 (legacy)\n", { version: "1.8.9", mode: "legacy" }],
    ["iptables v1.8.7 (nf_tables)\n", { version: "1.8.7", mode: "nf_tables" }],
    ["ip6tables-restore v1.8.10 (nf_tables)\n", { version: "1.8.10", mode: "nf_tables" }],
    ["iptables v1.6.1\n", { version: "1.6.1" }],
    ["iptables v1.4.21", { version: "1.4.21" }],
    ["iptables: command not found", undefined],
    ["", undefined],
  ];
  for (const [output, want] of table) {
    test(JSON.stringify(output), () => {
      expect(parseIptablesVersion(output)).toEqual(want);
    });
  }

  test("the mode names the backend", () => {
    expect(modeBackend("legacy")).toBe("legacy");
    expect(modeBackend("nf_tables")).toBe("nft");
    expect(modeBackend(undefined)).toBeUndefined();
  });
});

describe("lock flags by version (upstream's thresholds)", () => {
  const iptables: [string, string[]][] = [
    ["0.55.55", []],
    ["1.4.19", []],
    ["1.4.20", ["-w"]],
    ["1.4.21", ["-w"]],
    ["1.4.22", ["-w", "5"]],
    ["1.6.0", ["-w", "5"]],
    ["1.6.1", ["-w", "5"]],
    ["1.8.9", ["-w", "5"]],
    ["2.0.0", ["-w", "5"]],
    ["garbage", []],
  ];
  for (const [version, want] of iptables) {
    test(`iptables ${version}`, () => {
      expect(iptablesWaitFlags(version)).toEqual(want);
    });
  }

  test("iptables-restore: full flags from 1.6.2, bare -w when an older restore knows --version", () => {
    expect(restoreWaitFlags("1.6.2", false)).toEqual(["-w", "5"]);
    expect(restoreWaitFlags("1.8.9", false)).toEqual(["-w", "5"]);
    expect(restoreWaitFlags("1.6.1", true)).toEqual(["-w"]);
    expect(restoreWaitFlags("1.6.1", false)).toEqual([]);
    expect(restoreWaitFlags("1.4.21", false)).toEqual([]);
  });

  test("MASQUERADE --random-fully from 1.6.2", () => {
    expect(supportsRandomFully("1.6.1")).toBe(false);
    expect(supportsRandomFully("1.6.2")).toBe(true);
    expect(supportsRandomFully("1.8.9")).toBe(true);
    expect(supportsRandomFully("nope")).toBe(false);
  });
});
