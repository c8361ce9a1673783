// Rule text to nf_tables expressions. The expected lines are what nft 1.0.6 printed with
// `nft --debug=netlink add rule ...` for the same text into a table with the same sets
// (transcribed); the expressions are printed here in that notation. Text outside the shapes the
// writer reads gives undefined, never an exception, whatever it holds (fast-check).

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  type Expr,
  elementKey,
  elementVerdict,
  fieldTypes,
  META_IIFNAME,
  META_L4PROTO,
  META_MARK,
  META_OIFNAME,
  ruleExpressions,
} from "../../../src/host/nft/netlink/statements.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";

/** Data as libnftnl prints it: 32-bit words in host (little-endian) order. */
function words(data: Uint8Array): string {
  const out: string[] = [];
  for (let i = 0; i < data.length; i += 4) {
    let v = 0;
    for (let j = 3; j >= 0; j--) v = v * 256 + (data[i + j] ?? 0);
    out.push(`0x${v.toString(16).padStart(8, "0")}`);
  }
  return out.join(" ");
}

const META_NAMES: Record<number, string> = {
  [META_MARK]: "mark",
  [META_IIFNAME]: "iifname",
  [META_OIFNAME]: "oifname",
  [META_L4PROTO]: "l4proto",
};
const VERDICT_NAMES: Record<number, string> = {
  0: "drop",
  1: "accept",
  [-3]: "jump",
  [-4]: "goto",
  [-5]: "return",
};

function debugLine(e: Expr): string {
  switch (e.kind) {
    case "payload":
      return `[ payload load ${e.len}b @ network header + ${e.offset} => reg 1 ]`;
    case "meta":
      return `[ meta load ${META_NAMES[e.key]} => reg 1 ]`;
    case "meta-set":
      return `[ meta set ${META_NAMES[e.key]} with reg 1 ]`;
    case "cmp":
      return `[ cmp ${e.neq ? "neq" : "eq"} reg 1 ${words(e.data)} ]`;
    case "bitwise":
      return `[ bitwise reg 1 = ( reg 1 & ${words(e.mask)} ) ^ ${words(e.xor)} ]`;
    case "immediate":
      return `[ immediate reg ${e.reg} ${words(e.data)} ]`;
    case "verdict":
      return `[ immediate reg 0 ${VERDICT_NAMES[e.code]}${e.chain ? ` -> ${e.chain}` : ""} ]`;
    case "numgen":
      return `[ numgen reg 1 = random mod ${e.modulus} ]`;
    case "fib":
      return `[ fib ${e.flags === 1 ? "saddr" : "daddr"} type => reg 1 ]`;
    case "lookup":
      return `[ lookup reg 1 set ${e.set}${e.inverted ? " 0x1" : ""} ]`;
    case "dynset-update":
      return `[ dynset update reg_key 1 set ${e.set} ]`;
    case "dnat":
      return `[ nat dnat ${e.family === "IPv4" ? "ip" : "ip6"} addr_min reg 1 proto_min reg 2 flags 0x2 ]`;
  }
}

const dump = (rule: string, family: IPFamily = "IPv4") => ruleExpressions(rule, family)?.map(debugLine);

