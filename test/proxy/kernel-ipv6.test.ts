// The IPv6 availability check every mode makes before proxying IPv6 (upstream 1.34 and 1.36):
// no /proc/sys/net/ipv6 (IPv6 disabled at boot or not built) or disable_ipv6=1 means IPv4 only.
import { describe, expect, test } from "bun:test";
import { createFakeSysctl } from "../../src/host/sysctl/testing/fake.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { kernelSupportsIPv6, withKernelSupport } from "../../src/proxy/netfilter/families.ts";

describe("kernel IPv6 support", () => {
  test.each([
    ["disable_ipv6=0", { "net/ipv6/conf/all/disable_ipv6": "0" }, true],
    ["disable_ipv6=1", { "net/ipv6/conf/all/disable_ipv6": "1" }, false],
    ["no net/ipv6 at all", {}, false],
  ] as const)("%s", async (_name, sysctls, want) => {
    expect(await kernelSupportsIPv6(createFakeSysctl(sysctls))).toBe(want);
  });

  test("IPv6 is dropped from the families with upstream's log line; IPv4 stays", async () => {
    const log = memoryLogger();
    const off = createFakeSysctl({ "net/ipv6/conf/all/disable_ipv6": "1" });
    expect(await withKernelSupport(["IPv4", "IPv6"], off, log)).toEqual(["IPv4"]);
    expect(log.lines.join("\n")).toContain("No kernel support for family");
    const on = createFakeSysctl({ "net/ipv6/conf/all/disable_ipv6": "0" });
    expect(await withKernelSupport(["IPv4", "IPv6"], on, log)).toEqual(["IPv4", "IPv6"]);
  });
});
