import { describe, expect, test } from "bun:test";
import { decideLocalhostNodePorts } from "../../src/proxy/localhost-nodeports.ts";

const base = {
  enabledByConfig: true,
  nodePortAddresses: [] as string[],
  nodeIPs: { IPv4: "192.0.2.10" },
  proxiesIPv4: true,
};

describe("localhost NodePorts decision (route_localnet and its guard)", () => {
  test("empty nodePortAddresses match every address, loopback included: on", () => {
    expect(decideLocalhostNodePorts(base).enabled).toBe(true);
  });

  test.each([
    [["127.0.0.0/8"], true],
    [["127.0.0.1/32", "192.0.2.0/24"], true],
    [["0.0.0.0/0"], true],
    [["192.0.2.0/24"], false],
    // Only IPv6 CIDRs: the IPv4 family matches everything, loopback included.
    [["2001:db8::/64"], true],
    // "primary" is the node's own IPv4 address, never loopback.
    [["primary"], false],
  ])("nodePortAddresses %p: %p", (nodePortAddresses, enabled) => {
    const d = decideLocalhostNodePorts({ ...base, nodePortAddresses });
    expect(d.enabled).toBe(enabled);
    if (!enabled) expect(d.reason).toContain("no loopback");
  });

  test("off, with the reason, when the flag is false or the node proxies no IPv4", () => {
    const flag = decideLocalhostNodePorts({ ...base, enabledByConfig: false });
    expect(flag).toEqual({
      enabled: false,
      reason: expect.stringContaining("--iptables-localhost-nodeports"),
    });
    const v6 = decideLocalhostNodePorts({ ...base, proxiesIPv4: false });
    expect(v6).toEqual({ enabled: false, reason: expect.stringContaining("IPv4 only") });
  });

  test('"primary" without an IPv4 node IP falls back to every IPv4 address: on', () => {
    expect(
      decideLocalhostNodePorts({ ...base, nodePortAddresses: ["primary"], nodeIPs: { IPv4: "127.0.0.1" } })
        .enabled,
    ).toBe(true);
  });
});
