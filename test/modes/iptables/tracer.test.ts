// The packet-flow tracer (tracer.ts, tracer-rules.ts) on small hand-written rule sets: each
// rule form it evaluates, the hooks a packet takes, and that rule syntax it does not model
// makes it throw instead of passing a flow silently.

import { describe, expect, test } from "bun:test";
import { splitSavedRule } from "../../../src/host/iptables/rule-args.ts";
import { tracePacket } from "../../../src/host/iptables/trace.ts";
import { parseRuleTables } from "../../../src/host/iptables/trace-rules.ts";

const NODE = "192.168.0.2";

/** A nat and a filter table with kube-proxy's jumps from the built-in chains, plus `nat`/`filter` rules. */
function rules(
  nat: string[],
  filter: string[] = [],
  chains: { nat?: string[]; filter?: string[] } = {},
): string {
  return [
    "*filter",
    ":INPUT ACCEPT [0:0]",
    ":FORWARD ACCEPT [0:0]",
    ":OUTPUT ACCEPT [0:0]",
    ":KUBE-SERVICES - [0:0]",
    ...(chains.filter ?? []).map((c) => `:${c} - [0:0]`),
    "-A INPUT -m conntrack --ctstate NEW -j KUBE-SERVICES",
    "-A FORWARD -m conntrack --ctstate NEW -j KUBE-SERVICES",
    "-A OUTPUT -m conntrack --ctstate NEW -j KUBE-SERVICES",
    ...filter,
    "COMMIT",
    "*nat",
    ":PREROUTING ACCEPT [0:0]",
    ":OUTPUT ACCEPT [0:0]",
    ":POSTROUTING ACCEPT [0:0]",
    ":KUBE-SERVICES - [0:0]",
    ":KUBE-MARK-MASQ - [0:0]",
    ":KUBE-POSTROUTING - [0:0]",
    ...(chains.nat ?? []).map((c) => `:${c} - [0:0]`),
    "-A PREROUTING -j KUBE-SERVICES",
    "-A OUTPUT -j KUBE-SERVICES",
    "-A POSTROUTING -j KUBE-POSTROUTING",
    "-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000",
    "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN",
    "-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000",
    "-A KUBE-POSTROUTING -j MASQUERADE",
    ...nat,
    "COMMIT",
    "",
  ].join("\n");
}

const trace = (text: string, source: string, destination: string, port = 80, protocol = "tcp") =>
  tracePacket(text, [NODE], { source, destination, port, protocol });

