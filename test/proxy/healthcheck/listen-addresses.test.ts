import { describe, expect, test } from "bun:test";
import { serviceHealthListenAddresses } from "../../../src/proxy/healthcheck/listen-addresses.ts";

const LOCAL = ["127.0.0.1/8", "192.0.2.10/24", "198.51.100.7/24", "::1/128", "2001:db8::10/64", "fe80::1/64"];
const nodeIPs = { IPv4: "192.0.2.10", IPv6: "2001:db8::10" };

describe("where health check node ports listen", () => {
  test("nodePortAddresses unset (every address): one wildcard listener, no address lookup", async () => {
    let asked = false;
    const out = await serviceHealthListenAddresses([], nodeIPs, async () => {
      asked = true;
      return LOCAL;
    });
    expect(out).toBeUndefined();
    expect(asked).toBe(false);
  });

  test("both families restricted: only the node IPs inside the CIDRs", async () => {
    const out = await serviceHealthListenAddresses(
      ["192.0.2.0/24", "2001:db8::/64"],
      nodeIPs,
      async () => LOCAL,
    );
    expect(out).toEqual(["192.0.2.10", "2001:db8::10"]);
  });

  test('"primary": the node IPs themselves', async () => {
    expect(await serviceHealthListenAddresses(["primary"], nodeIPs, async () => LOCAL)).toEqual([
      "192.0.2.10",
      "2001:db8::10",
    ]);
  });

  test("one family restricted: the other family's every address, link-local excluded (unbindable)", async () => {
    const out = await serviceHealthListenAddresses(["192.0.2.0/24"], nodeIPs, async () => LOCAL);
    expect(out).toEqual(["192.0.2.10", "::1", "2001:db8::10"]);
  });

  test("nothing matches: an empty list (listen nowhere), never the wildcard", async () => {
    expect(
      await serviceHealthListenAddresses(
        ["203.0.113.0/24", "2001:db8:ffff::/64"],
        nodeIPs,
        async () => LOCAL,
      ),
    ).toEqual([]);
  });

  test("a failing address lookup is an error, not a silent wildcard", async () => {
    await expect(
      serviceHealthListenAddresses(["192.0.2.0/24"], nodeIPs, async () => {
        throw new Error("ip -o addr show: exit code 1");
      }),
    ).rejects.toThrow("ip -o addr show");
  });
});
