import { describe, expect, test } from "bun:test";
import { NodePortAddresses, resolveNodePortAddresses } from "../../src/proxy/nodeport-addresses.ts";
import { cidrContains, isLoopbackLenient } from "../../src/util/net/address.ts";

const local = [
  "127.0.0.1/8",
  "203.0.113.10/24",
  "198.51.100.7/24",
  "::1/128",
  "2001:db8::10/64",
  "fe80::1/64",
];

describe("NodePortAddresses", () => {
  test("no CIDR at all matches every address of the family (and includes IPv4 loopback)", () => {
    const v4 = new NodePortAddresses("IPv4", []);
    expect(v4.matchAll).toBe(true);
    expect(v4.containsIPv4Loopback).toBe(true);
    expect(v4.cidrs).toEqual(["0.0.0.0/0"]);
    const v6 = new NodePortAddresses("IPv6", []);
    expect(v6.matchAll).toBe(true);
    expect(v6.containsIPv4Loopback).toBe(false);
  });

  test("CIDRs of the other family only also mean match-all for this family", () => {
    expect(new NodePortAddresses("IPv6", ["203.0.113.0/24"]).matchAll).toBe(true);
    expect(new NodePortAddresses("IPv4", ["203.0.113.0/24"]).matchAll).toBe(false);
  });

  test("the zero CIDR wins over the others", () => {
    const npa = new NodePortAddresses("IPv4", ["203.0.113.0/24", "0.0.0.0/0"]);
    expect(npa.matchAll).toBe(true);
  });

  test("node IPs are the local addresses inside the CIDRs, each once", () => {
    const npa = new NodePortAddresses("IPv4", ["203.0.113.0/24", "203.0.113.10/32", "2001:db8::/64"]);
    expect(npa.matchAll).toBe(false);
    expect(npa.containsIPv4Loopback).toBe(false);
    expect(npa.nodeIPs(local)).toEqual(["203.0.113.10"]);
    const v6 = new NodePortAddresses("IPv6", ["203.0.113.0/24", "2001:db8::/64"]);
    expect(v6.nodeIPs(local)).toEqual(["2001:db8::10"]);
  });

  test("a loopback CIDR is noticed (localhost NodePorts stay possible)", () => {
    const npa = new NodePortAddresses("IPv4", ["127.0.0.1/32", "203.0.113.0/24"]);
    expect(npa.containsIPv4Loopback).toBe(true);
    expect(npa.nodeIPs(local)).toEqual(["127.0.0.1", "203.0.113.10"]);
    expect(new NodePortAddresses("IPv4", ["126.0.0.0/7"]).containsIPv4Loopback).toBe(true);
  });

  test("addresses given without prefix are accepted too", () => {
    expect(new NodePortAddresses("IPv4", ["198.51.100.0/24"]).nodeIPs(["198.51.100.7", "bogus"])).toEqual([
      "198.51.100.7",
    ]);
  });
});

describe("primary and helpers", () => {
  test('"primary" becomes the node IPs as host CIDRs, loopback excluded', () => {
    expect(resolveNodePortAddresses(["primary"], { IPv4: "203.0.113.10", IPv6: "2001:db8::10" })).toEqual([
      "203.0.113.10/32",
      "2001:db8::10/128",
    ]);
    expect(resolveNodePortAddresses(["primary"], { IPv4: "127.0.0.1" })).toEqual([]);
    expect(resolveNodePortAddresses(["203.0.113.0/24"], { IPv4: "203.0.113.10" })).toEqual([
      "203.0.113.0/24",
    ]);
  });

  test("cidrContains and isLoopbackLenient", () => {
    expect(cidrContains("203.0.113.0/25", "203.0.113.10")).toBe(true);
    expect(cidrContains("203.0.113.0/25", "203.0.113.130")).toBe(false);
    expect(cidrContains("2001:db8::/32", "2001:db8:ffff::1")).toBe(true);
    expect(cidrContains("2001:db8::/32", "2001:db9::1")).toBe(false);
    expect(cidrContains("203.0.113.0/24", "2001:db8::1")).toBe(false);
    expect(cidrContains("::ffff:0:0/96", "2001:db8::1")).toBe(false);
    expect(isLoopbackLenient("127.0.0.53")).toBe(true);
    expect(isLoopbackLenient("::1")).toBe(true);
    expect(isLoopbackLenient("203.0.113.1")).toBe(false);
  });
});
