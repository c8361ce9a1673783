import { describe, expect, test } from "bun:test";
import {
  canonicalIPInet,
  compareIPs,
  formatIPv6Inet,
  isIPv4LinkLocal,
  isIPv6LinkLocal,
  isLoopback,
  parseCIDRInet,
} from "../../../src/util/net/address.ts";

describe("canonicalIPInet (inet_pton + inet_ntop)", () => {
  const table: [string, string | undefined][] = [
    ["10.96.0.1", "10.96.0.1"],
    ["255.255.255.255", "255.255.255.255"],
    ["010.0.0.1", undefined], // inet_pton refuses leading zeros
    ["10.0.0.256", undefined],
    ["10.0.1", undefined],
    ["::1", "::1"],
    ["::", "::"],
    ["2001:DB8:0:0:0:0:0:1", "2001:db8::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"], // the first of two equal runs is compressed
    ["2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"], // a single zero word is not compressed
    ["fd00:10:96::", "fd00:10:96::"],
    ["::ffff:c000:0201", "::ffff:192.0.2.1"],
    ["::ffff:192.0.2.1", "::ffff:192.0.2.1"],
    ["::192.0.2.1", "::192.0.2.1"],
    ["::2:3", "::0.2.0.3"], // glibc prints a ::/96 address with an embedded IPv4 tail
    ["1:2:3:4:5:6:7:8:9", undefined],
    ["1::2::3", undefined],
    ["fe80::1%eth0", undefined],
    ["garbage", undefined],
    ["", undefined],
  ];
  for (const [input, want] of table) {
    test(`${JSON.stringify(input)} -> ${want}`, () => expect(canonicalIPInet(input)).toBe(want));
  }

  test("formatIPv6Inet prints a trailing run as ::", () => {
    expect(formatIPv6Inet([0x20, 0x01, 0x0d, 0xb8, ...new Array(12).fill(0)])).toBe("2001:db8::");
  });
});

describe("parseCIDRInet", () => {
  test("bare addresses get the full length", () => {
    expect(parseCIDRInet("10.0.0.1")?.prefix).toBe(32);
    expect(parseCIDRInet("fd00::1")?.prefix).toBe(128);
  });
  test("mask clears host bits", () => {
    expect(parseCIDRInet("10.1.2.3/16", { mask: true })?.ip).toBe("10.1.0.0");
    expect(parseCIDRInet("10.1.2.3/23", { mask: true })?.ip).toBe("10.1.2.0");
    expect(parseCIDRInet("2001:db8:1::5/48", { mask: true })?.ip).toBe("2001:db8:1::");
    expect(parseCIDRInet("2001:db8::5/64")?.ip).toBe("2001:db8::5");
  });
  test("bad prefixes", () => {
    expect(parseCIDRInet("10.0.0.0/33")).toBeUndefined();
    expect(parseCIDRInet("10.0.0.0/x")).toBeUndefined();
    expect(parseCIDRInet("fd00::/129")).toBeUndefined();
  });
});

describe("address classes", () => {
  test("loopback", () => {
    expect(isLoopback("127.0.0.1")).toBe(true);
    expect(isLoopback("127.3.4.5")).toBe(true);
    expect(isLoopback("::1")).toBe(true);
    expect(isLoopback("10.0.0.1")).toBe(false);
    expect(isLoopback("::2")).toBe(false);
  });
  test("link-local", () => {
    expect(isIPv6LinkLocal("fe80::1")).toBe(true);
    expect(isIPv6LinkLocal("febf::1")).toBe(true);
    expect(isIPv6LinkLocal("fec0::1")).toBe(false);
    expect(isIPv4LinkLocal("169.254.20.10")).toBe(true);
    expect(isIPv4LinkLocal("169.255.0.1")).toBe(false);
  });
  test("compareIPs orders numerically, IPv4 first", () => {
    const sorted = ["10.0.0.10", "fd00::1", "10.0.0.9", "9.255.255.255", "::1"].sort(compareIPs);
    expect(sorted).toEqual(["9.255.255.255", "10.0.0.9", "10.0.0.10", "::1", "fd00::1"]);
  });
});
