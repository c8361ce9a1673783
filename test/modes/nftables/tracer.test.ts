// The packet tracer (tracer.ts, trace-rule.ts) on small hand-written tables: which hooks a
// packet takes, jump/goto/return, verdict maps, numgen branches, NAT, masquerade, and that rule
// syntax it does not know throws instead of passing.

import { describe, expect, test } from "bun:test";
import type { FakeNftChain, FakeNftTable } from "../../../src/host/nft/testing/fake.ts";
import { type Packet, tracePacket, UNHANDLED } from "../../../src/host/nft/trace.ts";
import { UnsupportedRuleError } from "../../../src/host/nft/trace-rule.ts";

type ChainSpec = { base?: [type: string, hook: string, priority: number]; rules?: string[] };

function table(
  chains: Record<string, ChainSpec>,
  o: { sets?: Record<string, string[]>; maps?: Record<string, Record<string, string>> } = {},
): FakeNftTable {
  const t: FakeNftTable = { chains: new Map(), sets: new Map(), maps: new Map() };
  for (const [name, c] of Object.entries(chains)) {
    const chain: FakeNftChain = { rules: c.rules ?? [] };
    if (c.base) chain.base = { type: c.base[0], hook: c.base[1], priority: c.base[2] };
    t.chains.set(name, chain);
  }
  for (const [name, keys] of Object.entries(o.sets ?? {}))
    t.sets.set(name, { type: "", flags: [], elements: new Map(keys.map((k) => [k, undefined])) });
  for (const [name, elements] of Object.entries(o.maps ?? {}))
    t.maps.set(name, { type: "", elements: new Map(Object.entries(elements)) });
  return t;
}

const NODE = "192.168.0.2";
const opts = { family: "ip" as const, localIPs: [NODE] };
const pkt = (saddr: string, daddr: string, dport = 80): Packet => ({ saddr, daddr, protocol: "tcp", dport });

const NAT_PRE: ChainSpec["base"] = ["nat", "prerouting", -100];
const NAT_OUT: ChainSpec["base"] = ["nat", "output", -100];
const NAT_POST: ChainSpec["base"] = ["nat", "postrouting", 100];