describe("iptables packet-flow tracer", () => {
  test("words: quoted comments with spaces and escaped quotes", () => {
    expect(splitSavedRule('-A X -m comment --comment "a \\"b\\" c" -j Y')).toEqual([
      "-A",
      "X",
      "-m",
      "comment",
      "--comment",
      'a "b" c',
      "-j",
      "Y",
    ]);
  });

  test("every branch of a -m statistic chain is reached, in rule order; --rcheck never matches", () => {
    const text = rules(
      [
        "-A KUBE-SERVICES -d 172.30.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A",
        "-A KUBE-SVC-A -m recent --name KUBE-SEP-3 --rcheck --seconds 10800 --reap -j KUBE-SEP-3",
        "-A KUBE-SVC-A -m statistic --mode random --probability 0.3333333333 -j KUBE-SEP-1",
        "-A KUBE-SVC-A -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-2",
        "-A KUBE-SVC-A -j KUBE-SEP-3",
        "-A KUBE-SEP-1 -p tcp -m tcp -j DNAT --to-destination 10.0.1.1:8080",
        "-A KUBE-SEP-2 -p tcp -m tcp -j DNAT --to-destination 10.0.1.2:8080",
        "-A KUBE-SEP-3 -m recent --name KUBE-SEP-3 --set -p tcp -m tcp -j DNAT --to-destination 10.0.1.3:8080",
      ],
      [],
      { nat: ["KUBE-SVC-A", "KUBE-SEP-1", "KUBE-SEP-2", "KUBE-SEP-3"] },
    );
    expect(trace(text, "10.0.0.2", "172.30.0.1").output).toBe("10.0.1.1:8080, 10.0.1.2:8080, 10.0.1.3:8080");
    expect(trace(text, "10.0.0.2", "172.30.0.1", 81).output).toBe("");
    expect(trace(text, "10.0.0.2", "172.30.0.1", 80, "udp").output).toBe("");
  });

  test("masquerade comes from the mark KUBE-POSTROUTING sees; negated CIDRs and addrtype", () => {
    const text = rules(
      [
        "-A KUBE-SERVICES -d 172.30.0.1/32 -j KUBE-SVC-A",
        "-A KUBE-SVC-A ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ",
        "-A KUBE-SVC-A -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ",
        "-A KUBE-SVC-A -j DNAT --to-destination 10.0.1.1:80",
      ],
      [],
      { nat: ["KUBE-SVC-A"] },
    );
    expect(trace(text, "10.0.0.2", "172.30.0.1")).toMatchObject({ output: "10.0.1.1:80", masq: false });
    expect(trace(text, "203.0.113.2", "172.30.0.1")).toMatchObject({ output: "10.0.1.1:80", masq: true });
    expect(trace(text, NODE, "172.30.0.1")).toMatchObject({ output: "10.0.1.1:80", masq: true });
  });

  test("locally originated packets take nat OUTPUT, others PREROUTING; INPUT vs FORWARD after DNAT", () => {
    const text = rules(
      ["-A OUTPUT -d 172.30.0.9/32 -j DNAT --to-destination 10.0.9.9:80"],
      [
        "-A KUBE-SERVICES -d 10.0.9.9/32 -j REJECT",
        `-A INPUT -d ${NODE}/32 -p tcp -m tcp --dport 30000 -j ACCEPT`,
        "-A FORWARD -d 203.0.113.50/32 -j DROP",
      ],
    );
    expect(trace(text, NODE, "172.30.0.9").output).toBe("REJECT");
    expect(trace(text, "10.0.0.2", "172.30.0.9").output).toBe("");
    expect(trace(text, "203.0.113.2", NODE, 30000).output).toBe("ACCEPT");
    expect(trace(text, "203.0.113.2", "203.0.113.50").output).toBe("DROP");
    expect(trace(text, "203.0.113.2", NODE, 30001).output).toBe("");
  });

  test("conntrack state is NEW, plus DNAT once translated", () => {
    const text = rules(
      ["-A KUBE-SERVICES -d 127.0.0.1/32 -p tcp --dport 3001 -j DNAT --to-destination 10.0.1.1:80"],
      ["-A INPUT -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP"],
    );
    expect(trace(text, NODE, "127.0.0.1", 3001).output).toBe("10.0.1.1:80");
    expect(trace(text, NODE, "127.0.0.1", 3002).output).toBe("DROP");
  });

  test("IPv6 destinations are bracketed", () => {
    const text = rules(["-A KUBE-SERVICES -d fd00::1/128 -j DNAT --to-destination [fd00:10::5]:80"]);
    expect(
      tracePacket(text, ["2001:db8::1"], { source: "fd00:10::2", destination: "fd00::1", port: 80 }).output,
    ).toBe("[fd00:10::5]:80");
  });

  test("iptables-save's --set-xmark VALUE/MASK marks as --or-mark and --xor-mark do", () => {
    const text = rules(["-A KUBE-SERVICES -d 10.96.0.1/32 -j KUBE-MARK-MASQ"])
      .replace("-j MARK --or-mark 0x4000", "-j MARK --set-xmark 0x4000/0x4000")
      .replace("-j MARK --xor-mark 0x4000", "-j MARK --set-xmark 0x4000/0x0");
    expect(text).toContain("--set-xmark 0x4000/0x0");
    expect(trace(text, "10.0.0.2", "10.96.0.1").masq).toBe(true);
    expect(trace(text, "10.0.0.2", "10.96.0.2").masq).toBe(false);
  });

  test("paths carry the chance of each -m statistic branch", () => {
    const text = rules(
      [
        "-A KUBE-SERVICES -d 10.96.0.1/32 -j KUBE-SVC-A",
        "-A KUBE-SVC-A -m statistic --mode random --probability 0.3333333333 -j KUBE-SEP-1",
        "-A KUBE-SVC-A -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-2",
        "-A KUBE-SVC-A -j KUBE-SEP-3",
        "-A KUBE-SEP-1 -p tcp -j DNAT --to-destination 10.0.1.1:80",
        "-A KUBE-SEP-2 -p tcp -j DNAT --to-destination 10.0.1.2:80",
        "-A KUBE-SEP-3 -p tcp -j DNAT --to-destination 10.0.1.3:80",
      ],
      [],
      { nat: ["KUBE-SVC-A", "KUBE-SEP-1", "KUBE-SEP-2", "KUBE-SEP-3"] },
    );
    const r = trace(text, "10.0.0.2", "10.96.0.1");
    expect(r.paths.map((p) => [p.dnat, Math.round(p.probability * 1000) / 1000])).toEqual([
      ["10.0.1.1:80", 0.333],
      ["10.0.1.2:80", 0.333],
      ["10.0.1.3:80", 0.333],
    ]);
    expect(r.paths[0]?.trail).toContain(
      "nat: -A KUBE-SVC-A -m statistic --mode random --probability 0.3333333333 -j KUBE-SEP-1",
    );
  });

  test("rule syntax it does not model throws", () => {
    for (const rule of [
      "-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst --return-nomatch -j ACCEPT",
      "-A KUBE-SERVICES -i eth0 -j DROP",
      "-A KUBE-SERVICES -p tcp --sport 80 -j DROP",
      "-A KUBE-SERVICES -j SNAT --to-source 1.2.3.4",
      "-A KUBE-SERVICES -m multiport --dports 80,443 -j DROP",
      "-A KUBE-SERVICES -j MARK --set-mark 0x4000",
      "-A KUBE-SERVICES ! -m comment --comment x -j DROP",
    ]) {
      expect(() => parseRuleTables(rules([rule]))).toThrow();
    }
    expect(() => trace(rules(["-A KUBE-SERVICES -j KUBE-NOWHERE"]), "10.0.0.2", "1.1.1.1")).toThrow(
      /does not exist/,
    );
  });
});
