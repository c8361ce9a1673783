import { describe, expect, test } from "bun:test";
import {
  formatRuleArgs,
  quoteSaveString,
  ruleTarget,
  splitRuleLine,
} from "../../../src/host/iptables/rule-args.ts";

describe("splitRuleLine", () => {
  const cases: [string, string[]][] = [
    ["-A X -j ACCEPT", ["-A", "X", "-j", "ACCEPT"]],
    [
      '-A X -m comment --comment "ns/svc:p cluster IP" -j Y',
      ["-A", "X", "-m", "comment", "--comment", "ns/svc:p cluster IP", "-j", "Y"],
    ],
    ['-A X --comment "a\\"b"', ["-A", "X", "--comment", 'a"b']],
    ['-A X --comment ""', ["-A", "X", "--comment", ""]],
    ["  -A\tX   -j  DROP  ", ["-A", "X", "-j", "DROP"]],
    // As iptables-restore 1.8.9 splits them (test/host/iptables/fake-vs-real.test.ts asks it).
    ['--comment "ab"cd', ["--comment", "ab", "cd"]],
    ['--comment ab"c d"', ["--comment", "abc d"]],
    ["--comment a\\b", ["--comment", "a\\b"]],
    ['--comment "a\\x"', ["--comment", "ax"]],
    ["--comment a\rb", ["--comment", "a\rb"]],
    ['--comment "open', ["--comment", "open\n"]],
    ['--comment "dangling\\', ["--comment", "dangling\n"]],
    ["-A X\0 -j ACCEPT", ["-A", "X"]],
  ];
  for (const [line, want] of cases) {
    test(JSON.stringify(line), () => {
      expect(splitRuleLine(line)).toEqual(want);
    });
  }
});

describe("formatRuleArgs (iptables-save's canonical text)", () => {
  test("comments are quoted unless made of [A-Za-z0-9_-]", () => {
    expect(quoteSaveString("plain")).toBe("plain");
    expect(quoteSaveString("kubernetes-forwarding_1")).toBe("kubernetes-forwarding_1");
    expect(quoteSaveString("ns/svc:http")).toBe('"ns/svc:http"');
    expect(quoteSaveString('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(formatRuleArgs(["-m", "comment", "--comment", "plain", "-j", "ACCEPT"])).toBe(
      "-m comment --comment plain -j ACCEPT",
    );
  });

  test("bare addresses get their host prefix", () => {
    expect(formatRuleArgs(["-s", "10.0.0.1", "-d", "10.0.0.0/8", "-j", "RETURN"])).toBe(
      "-s 10.0.0.1/32 -d 10.0.0.0/8 -j RETURN",
    );
    expect(formatRuleArgs(["!", "-d", "fd00::1", "-j", "RETURN"], "IPv6")).toBe("! -d fd00::1/128 -j RETURN");
  });

  test("the target of -j and -g", () => {
    expect(ruleTarget(["-p", "tcp", "-j", "KUBE-SVC-X"])).toBe("KUBE-SVC-X");
    expect(ruleTarget(["-m", "comment", "--comment", "-j", "-j", "RETURN"])).toBe("RETURN");
    expect(ruleTarget(["-g", "KUBE-FW"])).toBe("KUBE-FW");
    expect(ruleTarget(["-m", "mark"])).toBeUndefined();
  });
});
