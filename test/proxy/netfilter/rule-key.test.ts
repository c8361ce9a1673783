// ruleKey: the same rule as the restore input writes it and as iptables-save prints it has one
// key (the pairs below are what iptables-save 1.8.9 printed for the proxy's own lines), options
// in any order have one key, and rules that differ in what they match or do have different keys.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { splitSavedRule } from "../../../src/host/iptables/rule-args.ts";
import { ruleKey } from "../../../src/proxy/netfilter/rule-key.ts";

/** [as written, as iptables-save prints it] */
const SAME: readonly [string, string][] = [
  [
    '-m comment --comment "default/web:http cluster IP" -m tcp -p tcp -d 198.51.100.10 --dport 80 -j KUBE-SVC-ABC',
    '-d 198.51.100.10/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-ABC',
  ],
  [
    '-m comment --comment "kubernetes forwarding rules" -m mark --mark 0x00004000/0x00004000 -j ACCEPT',
    '-m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT',
  ],
  ["-j MARK --xor-mark 0x00004000", "-j MARK --set-xmark 0x4000/0x0"],
  ["-j MARK --or-mark 0x4000", "-j MARK --set-xmark 0x4000/0x4000"],
  ["-m mark ! --mark 0x00004000/0x00004000 -j RETURN", "-m mark ! --mark 0x4000/0x4000 -j RETURN"],
  [
    "-m statistic --mode random --probability 0.3333333333 -j KUBE-SEP-X",
    "-m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-X",
  ],
  ["-p tcp -j REJECT", "-p tcp -j REJECT --reject-with icmp-port-unreachable"],
  [
    "-m recent --name KUBE-SEP-X --rcheck --seconds 10800 --reap -j KUBE-SEP-X",
    "-m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-X --mask 255.255.255.255 --rsource -j KUBE-SEP-X",
  ],
  [
    "-m recent --name KUBE-SEP-X --set -m tcp -p tcp -j DNAT --to-destination 203.0.113.1:8080",
    "-p tcp -m recent --set --name KUBE-SEP-X --mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 203.0.113.1:8080",
  ],
  ["-s 2001:db8::1 -j KUBE-MARK-MASQ", "-s 2001:db8::1/128 -j KUBE-MARK-MASQ"],
  ['--comment "a \\"quoted\\" word" -j ACCEPT', '--comment "a \\"quoted\\" word" -j ACCEPT'],
];

const DIFFERENT: readonly [string, string][] = [
  ["-s 192.0.2.1 -d 192.0.2.2 -j ACCEPT", "-s 192.0.2.2 -d 192.0.2.1 -j ACCEPT"],
  ["! -s 192.0.2.1 -j ACCEPT", "-s 192.0.2.1 -j ACCEPT"],
  ["-p tcp --dport 80 -j ACCEPT", "-p tcp --dport 81 -j ACCEPT"],
  ["-j REJECT --reject-with icmp-host-unreachable", "-j REJECT"],
  ['--comment "a b" -j ACCEPT', '--comment "a" -j ACCEPT'],
];

describe("ruleKey", () => {
  test("a rule as written and as iptables-save prints it", () => {
    for (const [written, saved] of SAME) expect(ruleKey(saved), written).toBe(ruleKey(written));
  });

  test("rules that differ in what they match or do", () => {
    for (const [a, b] of DIFFERENT) expect(ruleKey(a), `${a} / ${b}`).not.toBe(ruleKey(b));
  });

  test("options in any order have one key", () => {
    const option = fc.constantFrom(
      "-s 192.0.2.1/32",
      "! -d 198.51.100.0/24",
      "-p udp",
      '-m comment --comment "ns/svc:p external IP"',
      "--dport 53",
      "-m addrtype ! --dst-type LOCAL",
      "-j KUBE-MARK-MASQ",
    );
    fc.assert(
      fc.property(fc.uniqueArray(option, { minLength: 1 }), fc.infiniteStream(fc.nat()), (options, seeds) => {
        const shuffled = [...options];
        for (let i = shuffled.length - 1; i > 0; i--) {
          const j = seeds.next().value % (i + 1);
          [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
        }
        expect(ruleKey(shuffled.join(" "))).toBe(ruleKey(options.join(" ")));
      }),
    );
  });

  test("tokens: quotes group, backslashes escape", () => {
    expect(splitSavedRule('-m comment --comment "a b" -j X')).toEqual([
      "-m",
      "comment",
      "--comment",
      "a b",
      "-j",
      "X",
    ]);
    expect(splitSavedRule('--comment "say \\"hi\\""')).toEqual(["--comment", 'say "hi"']);
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[a-z0-9 ./:-]{1,12}$/), { minLength: 1, maxLength: 6 }),
        (words) => {
          const text = words.map((w) => `"${w}"`).join(" ");
          expect(splitSavedRule(text)).toEqual(words);
        },
      ),
    );
  });
});
