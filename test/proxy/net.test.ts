import { describe, expect, test } from "bun:test";
import { parseCIDRLenient, parseIPLenient } from "../../src/util/net/address.ts";
import { familyOf, ofFamily } from "../../src/util/net/family.ts";
import { isPortNumber, joinHostPort } from "../../src/util/net/host-port.ts";
import { parseProtocol } from "../../src/util/net/protocol.ts";

describe("parseIPLenient", () => {
  test.each([
    ["192.0.2.10", "192.0.2.10", "IPv4"],
    ["192.000.002.010", "192.0.2.10", "IPv4"],
    ["2001:DB8:0:0::1", "2001:db8::1", "IPv6"],
    ["2001:db8:0:0:0:0:0:1", "2001:db8::1", "IPv6"],
    ["::ffff:192.0.2.1", "192.0.2.1", "IPv4"],
    ["::", "::", "IPv6"],
  ] as const)("%p parses to %p (%p)", (text, ip, family) => {
    expect(parseIPLenient(text)).toEqual({ ip, family });
  });

  test.each([
    ["192.0.2.256"],
    ["fe80::1%eth0"],
    ["node-a"],
    [""],
    ["192.0.2.1/32"],
    [" 192.0.2.1"],
    [42],
    [null],
  ])("%p is not an IP", (text) => {
    expect(parseIPLenient(text)).toBeUndefined();
  });
});

describe("parseCIDRLenient", () => {
  test.each([
    ["203.0.113.0/24", "203.0.113.0/24", "IPv4"],
    ["203.0.113.77/24", "203.0.113.0/24", "IPv4"],
    ["  198.51.100.7/32 ", "198.51.100.7/32", "IPv4"],
    ["0.0.0.0/0", "0.0.0.0/0", "IPv4"],
    ["2001:db8:ffff::1/33", "2001:db8:8000::/33", "IPv6"],
    ["2001:DB8::1/128", "2001:db8::1/128", "IPv6"],
    ["::/0", "::/0", "IPv6"],
  ] as const)("%p -> %p", (text, cidr, family) => {
    expect(parseCIDRLenient(text)).toEqual({ cidr, family });
  });

  test.each([
    ["203.0.113.0/33"],
    ["2001:db8::/129"],
    ["203.0.113.0"],
    ["203.0.113.0/"],
    ["x/24"],
    ["/24"],
    [7],
  ])("%p is not a CIDR", (text) => {
    expect(parseCIDRLenient(text)).toBeUndefined();
  });
});

describe("ports and protocols", () => {
  test.each([
    [1, true],
    [65535, true],
    [0, false],
    [65536, false],
    [80.5, false],
    ["80", false],
    [undefined, false],
  ] as const)("isPortNumber(%p) is %p", (value, ok) => {
    expect(isPortNumber(value)).toBe(ok);
  });

  test.each([
    [undefined, "TCP"],
    ["UDP", "UDP"],
    ["SCTP", "SCTP"],
    ["udp", undefined],
    ["ICMP", undefined],
  ] as const)("parseProtocol(%p) is %p", (value, protocol) => {
    expect(parseProtocol(value)).toBe(protocol);
  });
});

describe("address helpers", () => {
  test("joinHostPort brackets IPv6 only", () => {
    expect(joinHostPort("192.0.2.1", 80)).toBe("192.0.2.1:80");
    expect(joinHostPort("2001:db8::1", 80)).toBe("[2001:db8::1]:80");
  });

  test("ofFamily keeps order and drops the other family", () => {
    const ips = ["203.0.113.1", "2001:db8::1", "203.0.113.2"];
    expect(ofFamily(ips, "IPv4")).toEqual(["203.0.113.1", "203.0.113.2"]);
    expect(ofFamily(ips, "IPv6")).toEqual(["2001:db8::1"]);
    expect(familyOf("2001:db8::1")).toBe("IPv6");
  });
});
