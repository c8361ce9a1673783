// parseNftTableListing: what nft 1.0.6 printed for `nft --json list table ip t` (the table made
// in a netns, below) read into chains with their rule counts and containers with their elements
// as nft's text spells them (concatenations, verdicts, comments dropped).

import { describe, expect, test } from "bun:test";
import { nftJsonText, parseNftTableListing } from "../../../src/host/nft/table-listing.ts";

// add table ip t; add chain ip t c; add chain ip t d
// add rule ip t c ip daddr 1.2.3.4 tcp dport 80 counter jump d comment "hi there"
// add map ip t m { type ipv4_addr . inet_proto . inet_service : verdict ; }
// add element ip t m { 10.0.0.1 . tcp . 80 comment "ns/a:p" : goto d }
// add element ip t m { 10.0.0.2 . udp . 53 : drop }
// add set ip t s { type ipv4_addr ; }  add element ip t s { 10.0.0.3 }
// add set ip t aff { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }
// add map ip t n { type inet_proto . inet_service : verdict ; } add element ip t n { tcp . 30080 : goto d }
const LISTED = `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}, {"table": {"family": "ip", "name": "t", "handle": 1}}, {"map": {"family": "ip", "name": "m", "table": "t", "type": ["ipv4_addr", "inet_proto", "inet_service"], "handle": 4, "map": "verdict", "elem": [[{"concat": ["10.0.0.2", "udp", 53]}, {"drop": null}], [{"elem": {"val": {"concat": ["10.0.0.1", "tcp", 80]}, "comment": "ns/a:p"}}, {"goto": {"target": "d"}}]]}}, {"set": {"family": "ip", "name": "s", "table": "t", "type": "ipv4_addr", "handle": 5, "elem": ["10.0.0.3"]}}, {"set": {"family": "ip", "name": "aff", "table": "t", "type": "ipv4_addr", "handle": 6, "flags": ["timeout"], "timeout": 10800}}, {"map": {"family": "ip", "name": "n", "table": "t", "type": ["inet_proto", "inet_service"], "handle": 7, "map": "verdict", "elem": [[{"concat": ["tcp", 30080]}, {"goto": {"target": "d"}}]]}}, {"chain": {"family": "ip", "table": "t", "name": "c", "handle": 1}}, {"chain": {"family": "ip", "table": "t", "name": "d", "handle": 2}}, {"rule": {"family": "ip", "table": "t", "chain": "c", "handle": 3, "comment": "hi there", "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "1.2.3.4"}}, {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 80}}, {"counter": {"packets": 0, "bytes": 0}}, {"jump": {"target": "d"}}]}}]}`;

describe("parseNftTableListing", () => {
  test("chains with their rule counts; sets and maps with their elements", () => {
    const t = parseNftTableListing(LISTED, "t");
    expect([...t.chains]).toEqual([
      ["c", 1],
      ["d", 0],
    ]);
    expect(t.containers.get("m")).toEqual({
      kind: "map",
      elements: new Map([
        ["10.0.0.2 . udp . 53", "drop"],
        ["10.0.0.1 . tcp . 80", "goto d"],
      ]),
    });
    expect(t.containers.get("s")).toEqual({ kind: "set", elements: new Map([["10.0.0.3", ""]]) });
    expect(t.containers.get("aff")?.elements.size).toBe(0);
    expect(t.containers.get("n")?.elements.get("tcp . 30080")).toBe("goto d");
  });

  test("another table's objects are left out", () => {
    const t = parseNftTableListing(LISTED, "other");
    expect(t.chains.size).toBe(0);
    expect(t.containers.size).toBe(0);
  });

  test("intervals, ranges and jumps", () => {
    expect(nftJsonText({ prefix: { addr: "10.0.0.0", len: 8 } })).toBe("10.0.0.0/8");
    expect(nftJsonText({ range: [30000, 32767] })).toBe("30000-32767");
    expect(nftJsonText({ jump: { target: "x" } })).toBe("jump x");
  });

  test("output that is not nft's JSON is refused", () => {
    expect(() => parseNftTableListing("{}", "t")).toThrow();
    expect(() => parseNftTableListing("table ip t {}", "t")).toThrow();
  });
});
