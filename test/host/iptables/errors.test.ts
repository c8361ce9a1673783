import { describe, expect, test } from "bun:test";
import {
  extractLines,
  IptablesError,
  IptablesRestoreError,
  isNotFoundMessage,
  parseRestoreErrorLine,
  restoreErrorReason,
} from "../../../src/host/iptables/errors.ts";

// stderr as iptables 1.8.9 prints it (recorded in network namespaces), with the line it blames.
const SAMPLES: [string, string, number | undefined, string][] = [
  [
    "legacy, jump to a missing chain",
    "iptables-restore v1.8.9 (legacy): Couldn't load target `KUBE-SEP-X':No such file or directory\n\nError occurred at line: 5\nTry `iptables-restore -h' or 'iptables-restore --help' for more information.\n",
    5,
    "Couldn't load target `KUBE-SEP-X':No such file or directory",
  ],
  [
    "nft, jump to a missing chain (blamed on COMMIT)",
    "iptables-nft-restore v1.8.9 (nf_tables): Chain 'KUBE-SEP-X' does not exist\nError occurred at line: 7\nTry `iptables-nft-restore -h' or 'iptables-nft-restore --help' for more information.\n",
    7,
    "Chain 'KUBE-SEP-X' does not exist",
  ],
  ["legacy, command failed", "iptables-restore: line 42 failed\n", 42, "line 42 failed"],
  [
    "nft, command failed with a reason",
    "iptables-nft-restore: line 2 failed: No chain/target/match by that name.\n",
    2,
    "line 2 failed: No chain/target/match by that name.",
  ],
  [
    "nft, kernel refused a chain deletion (exit 4)",
    "iptables-nft-restore v1.8.9 (nf_tables): \nline 3: CHAIN_DEL failed (Device or resource busy): chain KUBE-SEP-C\n",
    3,
    "line 3: CHAIN_DEL failed (Device or resource busy): chain KUBE-SEP-C",
  ],
  ["unterminated table", "iptables-restore: COMMIT expected at line 4\n", 4, "COMMIT expected at line 4"],
  [
    "stray text (no banner)",
    "Bad argument `bogus'\nError occurred at line: 3\nTry `iptables-restore -h' or 'iptables-restore --help' for more information.\n",
    3,
    "Bad argument `bogus'",
  ],
  [
    "ip6tables legacy, long chain name",
    "ip6tables-restore v1.8.9 (legacy): Invalid chain name `KUBE-SVC-ABCDEFGHIJKLMNOPQRSTU' (28 chars max)\nError occurred at line: 2\nTry `ip6tables-restore -h' or 'ip6tables-restore --help' for more information.\n",
    2,
    "Invalid chain name `KUBE-SVC-ABCDEFGHIJKLMNOPQRSTU' (28 chars max)",
  ],
  [
    "lock timeout names no line",
    "Another app is currently holding the xtables lock. Stopped waiting after 5s.\n",
    undefined,
    "Another app is currently holding the xtables lock. Stopped waiting after 5s.",
  ],
  [
    "deprecation notice is noise",
    "Ignoring deprecated --wait-interval option.\niptables-restore: line 9 failed\n",
    9,
    "line 9 failed",
  ],
];

describe("restore error parsing", () => {
  for (const [name, stderr, line, reason] of SAMPLES) {
    test(name, () => {
      expect(parseRestoreErrorLine(stderr)).toBe(line);
      expect(restoreErrorReason(stderr)).toBe(reason);
    });
  }

  test("line 0 and garbage are not line numbers", () => {
    expect(parseRestoreErrorLine("iptables-restore: line 0 failed")).toBeUndefined();
    expect(parseRestoreErrorLine("")).toBeUndefined();
  });
});

describe("extractLines", () => {
  const data = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join("\n");

  test("three lines either side, numbered from 1", () => {
    expect(extractLines(data, 5, 3)).toEqual(
      [2, 3, 4, 5, 6, 7, 8].map((n) => ({ line: n, text: `line ${n}` })),
    );
  });

  test("clipped at the start and the end", () => {
    expect(extractLines(data, 1, 3).map((l) => l.line)).toEqual([1, 2, 3, 4]);
    expect(extractLines(data, 10, 3).map((l) => l.line)).toEqual([7, 8, 9, 10]);
  });

  test("a line past the end (COMMIT expected at N+1) yields the tail, and a trailing newline adds no line", () => {
    expect(extractLines(`${data}\n`, 11, 3).map((l) => l.line)).toEqual([8, 9, 10]);
  });

  test("an input in pieces reads as its concatenation, however it is cut", () => {
    const texts = ["", "\n", "a", "a\n", "a\n\nb", `${data}\n`, data, "\n\nx\ny\n\n"];
    for (const text of texts) {
      // Every way of cutting the text in two or three pieces, empty pieces included.
      for (let i = 0; i <= text.length; i++) {
        for (let j = i; j <= text.length; j++) {
          const pieces = [text.slice(0, i), text.slice(i, j), text.slice(j)];
          for (let line = 1; line <= 13; line++) {
            expect(extractLines(pieces, line, 3)).toEqual(extractLines(text, line, 3));
          }
        }
      }
    }
    expect(extractLines([], 1, 3)).toEqual(extractLines("", 1, 3));
  });
});

