import { describe, expect, test } from "bun:test";
import { appendPortIfNeeded, ipFamily, parseCIDR, parsePort } from "../../src/config/net.ts";
import { splitHostPort } from "../../src/util/net/host-port.ts";

describe("ipFamily", () => {
  test.each([
    ["192.0.2.1", 4],
    ["2001:db8::1", 6],
    ["::", 6],
    ["fe80::1%eth0", undefined],
    ["192.0.2.256", undefined],
    ["node-a", undefined],
    ["", undefined],
  ] as const)("%p -> %p", (text, family) => {
    expect(ipFamily(text)).toBe(family);
  });
});

describe("parseCIDR", () => {
  test.each([
    ["192.0.2.0/24", { family: 4, prefix: 24 }],
    ["192.0.2.7/32", { family: 4, prefix: 32 }],
    ["2001:db8::/32", { family: 6, prefix: 32 }],
    ["2001:db8::/128", { family: 6, prefix: 128 }],
  ] as const)("%p is valid", (text, expected) => {
    expect(parseCIDR(text)).toMatchObject(expected);
  });

  test.each(["192.0.2.0/33", "2001:db8::/129", "192.0.2.0", "192.0.2.0/", "192.0.2.0/x", "primary", "/24"])(
    "%p is invalid",
    (text) => {
      expect(parseCIDR(text)).toBeUndefined();
    },
  );
});

describe("splitHostPort", () => {
  test.each([
    ["192.0.2.1:80", "192.0.2.1", "80"],
    ["[2001:db8::1]:443", "2001:db8::1", "443"],
    [":10256", "", "10256"],
  ])("%p splits", (text, host, port) => {
    expect(splitHostPort(text)).toEqual({ ok: true, host, port });
  });

  test.each([
    ["192.0.2.1", "missing port"],
    ["2001:db8::1", "too many colons"],
    ["[2001:db8::1]", "missing port"],
    ["[2001:db8::1:80", "missing ']'"],
  ])("%p fails with %p", (text, why) => {
    const split = splitHostPort(text);
    expect(split.ok).toBe(false);
    if (!split.ok) expect(split.error).toContain(why);
  });
});

describe("ports and addresses", () => {
  test.each([
    ["80", 80],
    ["65535", 65535],
    ["0", undefined],
    ["65536", undefined],
    ["http", undefined],
  ] as const)("parsePort(%p) = %p", (text, port) => {
    expect(parsePort(text)).toBe(port);
  });

  test.each([
    ["192.0.2.1", "192.0.2.1:10256"],
    ["2001:db8::1", "[2001:db8::1]:10256"],
    ["192.0.2.1:99", "192.0.2.1:99"],
    ["not-an-ip", "not-an-ip"],
  ])("appendPortIfNeeded(%p)", (address, expected) => {
    expect(appendPortIfNeeded(address, 10256)).toBe(expected);
  });
});
