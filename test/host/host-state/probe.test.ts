import { describe, expect, test } from "bun:test";
import { FakeExec, fail, ok } from "../../../src/exec/testing/fake.ts";
import { parseIpAddrOneline, probeHostState } from "../../../src/host/host-state/probe.ts";
import { createIpsetClient } from "../../../src/host/ipset/client.ts";
import { createFakeIpset } from "../../../src/host/ipset/testing/fake.ts";
import { createFakeKernel } from "../../../src/host/kernel/testing/fake.ts";

const IP_O_ADDR = `1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
1: lo    inet6 ::1/128 scope host noprefixroute \\       valid_lft forever preferred_lft forever
2: eth0    inet 192.0.2.10/24 brd 192.0.2.255 scope global eth0\\       valid_lft forever preferred_lft forever
3: veth1@if4    inet 203.0.113.1/26 scope global veth1\\       valid_lft forever preferred_lft forever
`;

describe("host probe for --dump-state", () => {
  test("ip -o addr lines group by interface (veth peer suffix dropped)", () => {
    expect(parseIpAddrOneline(IP_O_ADDR)).toEqual([
      { name: "lo", addresses: ["127.0.0.1/8", "::1/128"] },
      { name: "eth0", addresses: ["192.0.2.10/24"] },
      { name: "veth1", addresses: ["203.0.113.1/26"] },
    ]);
  });

  test("collects versions, modules, interfaces and kernel tables; missing tools are left out", async () => {
    const exec = createFakeIpset({ version: "7.17" }).install(new FakeExec());
    exec
      .on("iptables", () => ok("iptables v1.8.9 (legacy)\n"))
      .on("ip", () => ok(IP_O_ADDR))
      .on("iptables-save", () => ok("*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n"))
      .on("ip6tables-save", () => fail(1, "no ip6tables"))
      .on("nfacct", () => fail(1, "nfacct: netlink error"));
    const kernel = createFakeKernel({ version: "6.1.0", loaded: ["nf_conntrack"], builtin: ["ip_vs"] });
    const hs = await probeHostState(exec, kernel, createIpsetClient({ exec }));
    expect(hs.kernelVersion).toBe("6.1.0");
    expect(hs.modules).toEqual(["ip_vs", "nf_conntrack"]);
    expect(hs.ipsetVersion).toBe("7.17");
    expect(hs.iptablesVersion).toBe("iptables v1.8.9 (legacy)");
    expect(hs.iptablesSave).toContain("KUBE-SERVICES");
    expect(hs.ip6tablesSave).toBeUndefined();
    expect(hs.ipvsSave).toBeUndefined();
    expect(hs.nfacct).toBe(false);
    expect(hs.interfaces?.map((i) => i.name)).toEqual(["lo", "eth0", "veth1"]);
  });
});
