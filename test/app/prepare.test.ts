import { describe, expect, test } from "bun:test";
import type { Host } from "../../src/app/host.ts";
import { prepareNode } from "../../src/app/prepare.ts";
import { defaultProxyConfig } from "../../src/cli/index.ts";
import type { ProxyConfig } from "../../src/config/types.ts";
import { FakeExec } from "../../src/exec/testing/fake.ts";
import { createIpsetClient } from "../../src/host/ipset/client.ts";
import { createFakeIpset } from "../../src/host/ipset/testing/fake.ts";
import { createFakeKernel } from "../../src/host/kernel/testing/fake.ts";
import { createFakeConntrackHashsize, createFakeSysctl } from "../../src/host/sysctl/testing/fake.ts";
import { memoryLogger } from "../../src/log/logger.ts";

const ipvsMods = ["ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_sh", "nf_conntrack"];

function host(
  loaded: string[],
  hashsize = createFakeConntrackHashsize({ value: 65536, initialNetns: true }),
): Host & { sysctl: ReturnType<typeof createFakeSysctl>; hashsize: typeof hashsize } {
  return {
    exec: new FakeExec(),
    kernel: createFakeKernel({ version: "6.1.0", loaded }),
    sysctl: createFakeSysctl({
      "net/bridge/bridge-nf-call-iptables": 1,
      "net/netfilter/nf_conntrack_max": 0,
    }),
    hashsize,
    ipset: createIpsetClient({ exec: createFakeIpset({ version: "7.17" }).install() }),
  };
}

function config(patch: (c: ProxyConfig) => void = () => {}): ProxyConfig {
  const c = defaultProxyConfig();
  patch(c);
  return c;
}

describe("prepareNode", () => {
  test("iptables is the default mode; route_localnet is left to the mode assembly", async () => {
    const h = host([]);
    const prep = await prepareNode(config(), h, memoryLogger(), false);
    expect(prep.mode).toBe("iptables");
    expect(prep.fatal).toBeUndefined();
    expect(h.sysctl.values.get("net/netfilter/nf_conntrack_tcp_timeout_established")).toBe("86400");
    expect(h.sysctl.values.has("net/ipv4/conf/all/route_localnet")).toBe(false);
  });

  test("ipvs on a capable node: checks pass and the ipvs sysctls are written", async () => {
    const h = host(ipvsMods);
    const prep = await prepareNode(
      config((c) => (c.mode = "ipvs")),
      h,
      memoryLogger(),
      false,
    );
    expect(prep.fatal).toBeUndefined();
    expect(prep.checks.every((c) => c.ok)).toBe(true);
    expect(h.sysctl.values.get("net/ipv4/vs/conntrack")).toBe("1");
  });

  test("ipvs without modules: fatal names the modules and ipset version; a real run writes nothing", async () => {
    const h = host([]);
    const prep = await prepareNode(
      config((c) => (c.mode = "ipvs")),
      h,
      memoryLogger(),
      false,
    );
    expect(prep.fatal).toContain("ip_vs, ip_vs_rr, ip_vs_wrr, ip_vs_sh, nf_conntrack");
    expect(prep.fatal).toContain("ipset version found: 7.17");
    expect(h.sysctl.writes).toEqual([]);
    expect(h.hashsize.writes).toEqual([]);
  });

  test("nf_conntrack hashsize follows nf_conntrack_max up to max/4, never down", async () => {
    const h = host([]);
    const prep = await prepareNode(
      config((c) => {
        c.conntrack.maxPerCore = 0;
        c.conntrack.min = 0;
      }),
      h,
      memoryLogger(),
      false,
    );
    // No max to set: hashsize is not touched.
    expect(prep.sysctls.some((s) => s.name.includes("hashsize"))).toBe(false);

    const raise = host([]);
    await prepareNode(
      config((c) => {
        c.conntrack.maxPerCore = 1;
        c.conntrack.min = 1_048_576;
      }),
      raise,
      memoryLogger(),
      false,
    );
    expect(raise.sysctl.values.get("net/netfilter/nf_conntrack_max")).toBe("1048576");
    expect(raise.hashsize.writes).toEqual([262144]);

    const big = host([], createFakeConntrackHashsize({ value: 500_000, initialNetns: true }));
    await prepareNode(
      config((c) => {
        c.conntrack.min = 1_048_576;
      }),
      big,
      memoryLogger(),
      false,
    );
    expect(big.hashsize.writes).toEqual([]);
  });

  test("outside the initial network namespace the hashsize is skipped with a log line, not a failure", async () => {
    const h = host([], createFakeConntrackHashsize({ value: 65536, initialNetns: false }));
    const log = memoryLogger();
    const prep = await prepareNode(
      config((c) => {
        c.conntrack.min = 1_048_576;
      }),
      h,
      log,
      false,
    );
    expect(prep.fatal).toBeUndefined();
    expect(h.hashsize.writes).toEqual([]);
    expect(prep.sysctls.find((s) => s.name.includes("hashsize"))?.action).toBe("skipped");
    expect(log.lines.some((l) => l.includes("initial network namespace"))).toBe(true);
  });

  test("a read-only /sys is a warning and a Node event, not a failure", async () => {
    const h = host([], createFakeConntrackHashsize({ value: 65536, sysfsWritable: false }));
    const log = memoryLogger();
    const prep = await prepareNode(
      config((c) => {
        c.conntrack.min = 1_048_576;
      }),
      h,
      log,
      false,
    );
    expect(prep.fatal).toBeUndefined();
    expect(prep.nodeWarnings).toEqual([
      { reason: "readOnlySysFS", message: expect.stringContaining("/sys is read-only") },
    ]);
    expect(log.lines.some((l) => l.startsWith("W") && l.includes("/sys is read-only"))).toBe(true);
  });
});