describe("IptablesRestoreError", () => {
  const input = [
    "*nat",
    ":KUBE-SERVICES - [0:0]",
    ":KUBE-SVC-A - [0:0]",
    "-A KUBE-SERVICES -j KUBE-SVC-A",
    "-A KUBE-SVC-A -j KUBE-SEP-GONE",
    "-A KUBE-SVC-A -j RETURN",
    "-A KUBE-SERVICES -j RETURN",
    "-A KUBE-SERVICES -j ACCEPT",
    "COMMIT",
    "",
  ].join("\n");
  const stderr =
    "iptables-restore v1.8.9 (legacy): Couldn't load target `KUBE-SEP-GONE':No such file or directory\n\nError occurred at line: 5\nTry `iptables-restore -h' or 'iptables-restore --help' for more information.\n";

  test("carries the line, the reason and numbered context", () => {
    const err = new IptablesRestoreError("iptables-legacy-restore", ["--noflush"], 2, stderr, input);
    expect(err).toBeInstanceOf(IptablesError);
    expect(err.line).toBe(5);
    expect(err.exitCode).toBe(2);
    expect(err.context.map((l) => l.line)).toEqual([2, 3, 4, 5, 6, 7, 8]);
    expect(err.context[3]).toEqual({ line: 5, text: "-A KUBE-SVC-A -j KUBE-SEP-GONE" });
    expect(err.message).toContain("input error on line 5");
  });

  test("formatForLog marks the blamed line", () => {
    const err = new IptablesRestoreError("iptables-legacy-restore", [], 2, stderr, input);
    expect(err.formatForLog()).toBe(
      [
        "iptables-legacy-restore failed (exit code 2) at line 5: Couldn't load target `KUBE-SEP-GONE':No such file or directory",
        "  2: :KUBE-SERVICES - [0:0]",
        "  3: :KUBE-SVC-A - [0:0]",
        "  4: -A KUBE-SERVICES -j KUBE-SVC-A",
        "> 5: -A KUBE-SVC-A -j KUBE-SEP-GONE",
        "  6: -A KUBE-SVC-A -j RETURN",
        "  7: -A KUBE-SERVICES -j RETURN",
        "  8: -A KUBE-SERVICES -j ACCEPT",
      ].join("\n"),
    );
  });

  test("without a line there is no context, and exit 4 is a resource problem", () => {
    const err = new IptablesRestoreError(
      "iptables-legacy-restore",
      ["-w", "5"],
      4,
      "Another app is currently holding the xtables lock. Stopped waiting after 5s.\n",
      input,
    );
    expect(err.line).toBeUndefined();
    expect(err.context).toEqual([]);
    expect(err.isResourceProblem).toBe(true);
    expect(err.formatForLog()).toBe(
      "iptables-legacy-restore failed (exit code 4): Another app is currently holding the xtables lock. Stopped waiting after 5s.",
    );
  });
});

describe("IptablesError", () => {
  test("not-found messages of both backends are recognised", () => {
    expect(isNotFoundMessage("iptables: No chain/target/match by that name.\n")).toBe(true);
    expect(isNotFoundMessage("iptables: Bad rule (does a matching rule exist in that chain?).\n")).toBe(true);
    expect(isNotFoundMessage("iptables v1.8.9 (nf_tables): Chain 'X' does not exist")).toBe(true);
    expect(isNotFoundMessage("iptables: Too many links.\n")).toBe(false);
  });

  test("message names the command, exit code and the first meaningful stderr line", () => {
    const err = new IptablesError("iptables-nft", ["-X", "KUBE-A", "-t", "nat"], 4, "# Warning: x\nbusy\n");
    expect(err.message).toBe("iptables-nft -X KUBE-A -t nat: exit code 4: busy");
    expect(err.isResourceProblem).toBe(true);
    expect(err.isNotFound()).toBe(false);
  });
});
