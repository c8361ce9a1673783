import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { createRealExec } from "../../../src/exec/runner.ts";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { createIpsetClient } from "../../../src/host/ipset/client.ts";
import { createFakeIpset } from "../../../src/host/ipset/testing/fake.ts";
import { createKernelClient } from "../../../src/host/kernel/client.ts";
import { createFakeKernel } from "../../../src/host/kernel/testing/fake.ts";
import { canUseIpvsProxier, requiredIpvsModules } from "../../../src/modes/ipvs/prerequisites.ts";

const ipsetAt = (version: string) => createIpsetClient({ exec: createFakeIpset({ version }).install() });
const allMods = ["ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_sh", "nf_conntrack"];

describe("required ipvs modules", () => {
  test.each([
    ["4.18.0", "", ["ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_sh", "nf_conntrack_ipv4"]],
    ["4.19.0", "", allMods],
    ["6.1.0", "rr", allMods],
    ["6.1.0", "lc", [...allMods, "ip_vs_lc"]],
    ["5.4.0", "mh", [...allMods, "ip_vs_mh"]],
  ])("kernel %s scheduler %p", (kernel, scheduler, want) => {
    expect(requiredIpvsModules(kernel, scheduler)).toEqual(want);
  });
});

describe("CanUseIPVSProxier against fakes", () => {
  test("all modules loaded and ipset 7.17: usable", async () => {
    const kernel = createFakeKernel({ version: "6.1.0", loaded: allMods });
    const r = await canUseIpvsProxier({ kernel, ipset: ipsetAt("7.17"), dryRun: false }, "rr");
    expect(r.ok).toBe(true);
    expect(r.missingModules).toEqual([]);
    expect(r.ipsetVersion).toBe("7.17");
  });

  test("a real run loads loadable modules with modprobe; built-ins count as present", async () => {
    const kernel = createFakeKernel({
      version: "6.1.0",
      builtin: ["nf_conntrack"],
      loadable: allMods.slice(0, 4),
    });
    const r = await canUseIpvsProxier({ kernel, ipset: ipsetAt("7.17"), dryRun: false }, "");
    expect(r.ok).toBe(true);
    expect([...kernel.loaded].sort()).toEqual(["ip_vs", "ip_vs_rr", "ip_vs_sh", "ip_vs_wrr"]);
    expect(r.checks[0]?.detail).toContain("loaded with modprobe");
  });

  test("a dry run only probes: nothing gets loaded, the verdict is the same", async () => {
    const kernel = createFakeKernel({
      version: "6.1.0",
      loaded: ["nf_conntrack"],
      loadable: allMods.slice(0, 4),
    });
    const r = await canUseIpvsProxier({ kernel, ipset: ipsetAt("7.17"), dryRun: true }, "rr");
    expect(r.ok).toBe(true);
    expect([...kernel.loaded]).toEqual(["nf_conntrack"]);
    expect(r.checks[0]?.detail).toContain("loadable with modprobe");
  });

  test("missing modules are all listed, along with the ipset version found", async () => {
    const kernel = createFakeKernel({ version: "6.1.0", loaded: ["nf_conntrack", "ip_vs"] });
    const r = await canUseIpvsProxier({ kernel, ipset: ipsetAt("7.17"), dryRun: false }, "wlc");
    expect(r.ok).toBe(false);
    expect(r.missingModules).toEqual(["ip_vs_rr", "ip_vs_wrr", "ip_vs_sh", "ip_vs_wlc"]);
    expect(r.checks[0]?.detail).toContain(
      "missing required kernel modules: ip_vs_rr, ip_vs_wrr, ip_vs_sh, ip_vs_wlc",
    );
    expect(r.checks[1]).toEqual({ name: "ipset version", ok: true, detail: "ipset 7.17 (need >= 6.0)" });
  });

  test("ipset older than 6.0 fails the check even with every module", async () => {
    const kernel = createFakeKernel({ version: "6.1.0", loaded: allMods });
    const r = await canUseIpvsProxier({ kernel, ipset: ipsetAt("5.4"), dryRun: false }, "rr");
    expect(r.ok).toBe(false);
    expect(r.checks[1]?.detail).toContain("5.4 is older than the required 6.0");
  });

  test("no ipset binary fails the check", async () => {
    const kernel = createFakeKernel({ version: "6.1.0", loaded: allMods });
    const r = await canUseIpvsProxier(
      { kernel, ipset: createIpsetClient({ exec: new FakeExec() }), dryRun: true },
      "rr",
    );
    expect(r.ok).toBe(false);
    expect(r.checks[1]?.ok).toBe(false);
  });
});

describe("CanUseIPVSProxier on this machine's real kernel", () => {
  // /proc/net/ip_vs exists exactly when the running kernel has IPVS; the verdict must agree.
  const kernelHasIpvs = existsSync("/proc/net/ip_vs");
  test(`verdict agrees with /proc/net/ip_vs (present: ${kernelHasIpvs})`, async () => {
    const exec = createRealExec();
    const kernel = createKernelClient({ exec });
    const r = await canUseIpvsProxier({ kernel, ipset: createIpsetClient({ exec }), dryRun: true }, "rr");
    if (kernelHasIpvs) {
      expect(r.missingModules).not.toContain("ip_vs");
    } else {
      expect(r.ok).toBe(false);
      expect(r.missingModules).toContain("ip_vs");
      expect(r.checks[0]?.detail).toContain("missing required kernel modules: ip_vs");
    }
  });
});
