import { describe, expect, test } from "bun:test";
import { detectNodeIPs, resolveNodeIPs } from "../../src/app/node-ips.ts";
import { memoryLogger } from "../../src/log/logger.ts";

describe("node IPs (upstream's detectNodeIPs)", () => {
  test("nothing known: both families loopback, IPv4 primary", () => {
    expect(resolveNodeIPs([], "0.0.0.0")).toEqual({
      primaryFamily: "IPv4",
      ips: { IPv4: "127.0.0.1", IPv6: "::1" },
    });
  });

  test("the Node's addresses fill both families; its first decides the primary family", () => {
    expect(resolveNodeIPs(["2001:db8::10", "192.0.2.10"], "::")).toEqual({
      primaryFamily: "IPv6",
      ips: { IPv4: "192.0.2.10", IPv6: "2001:db8::10" },
    });
  });

  test("an IPv4 --bind-address replaces only the IPv4 node IP; the Node's IPv6 IP stays", () => {
    expect(resolveNodeIPs(["192.0.2.10", "2001:db8::10"], "198.51.100.7")).toEqual({
      primaryFamily: "IPv4",
      ips: { IPv4: "198.51.100.7", IPv6: "2001:db8::10" },
    });
  });

  test("an IPv6 --bind-address becomes the primary family, keeping the Node's IPv4 IP", () => {
    expect(resolveNodeIPs(["192.0.2.10", "2001:db8::10"], "2001:db8::99")).toEqual({
      primaryFamily: "IPv6",
      ips: { IPv4: "192.0.2.10", IPv6: "2001:db8::99" },
    });
  });

  test("the loopback warning is about the primary family only", async () => {
    const quiet = memoryLogger();
    // IPv4 primary from the Node; IPv6 unknown (loopback) is no reason to warn.
    await detectNodeIPs("0.0.0.0", () => ["192.0.2.10"], quiet);
    expect(quiet.lines.some((l) => l.includes("assuming loopback"))).toBe(false);

    const loud = memoryLogger();
    // An IPv6 bind address makes IPv6 primary; the Node has no IPv6 address, but the bind gives one.
    await detectNodeIPs("2001:db8::99", () => ["192.0.2.10"], loud);
    expect(loud.lines.some((l) => l.includes("assuming loopback"))).toBe(false);

    const none = memoryLogger();
    await detectNodeIPs("0.0.0.0", () => [], none);
    expect(none.lines.some((l) => l.startsWith("W") && l.includes("assuming loopback"))).toBe(true);
  });
});
