import { describe, expect, test } from "bun:test";
import {
  compareVersions,
  formatVersion,
  parseVersion,
  VersionParseError,
  versionAtLeast,
} from "../../src/util/version.ts";

describe("parseVersion", () => {
  const good: [string, [number, number, number]][] = [
    ["6.18.44-fc-v595", [6, 18, 44]],
    ["4.19.0-21-amd64", [4, 19, 0]],
    ["5.10", [5, 10, 0]],
    ["3.10.0-1160.el7.x86_64", [3, 10, 0]],
    ["v7.17", [7, 17, 0]],
    ["v6.38", [6, 38, 0]],
    ["6", [6, 0, 0]],
    ["5.15.0.1", [5, 15, 0]],
    ["  6.1.0-13-cloud-amd64\n", [6, 1, 0]],
    ["5.4.0+", [5, 4, 0]],
  ];
  for (const [input, [major, minor, patch]] of good) {
    test(`parses ${JSON.stringify(input)}`, () => {
      expect(parseVersion(input)).toEqual({ major, minor, patch });
    });
  }

  const bad = ["", "abc", "ipset v7.17", "v", "6foo", "5.10abc", "-5.10"];
  for (const input of bad) {
    test(`rejects ${JSON.stringify(input)} with an error naming the input`, () => {
      let caught: unknown;
      try {
        parseVersion(input);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(VersionParseError);
      expect((caught as VersionParseError).input).toBe(input);
      expect((caught as Error).message).toContain(JSON.stringify(input));
    });
  }
});

describe("compareVersions / versionAtLeast", () => {
  const table: [string, string, number][] = [
    ["4.19.0", "4.19", 0],
    ["4.19.1", "4.19", 1],
    ["4.18.99", "4.19", -1],
    ["5.0", "4.99.99", 1],
    ["3.10.0-1160.el7.x86_64", "4.1", -1],
    ["v7.17", "6.0", 1],
    ["v6.0", "6.0", 0],
    ["6.10", "6.9", 1],
  ];
  for (const [a, b, want] of table) {
    test(`compare ${a} with ${b} is ${want}`, () => {
      expect(compareVersions(a, b)).toBe(want);
      expect(compareVersions(b, a)).toBe(want === 0 ? 0 : -want);
      expect(versionAtLeast(a, b)).toBe(want >= 0);
    });
  }

  test("accepts parsed versions as well as strings", () => {
    const v = parseVersion("4.19.0-21-amd64");
    expect(versionAtLeast(v, { major: 4, minor: 19, patch: 0 })).toBe(true);
    expect(formatVersion(v)).toBe("4.19.0");
  });
});