// nft 1.0.6, `nft --debug=netlink add rule ip kp c1 "<rule>"` (and ip6).
const NFT_106: [IPFamily, string, string[]][] = [
  [
    "IPv4",
    "mark set mark or 0x00004000",
    [
      "[ meta load mark => reg 1 ]",
      "[ bitwise reg 1 = ( reg 1 & 0xffffbfff ) ^ 0x00004000 ]",
      "[ meta set mark with reg 1 ]",
    ],
  ],
  [
    "IPv4",
    "ip saddr 10.0.0.0/8 goto c2",
    [
      "[ payload load 1b @ network header + 12 => reg 1 ]",
      "[ cmp eq reg 1 0x0000000a ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
  [
    "IPv4",
    "ip saddr != 10.0.0.0/8 goto c2",
    [
      "[ payload load 1b @ network header + 12 => reg 1 ]",
      "[ cmp neq reg 1 0x0000000a ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
  [
    "IPv4",
    "ip saddr 10.16.0.0/12 goto c2",
    [
      "[ payload load 4b @ network header + 12 => reg 1 ]",
      "[ bitwise reg 1 = ( reg 1 & 0x0000f0ff ) ^ 0x00000000 ]",
      "[ cmp eq reg 1 0x0000100a ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
  [
    "IPv4",
    "ip saddr 10.1.2.3/32 goto c2",
    [
      "[ payload load 4b @ network header + 12 => reg 1 ]",
      "[ cmp eq reg 1 0x0302010a ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
  [
    "IPv4",
    "ip saddr 10.1.2.0/23 goto c2",
    [
      "[ payload load 4b @ network header + 12 => reg 1 ]",
      "[ bitwise reg 1 = ( reg 1 & 0x00feffff ) ^ 0x00000000 ]",
      "[ cmp eq reg 1 0x0002010a ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
  [
    "IPv4",
    "iifname veth* goto c2",
    ["[ meta load iifname => reg 1 ]", "[ cmp eq reg 1 0x68746576 ]", "[ immediate reg 0 goto -> c2 ]"],
  ],
  [
    "IPv4",
    "iifname ve* goto c2",
    ["[ meta load iifname => reg 1 ]", "[ cmp eq reg 1 0x00006576 ]", "[ immediate reg 0 goto -> c2 ]"],
  ],
  [
    "IPv4",
    "iifname vethabcde* goto c2",
    [
      "[ meta load iifname => reg 1 ]",
      "[ cmp eq reg 1 0x68746576 0x64636261 0x00000065 ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
  [
    "IPv4",
    "iifname br0 goto c2",
    [
      "[ meta load iifname => reg 1 ]",
      "[ cmp eq reg 1 0x00307262 0x00000000 0x00000000 0x00000000 ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
  [
    "IPv4",
    "fib saddr type local mark set mark or 0x00004000",
    [
      "[ fib saddr type => reg 1 ]",
      "[ cmp eq reg 1 0x00000002 ]",
      "[ meta load mark => reg 1 ]",
      "[ bitwise reg 1 = ( reg 1 & 0xffffbfff ) ^ 0x00004000 ]",
      "[ meta set mark with reg 1 ]",
    ],
  ],
  [
    "IPv4",
    "fib saddr type local goto c2",
    ["[ fib saddr type => reg 1 ]", "[ cmp eq reg 1 0x00000002 ]", "[ immediate reg 0 goto -> c2 ]"],
  ],
  ["IPv4", "goto c2", ["[ immediate reg 0 goto -> c2 ]"]],
  ["IPv4", "drop", ["[ immediate reg 0 drop ]"]],
  [
    "IPv4",
    "ip saddr @aff goto c2",
    [
      "[ payload load 4b @ network header + 12 => reg 1 ]",
      "[ lookup reg 1 set aff ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
  [
    "IPv4",
    "update @aff { ip saddr }",
    ["[ payload load 4b @ network header + 12 => reg 1 ]", "[ dynset update reg_key 1 set aff ]"],
  ],
  [
    "IPv4",
    "meta l4proto tcp dnat to 10.1.2.3:8080",
    [
      "[ meta load l4proto => reg 1 ]",
      "[ cmp eq reg 1 0x00000006 ]",
      "[ immediate reg 1 0x0302010a ]",
      "[ immediate reg 2 0x0000901f ]",
      "[ nat dnat ip addr_min reg 1 proto_min reg 2 flags 0x2 ]",
    ],
  ],
  [
    "IPv4",
    "numgen random mod 3 0 meta l4proto udp dnat to 10.1.2.3:53",
    [
      "[ numgen reg 1 = random mod 3 ]",
      "[ cmp eq reg 1 0x00000000 ]",
      "[ meta load l4proto => reg 1 ]",
      "[ cmp eq reg 1 0x00000011 ]",
      "[ immediate reg 1 0x0302010a ]",
      "[ immediate reg 2 0x00003500 ]",
      "[ nat dnat ip addr_min reg 1 proto_min reg 2 flags 0x2 ]",
    ],
  ],
  [
    "IPv4",
    "numgen random mod 2 0 goto c2",
    ["[ numgen reg 1 = random mod 2 ]", "[ cmp eq reg 1 0x00000000 ]", "[ immediate reg 0 goto -> c2 ]"],
  ],
  [
    "IPv6",
    "ip6 saddr fd00::/48 goto c2",
    [
      "[ payload load 6b @ network header + 8 => reg 1 ]",
      "[ cmp eq reg 1 0x000000fd 0x00000000 ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
  [
    "IPv6",
    "ip6 saddr fd00:1::/33 goto c2",
    [
      "[ payload load 16b @ network header + 8 => reg 1 ]",
      "[ bitwise reg 1 = ( reg 1 & 0xffffffff 0x00000080 0x00000000 0x00000000 ) ^ 0x00000000 0x00000000 0x00000000 0x00000000 ]",
      "[ cmp eq reg 1 0x010000fd 0x00000000 0x00000000 0x00000000 ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
  [
    "IPv6",
    "ip6 saddr @aff goto c2",
    [
      "[ payload load 16b @ network header + 8 => reg 1 ]",
      "[ lookup reg 1 set aff ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
  [
    "IPv6",
    "update @aff { ip6 saddr }",
    ["[ payload load 16b @ network header + 8 => reg 1 ]", "[ dynset update reg_key 1 set aff ]"],
  ],
  [
    "IPv6",
    "meta l4proto tcp dnat to [fd00::1]:8080",
    [
      "[ meta load l4proto => reg 1 ]",
      "[ cmp eq reg 1 0x00000006 ]",
      "[ immediate reg 1 0x000000fd 0x00000000 0x00000000 0x01000000 ]",
      "[ immediate reg 2 0x0000901f ]",
      "[ nat dnat ip6 addr_min reg 1 proto_min reg 2 flags 0x2 ]",
    ],
  ],
  [
    "IPv6",
    "ip6 saddr != fd00::/64 goto c2",
    [
      "[ payload load 8b @ network header + 8 => reg 1 ]",
      "[ cmp neq reg 1 0x000000fd 0x00000000 ]",
      "[ immediate reg 0 goto -> c2 ]",
    ],
  ],
];

describe("rule text as the expressions nft 1.0.6 sends", () => {
  for (const [family, rule, expected] of NFT_106)
    test(`${family}: ${rule}`, () => {
      expect(dump(rule, family)).toEqual(expected);
    });
});

describe("text the writer leaves to nft", () => {
  for (const [family, rule] of [
    ["IPv4", "ip saddr != { 192.0.2.0/26 } drop"],
    ["IPv4", "ip daddr { 10.0.0.0/8,10.1.0.0/16 } drop"],
    ["IPv4", "reject"],
    ["IPv4", "ct state new jump x"],
    ["IPv4", "masquerade fully-random"],
    ["IPv4", "ip6 saddr @aff goto c2"],
    ["IPv6", "ip saddr @aff goto c2"],
    ["IPv4", "goto c2 drop"],
    ["IPv4", "dnat to 10.1.2.3:80 goto x"],
    ["IPv4", "ip saddr 10.0.0.1/8 goto c2"],
    ["IPv4", "ip saddr 0.0.0.0/0 goto c2"],
    ["IPv4", "ip saddr 010.0.0.1 goto c2"],
    ["IPv4", "numgen random mod 2 2 goto c2"],
    ["IPv4", "numgen random mod 0 0 goto c2"],
    ["IPv4", "meta l4proto icmp drop"],
    ["IPv4", "meta l4proto tcp dnat to 10.1.2.3"],
    ["IPv4", "meta l4proto tcp dnat to 10.1.2.3:0"],
    ["IPv6", "meta l4proto tcp dnat to fd00::1:80"],
    ["IPv4", "mark set mark or 0x1000000000"],
    ["IPv4", 'iifname "br0" goto c2'],
    ["IPv4", "iifname abcdefghijklmnop goto c2"],
    ["IPv4", ""],
    ["IPv4", "goto"],
    ["IPv4", "goto 1x"],
  ] as [IPFamily, string][])
    test(`${family}: ${JSON.stringify(rule)}`, () => {
      expect(ruleExpressions(rule, family)).toBeUndefined();
    });

  test("arbitrary text and arbitrary sequences of its words: undefined or expressions, never a throw", () => {
    const word = fc.constantFrom(
      "ip",
      "ip6",
      "saddr",
      "daddr",
      "!=",
      "@aff",
      "goto",
      "jump",
      "drop",
      "accept",
      "return",
      "c2",
      "numgen",
      "random",
      "mod",
      "0",
      "1",
      "3",
      "meta",
      "l4proto",
      "tcp",
      "udp",
      "sctp",
      "fib",
      "type",
      "local",
      "mark",
      "set",
      "or",
      "0x4000",
      "dnat",
      "to",
      "10.1.2.3:80",
      "[fd00::1]:80",
      "update",
      "{",
      "}",
      "iifname",
      "veth*",
      "10.0.0.0/8",
      "fd00::/64",
      "",
      " ",
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(word, { maxLength: 12 }).map((w) => w.join(" ")),
          fc.string({ maxLength: 60 }),
        ),
        fc.constantFrom<IPFamily>("IPv4", "IPv6"),
        (text, family) => {
          const out = ruleExpressions(text, family);
          if (out === undefined) return;
          expect(out.length).toBeGreaterThan(0);
          // A verdict or NAT ends the rule.
          const end = out.findIndex((e) => e.kind === "verdict" || e.kind === "dnat");
          if (end >= 0) expect(end).toBe(out.length - 1);
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe("element keys and values", () => {
  test("a concatenation puts each field at a four-byte boundary, zero-filled", () => {
    const t = fieldTypes("ipv4_addr . inet_proto . inet_service : verdict")!;
    expect([...elementKey(["172.31.0.5", "tcp", "80"], t.key)!]).toEqual([
      172, 31, 0, 5, 6, 0, 0, 0, 0, 80, 0, 0,
    ]);
    const six = fieldTypes("ipv6_addr . ipv6_addr . inet_proto . inet_service")!;
    expect(elementKey(["fd00::1", "fd00::1", "udp", "53"], six.key)!.length).toBe(16 + 16 + 4 + 4);
    expect(elementKey(["fd00::1"], fieldTypes("ipv6_addr")!.key)!.length).toBe(16);
  });

  test("parts of the wrong type or number are refused", () => {
    const t = fieldTypes("ipv4_addr . inet_proto . inet_service : verdict")!;
    expect(elementKey(["172.31.0.5", "tcp"], t.key)).toBeUndefined();
    expect(elementKey(["fd00::1", "tcp", "80"], t.key)).toBeUndefined();
    expect(elementKey(["172.31.0.5", "6", "80"], t.key)).toBeUndefined();
    expect(elementKey(["172.31.0.5", "tcp", "65536"], t.key)).toBeUndefined();
    expect(fieldTypes("ipv4_addr : ipv4_addr")).toBeUndefined();
    expect(fieldTypes("ether_addr")).toBeUndefined();
  });

  test("verdicts", () => {
    expect(elementVerdict(["goto svc-x"])).toEqual({ code: -4, chain: "svc-x" });
    expect(elementVerdict(["drop"])).toEqual({ code: 0 });
    expect(elementVerdict(["goto"])).toBeUndefined();
    expect(elementVerdict(["drop", "x"])).toBeUndefined();
    expect(elementVerdict(["dnat to 10.0.0.1"])).toBeUndefined();
  });
});
