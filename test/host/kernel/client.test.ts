import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { release, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { FakeExec, fail, ok } from "../../../src/exec/testing/fake.ts";
import {
  createKernelClient,
  moduleNameFromPath,
  parseKernelConfig,
} from "../../../src/host/kernel/client.ts";
import { KernelError } from "../../../src/host/kernel/errors.ts";
import { createFakeKernel } from "../../../src/host/kernel/testing/fake.ts";

const VER = "6.1.0-13-amd64";

const PROC_MODULES = [
  "ip_vs_rr 12288 1 - Live 0x0000000000000000",
  "ip_vs 200704 3 ip_vs_rr, Live 0x0000000000000000",
  "nf_conntrack 188416 5 xt_conntrack,nf_nat,ip_vs, Live 0x0000000000000000",
  "nf_defrag_ipv6 24576 2 nf_conntrack,ip_vs, Live 0x0000000000000000",
  "",
].join("\n");

const MODULES_BUILTIN = [
  "kernel/net/netfilter/x_tables.ko",
  "kernel/net/netfilter/ipvs/ip_vs_sh.ko",
  "kernel/drivers/net/dummy.ko.xz",
  "kernel/net/bridge/br-netfilter.ko.zst",
  "",
].join("\n");

const BOOT_CONFIG = [
  "# Automatically generated file; DO NOT EDIT.",
  "CONFIG_IP_VS=m",
  "CONFIG_IP_VS_RR=m",
  "CONFIG_IP_VS_WRR=y",
  "CONFIG_IP_VS_SH=m",
  "# CONFIG_IP_VS_MH is not set",
  "CONFIG_NF_CONNTRACK=y",
  "CONFIG_IP_VS_TAB_BITS=12",
  "CONFIG_SOMETHING_ELSE=y",
  "",
].join("\n");

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function fixture(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "kpt-kernel-"));
  roots.push(root);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
  return root;
}

describe("createKernelClient: files", () => {
  test("version comes from proc/sys/kernel/osrelease, trimmed", async () => {
    const root = fixture({ "proc/sys/kernel/osrelease": `${VER}\n` });
    expect(await createKernelClient({ exec: new FakeExec(), root }).version()).toBe(VER);
  });

  test("version falls back to os.release() without starting a process", async () => {
    const root = fixture({});
    const exec = new FakeExec({ uname: () => ok("9.9.9-should-not-be-used\n") });
    expect(await createKernelClient({ exec, root }).version()).toBe(release().trim());
    expect(exec.calls).toEqual([]);
  });

  test("version takes an injected release, and fails with a KernelError when it is empty", async () => {
    const root = fixture({});
    const exec = new FakeExec();
    expect(await createKernelClient({ exec, root, osRelease: () => "5.10.0\n" }).version()).toBe("5.10.0");
    await expect(createKernelClient({ exec, root, osRelease: () => "" }).version()).rejects.toBeInstanceOf(
      KernelError,
    );
    expect(exec.calls).toEqual([]);
  });

  test("modules() without osrelease uses os.release() and still runs no process", async () => {
    const ver = release().trim();
    const root = fixture({ [`lib/modules/${ver}/modules.builtin`]: MODULES_BUILTIN });
    const exec = new FakeExec();
    const mods = await createKernelClient({ exec, root }).modules();
    expect([...mods.builtin].sort()).toEqual(["br_netfilter", "dummy", "ip_vs_sh", "x_tables"]);
    expect(exec.calls).toEqual([]);
  });

  test("loaded modules from /proc/modules and built-ins from modules.builtin", async () => {
    const root = fixture({
      "proc/sys/kernel/osrelease": `${VER}\n`,
      "proc/modules": PROC_MODULES,
      [`lib/modules/${VER}/modules.builtin`]: MODULES_BUILTIN,
      [`boot/config-${VER}`]: BOOT_CONFIG,
    });
    const mods = await createKernelClient({ exec: new FakeExec(), root }).modules();
    expect([...mods.loaded].sort()).toEqual(["ip_vs", "ip_vs_rr", "nf_conntrack", "nf_defrag_ipv6"]);
    expect([...mods.builtin].sort()).toEqual(["br_netfilter", "dummy", "ip_vs_sh", "x_tables"]);
    expect(mods.loadable.size).toBe(0);
    // The boot config is only a fallback: with /proc/modules present it is not read.
    expect(mods.sources).toEqual([
      join(root, "proc/modules"),
      join(root, "lib/modules", VER, "modules.builtin"),
    ]);
  });

  test("falls back to /boot/config-<ver> when /proc/modules is absent", async () => {
    const root = fixture({
      "proc/sys/kernel/osrelease": `${VER}\n`,
      [`boot/config-${VER}`]: BOOT_CONFIG,
    });
    const mods = await createKernelClient({ exec: new FakeExec(), root }).modules();
    expect(mods.loaded.size).toBe(0);
    expect([...mods.builtin].sort()).toEqual(["ip_vs_wrr", "nf_conntrack"]);
    expect([...mods.loadable].sort()).toEqual(["ip_vs", "ip_vs_rr", "ip_vs_sh"]);
    expect(mods.sources).toEqual([join(root, "boot", `config-${VER}`)]);
  });

  test("nothing present gives empty sets and no sources", async () => {
    const mods = await createKernelClient({ exec: new FakeExec(), root: fixture({}) }).modules();
    expect(mods).toEqual({ loaded: new Set(), builtin: new Set(), loadable: new Set(), sources: [] });
  });
});