describe("packet tracer", () => {
  test("nothing handles the packet: empty output, not masqueraded", () => {
    const t = table({ pre: { base: NAT_PRE, rules: ["ip daddr 10.9.9.9 dnat to 10.0.0.1:80"] } });
    expect(tracePacket(t, pkt("203.0.113.2", "10.1.1.1"), opts)).toMatchObject({ output: "", masq: false });
  });

  test("every numgen branch is followed; targets sorted; IPv6 targets in brackets", () => {
    const t = table({
      pre: {
        base: NAT_PRE,
        rules: [
          "numgen random mod 3 0 meta l4proto tcp dnat to 10.0.0.3:80",
          "numgen random mod 2 0 meta l4proto tcp dnat to 10.0.0.1:8080",
          "meta l4proto tcp dnat to 10.0.0.2:80",
        ],
      },
    });
    expect(tracePacket(t, pkt("203.0.113.2", "10.1.1.1"), opts).output).toBe(
      "10.0.0.1:8080, 10.0.0.2:80, 10.0.0.3:80",
    );
    const map = table({
      pre: {
        base: NAT_PRE,
        rules: [
          "meta l4proto tcp dnat ip6 addr . port to numgen random mod 2 map { 0 : fd00::2 . 80 , 1 : fd00::1 . 80 }",
        ],
      },
    });
    expect(
      tracePacket(map, pkt("2001:db8::9", "fd00::99"), { family: "ip6", localIPs: ["2001:db8::1"] }).output,
    ).toBe("[fd00::1]:80, [fd00::2]:80");
  });

  test("a random choice that can miss shows the miss", () => {
    const t = table({
      pre: { base: NAT_PRE, rules: ["numgen random mod 2 0 meta l4proto tcp dnat to 10.0.0.1:80"] },
    });
    expect(tracePacket(t, pkt("203.0.113.2", "10.1.1.1"), opts).output).toBe(`${UNHANDLED}, 10.0.0.1:80`);
  });

  test("goto returns to the chain that jumped to the caller; jump comes back", () => {
    const chains = (verb: string) =>
      table({
        pre: { base: NAT_PRE, rules: ["jump a", "meta l4proto tcp dnat to 10.0.0.9:80"] },
        a: { rules: [`${verb} b`, "drop"] },
        b: { rules: ["ip saddr 1.1.1.1 return"] },
      });
    expect(tracePacket(chains("goto"), pkt("203.0.113.2", "10.1.1.1"), opts).output).toBe("10.0.0.9:80");
    expect(tracePacket(chains("jump"), pkt("203.0.113.2", "10.1.1.1"), opts).output).toBe("DROP");
  });

  test("verdict maps: a hit runs its verdict, a miss goes on to the next rule", () => {
    const t = table(
      {
        pre: {
          base: NAT_PRE,
          rules: ["ip daddr . meta l4proto . th dport vmap @svc", "dnat to 10.0.0.7:80"],
        },
        s1: { rules: ["meta l4proto tcp dnat to 10.0.0.1:80"] },
      },
      { maps: { svc: { "172.30.0.1 . tcp . 80": "goto s1" } } },
    );
    expect(tracePacket(t, pkt("203.0.113.2", "172.30.0.1"), opts).output).toBe("10.0.0.1:80");
    expect(tracePacket(t, pkt("203.0.113.2", "172.30.0.1", 81), opts).output).toBe("10.0.0.7:80");
    const nodePorts = table(
      {
        pre: {
          base: NAT_PRE,
          rules: ["fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @np"],
        },
        s1: { rules: ["meta l4proto tcp dnat to 10.0.0.1:80"] },
      },
      { maps: { np: { "tcp . 3001": "goto s1" } } },
    );
    expect(tracePacket(nodePorts, pkt("203.0.113.2", NODE, 3001), opts).output).toBe("10.0.0.1:80");
    expect(tracePacket(nodePorts, pkt("203.0.113.2", "127.0.0.1", 3001), opts).output).toBe("");
    expect(tracePacket(nodePorts, pkt("203.0.113.2", "192.168.7.7", 3001), opts).output).toBe("");
  });

  test("a local source takes output, others prerouting; after DNAT, input or forward by the destination", () => {
    const t = table({
      "f-pre": { base: ["filter", "prerouting", -110], rules: ["ip saddr 203.0.113.0/24 drop"] },
      "f-out": { base: ["filter", "output", -110], rules: ["ip daddr 10.9.9.9 reject"] },
      "nat-pre": { base: NAT_PRE, rules: ["ip saddr 198.51.100.1 dnat to 192.168.0.2:22"] },
      input: { base: ["filter", "input", 0], rules: ["th dport 22 reject"] },
      forward: { base: ["filter", "forward", 0], rules: ["ip daddr 10.8.8.8 drop"] },
    });
    expect(tracePacket(t, pkt("203.0.113.2", "10.1.1.1"), opts).output).toBe("DROP");
    expect(tracePacket(t, pkt(NODE, "10.9.9.9"), opts).output).toBe("REJECT");
    expect(tracePacket(t, pkt("10.0.0.2", "10.9.9.9"), opts).output).toBe("");
    expect(tracePacket(t, pkt("198.51.100.1", "10.1.1.1"), opts).output).toBe("REJECT");
    expect(tracePacket(t, pkt("198.51.100.2", "10.8.8.8"), opts).output).toBe("DROP");
    expect(
      tracePacket(t, pkt("198.51.100.2", "10.8.8.8"), { ...opts, localIPs: [NODE, "198.51.100.2"] }).output,
    ).toBe("");
  });

  test("masquerade: by mark, or by hairpin set after DNAT, only on the way out", () => {
    const t = table(
      {
        "nat-pre": {
          base: NAT_PRE,
          rules: ["ip saddr != 10.0.0.0/8 mark set mark or 0x4000", "meta l4proto tcp dnat to 10.0.0.1:80"],
        },
        "nat-out": {
          base: NAT_OUT,
          rules: ["fib saddr type local mark set mark or 0x4000", "dnat to 10.0.0.1:80"],
        },
        "nat-post": {
          base: NAT_POST,
          rules: [
            "mark and 0x4000 != 0 mark set mark xor 0x4000 masquerade fully-random",
            "ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin masquerade fully-random",
          ],
        },
      },
      { sets: { hairpin: ["10.0.0.1 . 10.0.0.1 . tcp . 80"] } },
    );
    expect(tracePacket(t, pkt("10.0.0.2", "172.30.0.1"), opts).masq).toBe(false);
    expect(tracePacket(t, pkt("10.0.0.1", "172.30.0.1"), opts).masq).toBe(true);
    expect(tracePacket(t, pkt("203.0.113.2", "172.30.0.1"), opts).masq).toBe(true);
    expect(tracePacket(t, pkt(NODE, "172.30.0.1"), opts)).toMatchObject({
      output: "10.0.0.1:80",
      masq: true,
    });
  });

  test("unknown syntax, a NAT statement outside a NAT chain, and missing chains or sets throw", () => {
    const run = (rules: string[], base: ChainSpec["base"] = NAT_PRE) =>
      tracePacket(table({ c: { base, rules } }), pkt("203.0.113.2", "10.1.1.1"), opts);
    expect(() => run(['iifname "eth0" accept'])).toThrow(UnsupportedRuleError);
    expect(() => run(["tcp dport 80 accept"])).toThrow(UnsupportedRuleError);
    expect(() => run(["ip daddr 10.1.1.1 log prefix x"])).toThrow(UnsupportedRuleError);
    expect(() => run(["ct status snat accept"])).toThrow(UnsupportedRuleError);
    expect(() => run(["ip6 daddr ::1 accept"])).toThrow(UnsupportedRuleError);
    expect(() => run(["dnat to 10.0.0.1:80"], ["filter", "prerouting", 0])).toThrow(UnsupportedRuleError);
    expect(() => run(["masquerade"])).toThrow(UnsupportedRuleError);
    expect(() => run(["accept drop"])).toThrow(UnsupportedRuleError);
    expect(() => run(["jump nowhere"])).toThrow("missing chain");
    expect(() => run(["ip daddr @nowhere accept"])).toThrow(UnsupportedRuleError);
    const unreached = table({ c: { base: NAT_PRE }, other: { rules: ['oifname "eth0" accept'] } });
    expect(() => tracePacket(unreached, pkt("203.0.113.2", "10.1.1.1"), opts)).toThrow(UnsupportedRuleError);
  });

  test("comments, counters, affinity updates and ct state new do not change the outcome", () => {
    const t = table(
      {
        pre: {
          base: NAT_PRE,
          rules: [
            "ct state new ip saddr @affinity goto ep2",
            'counter name "c1" comment "x y"',
            "ct state established drop",
            "goto ep1",
          ],
        },
        ep1: { rules: ["update @affinity { ip saddr }", "meta l4proto tcp dnat to 10.0.0.1:80"] },
        ep2: { rules: ["meta l4proto tcp dnat to 10.0.0.2:80"] },
      },
      { sets: { affinity: [] } },
    );
    expect(tracePacket(t, pkt("203.0.113.2", "10.1.1.1"), opts).output).toBe("10.0.0.1:80");
  });
});