describe("parsers", () => {
  test("module names from builtin paths strip directories, compression and dashes", () => {
    expect(moduleNameFromPath("kernel/net/netfilter/ipvs/ip_vs.ko")).toBe("ip_vs");
    expect(moduleNameFromPath("kernel/net/netfilter/nf-nat.ko.gz")).toBe("nf_nat");
    expect(moduleNameFromPath("ip_vs_wlc.ko.zst")).toBe("ip_vs_wlc");
  });

  test("boot config maps every IPVS scheduler and conntrack symbol", () => {
    const symbols = [
      "IP_VS_LC",
      "IP_VS_WLC",
      "IP_VS_LBLC",
      "IP_VS_LBLCR",
      "IP_VS_DH",
      "IP_VS_SED",
      "IP_VS_NQ",
    ];
    const text = [...symbols.map((s) => `CONFIG_${s}=m`), "CONFIG_IP_VS_MH=y", "CONFIG_NF_CONNTRACK_IPV4=m"];
    const parsed = parseKernelConfig(text.join("\n"));
    expect([...parsed.loadable].sort()).toEqual([
      "ip_vs_dh",
      "ip_vs_lblc",
      "ip_vs_lblcr",
      "ip_vs_lc",
      "ip_vs_nq",
      "ip_vs_sed",
      "ip_vs_wlc",
      "nf_conntrack_ipv4",
    ]);
    expect([...parsed.builtin]).toEqual(["ip_vs_mh"]);
  });
});

describe("createKernelClient: modprobe", () => {
  test("loadModule runs modprobe -- <name>", async () => {
    const exec = new FakeExec({ modprobe: () => ok() });
    const res = await createKernelClient({ exec }).loadModule("ip_vs_rr");
    expect(res.ok).toBe(true);
    expect(exec.calls.map((c) => c.args)).toEqual([["--", "ip_vs_rr"]]);
  });

  test("probeModule runs modprobe -n -q -- <name> and reports failure detail", async () => {
    const exec = new FakeExec({
      modprobe: (req) =>
        req.args.includes("ip_vs_mh") ? fail(1, "modprobe: FATAL: Module ip_vs_mh not found.\n") : ok(),
    });
    const kernel = createKernelClient({ exec });
    expect((await kernel.probeModule("ip_vs")).ok).toBe(true);
    const missing = await kernel.probeModule("ip_vs_mh");
    expect(missing.ok).toBe(false);
    expect(missing.detail).toContain("Module ip_vs_mh not found");
    expect(exec.calls[0]!.args).toEqual(["-n", "-q", "--", "ip_vs"]);
  });

  test("a missing modprobe binary is reported as not installed", async () => {
    const res = await createKernelClient({ exec: new FakeExec() }).loadModule("ip_vs");
    expect(res.ok).toBe(false);
    expect(res.detail).toContain("modprobe is not installed");
  });
});

describe("createFakeKernel", () => {
  test("loading a loadable module moves it into loaded", async () => {
    const kernel = createFakeKernel({
      version: VER,
      loaded: ["nf_conntrack"],
      loadable: ["ip_vs", "ip_vs_rr"],
    });
    expect((await kernel.loadModule("ip_vs")).ok).toBe(true);
    const mods = await kernel.modules();
    expect([...mods.loaded].sort()).toEqual(["ip_vs", "nf_conntrack"]);
    expect([...mods.loadable]).toEqual(["ip_vs_rr"]);
    expect(await kernel.version()).toBe(VER);
  });

  test("unknown modules cannot be loaded or probed; built-ins can", async () => {
    const kernel = createFakeKernel({ version: VER, builtin: ["ip-vs"] });
    expect((await kernel.probeModule("ip_vs")).ok).toBe(true);
    expect((await kernel.loadModule("ip_vs")).ok).toBe(true);
    const missing = await kernel.loadModule("ip_vs_sh");
    expect(missing.ok).toBe(false);
    expect(missing.detail).toContain("ip_vs_sh");
    expect((await kernel.probeModule("ip_vs_sh")).ok).toBe(false);
    expect(kernel.loaded.size).toBe(0);
  });

  test("probing does not load", async () => {
    const kernel = createFakeKernel({ version: VER, loadable: ["ip_vs"] });
    expect((await kernel.probeModule("ip_vs")).ok).toBe(true);
    expect(kernel.loaded.has("ip_vs")).toBe(false);
  });
});
