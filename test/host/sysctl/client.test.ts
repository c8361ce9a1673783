import { afterEach, describe, expect, test } from "bun:test";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createConntrackHashsizeClient, createSysctlClient } from "../../../src/host/sysctl/client.ts";
import { SysctlError } from "../../../src/host/sysctl/errors.ts";
import { createFakeSysctl } from "../../../src/host/sysctl/testing/fake.ts";
import { memoryLogger } from "../../../src/log/logger.ts";
import { raiseConntrackHashsize } from "../../../src/proxy/sysctls.ts";

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function procRoot(): string {
  const root = mkdtempSync(join(tmpdir(), "kpt-sysctl-"));
  roots.push(root);
  mkdirSync(join(root, "proc/sys/net/ipv4/conf/eth0.100"), { recursive: true });
  mkdirSync(join(root, "proc/sys/net/ipv4/vs"), { recursive: true });
  writeFileSync(join(root, "proc/sys/net/ipv4/ip_forward"), "0\n");
  writeFileSync(join(root, "proc/sys/net/ipv4/vs/conntrack"), "0\n");
  writeFileSync(join(root, "proc/sys/net/ipv4/tcp_rmem"), "4096\t131072\t6291456\n");
  writeFileSync(join(root, "proc/sys/net/ipv4/conf/eth0.100/route_localnet"), "0\n");
  return root;
}

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  return undefined;
}

describe("createSysctlClient", () => {
  test("get reads and trims; getInt parses; missing sysctls are undefined", async () => {
    const sysctl = createSysctlClient({ root: procRoot() });
    expect(await sysctl.get("net/ipv4/ip_forward")).toBe("0");
    expect(await sysctl.getInt("net/ipv4/ip_forward")).toBe(0);
    expect(await sysctl.get("net/ipv4/vs/expire_nodest_conn")).toBeUndefined();
    expect(await sysctl.getInt("net/ipv4/vs/expire_nodest_conn")).toBeUndefined();
  });

  test("dotted names work, and slash names may contain dotted interface names", async () => {
    const sysctl = createSysctlClient({ root: procRoot() });
    expect(await sysctl.get("net.ipv4.ip_forward")).toBe("0");
    expect(await sysctl.get("net/ipv4/conf/eth0.100/route_localnet")).toBe("0");
  });

  test("set writes the file; a later get sees the new value", async () => {
    const root = procRoot();
    const sysctl = createSysctlClient({ root });
    await sysctl.set("net/ipv4/ip_forward", 1);
    await sysctl.set("net/ipv4/vs/conntrack", "1");
    expect(readFileSync(join(root, "proc/sys/net/ipv4/ip_forward"), "utf8")).toBe("1\n");
    expect(await sysctl.getInt("net/ipv4/vs/conntrack")).toBe(1);
  });

  test("setting a sysctl the kernel lacks names the module that would provide it", async () => {
    const sysctl = createSysctlClient({ root: procRoot() });
    const conntrack = await caught(sysctl.set("net/netfilter/nf_conntrack_tcp_timeout_established", 86400));
    expect(conntrack).toBeInstanceOf(SysctlError);
    expect((conntrack as Error).message).toContain(
      "cannot set sysctl net/netfilter/nf_conntrack_tcp_timeout_established=86400: ",
    );
    expect((conntrack as Error).message).toEndWith(
      "(the kernel has no such sysctl: is the nf_conntrack module loaded?)",
    );
    const vs = await caught(sysctl.set("net.ipv4.vs.expire_nodest_conn", 1));
    expect((vs as Error).message).toEndWith("is the ip_vs module loaded?)");
    const other = await caught(sysctl.set("net/ipv4/no_such_knob", 1));
    expect((other as Error).message).toEndWith("(the kernel has no such sysctl)");
  });

  test("getInt on a non-integer value raises SysctlError naming the sysctl", async () => {
    const err = await caught(createSysctlClient({ root: procRoot() }).getInt("net/ipv4/tcp_rmem"));
    expect(err).toBeInstanceOf(SysctlError);
    expect((err as SysctlError).sysctl).toBe("net/ipv4/tcp_rmem");
  });

  test("set replaces a longer old value entirely", async () => {
    const root = procRoot();
    await createSysctlClient({ root }).set("net/ipv4/tcp_rmem", 7);
    expect(readFileSync(join(root, "proc/sys/net/ipv4/tcp_rmem"), "utf8")).toBe("7\n");
  });

  test("setting a sysctl the kernel lacks fails instead of creating a file", async () => {
    const root = procRoot();
    const err = await caught(createSysctlClient({ root }).set("net/ipv4/vs/expire_nodest_conn", 1));
    expect(err).toBeInstanceOf(SysctlError);
    expect(existsSync(join(root, "proc/sys/net/ipv4/vs/expire_nodest_conn"))).toBe(false);
  });

  test("a failed write raises SysctlError naming the sysctl and the value", async () => {
    const root = procRoot();
    // A missing directory fails even as root, unlike permission bits.
    const err = await caught(createSysctlClient({ root }).set("net/bridge/bridge-nf-call-iptables", 1));
    expect(err).toBeInstanceOf(SysctlError);
    expect((err as SysctlError).sysctl).toBe("net/bridge/bridge-nf-call-iptables");
    expect((err as SysctlError).value).toBe("1");
    expect((err as Error).message).toContain("net/bridge/bridge-nf-call-iptables=1");
  });

  test("names that would escape proc/sys are refused", async () => {
    const root = procRoot();
    const sysctl = createSysctlClient({ root });
    expect(await caught(sysctl.get("../../etc/passwd"))).toBeInstanceOf(SysctlError);
    expect(await caught(sysctl.set("net//ipv4", 1))).toBeInstanceOf(SysctlError);
  });
});

describe("createFakeSysctl", () => {
  test("reads initial values in either name form and records writes in order", async () => {
    const sysctl = createFakeSysctl({ "net/ipv4/ip_forward": 0, "net.ipv4.vs.conntrack": "0" });
    expect(await sysctl.getInt("net.ipv4.ip_forward")).toBe(0);
    await sysctl.set("net/ipv4/vs/conntrack", 1);
    await sysctl.set("net.ipv4.ip_forward", "1");
    expect(await sysctl.get("net/ipv4/vs/conntrack")).toBe("1");
    expect(sysctl.writes).toEqual([
      { name: "net/ipv4/vs/conntrack", value: "1" },
      { name: "net/ipv4/ip_forward", value: "1" },
    ]);
    expect(await sysctl.get("net/ipv4/unknown")).toBeUndefined();
  });

  test("read-only sysctls raise SysctlError and are not recorded", async () => {
    const sysctl = createFakeSysctl({ "net/ipv4/ip_forward": 0 }, { readOnly: ["net.ipv4.ip_forward"] });
    const err = await caught(sysctl.set("net/ipv4/ip_forward", 1));
    expect(err).toBeInstanceOf(SysctlError);
    expect((err as SysctlError).value).toBe("1");
    expect(sysctl.writes).toEqual([]);
    expect(await sysctl.get("net/ipv4/ip_forward")).toBe("0");
  });
});

describe("nf_conntrack hashsize under a root", () => {
  function sysRoot(opts: { hashsize?: number; sysfs?: string; netns?: [string, string] }): string {
    const root = mkdtempSync(join(tmpdir(), "kpt-hashsize-"));
    roots.push(root);
    if (opts.hashsize !== undefined) {
      mkdirSync(join(root, "sys/module/nf_conntrack/parameters"), { recursive: true });
      writeFileSync(join(root, "sys/module/nf_conntrack/parameters/hashsize"), `${opts.hashsize}\n`);
    }
    mkdirSync(join(root, "proc/self/ns"), { recursive: true });
    mkdirSync(join(root, "proc/1/ns"), { recursive: true });
    if (opts.netns) {
      symlinkSync(opts.netns[0], join(root, "proc/self/ns/net"));
      symlinkSync(opts.netns[1], join(root, "proc/1/ns/net"));
    }
    writeFileSync(
      join(root, "proc/mounts"),
      `proc /proc proc rw 0 0\n${opts.sysfs ?? "sysfs /sys sysfs rw,nosuid 0 0"}\n`,
    );
    return root;
  }

  test("reads and writes the module parameter, never creating it", async () => {
    const root = sysRoot({ hashsize: 65536 });
    const c = createConntrackHashsizeClient({ root });
    expect(await c.get()).toBe(65536);
    await c.set(262144);
    expect(readFileSync(join(root, "sys/module/nf_conntrack/parameters/hashsize"), "utf8")).toBe("262144\n");
    const absent = createConntrackHashsizeClient({ root: sysRoot({}) });
    expect(await absent.get()).toBeUndefined();
    expect(await caught(absent.set(1))).toBeInstanceOf(SysctlError);
  });

  test("initial namespace: same net namespace link as PID 1; unknown when unreadable", async () => {
    const same = createConntrackHashsizeClient({
      root: sysRoot({ netns: ["net:[4026531833]", "net:[4026531833]"] }),
    });
    expect(await same.inInitialNetns()).toBe(true);
    const other = createConntrackHashsizeClient({
      root: sysRoot({ netns: ["net:[4026532400]", "net:[4026531833]"] }),
    });
    expect(await other.inInitialNetns()).toBe(false);
    expect(await createConntrackHashsizeClient({ root: sysRoot({}) }).inInitialNetns()).toBeUndefined();
  });

  test("a read-only sysfs is seen in /proc/mounts", async () => {
    expect(await createConntrackHashsizeClient({ root: sysRoot({}) }).sysfsWritable()).toBe(true);
    const ro = sysRoot({ sysfs: "sysfs /sys sysfs ro,nosuid,nodev 0 0" });
    expect(await createConntrackHashsizeClient({ root: ro }).sysfsWritable()).toBe(false);
  });

  test("raised to max/4 in the initial namespace; skipped (logged) in another one", async () => {
    const root = sysRoot({ hashsize: 16384, netns: ["net:[1]", "net:[1]"] });
    const log = memoryLogger();
    const r = await raiseConntrackHashsize(262144, createConntrackHashsizeClient({ root }), log);
    expect(r.outcome.action).toBe("set");
    expect(readFileSync(join(root, "sys/module/nf_conntrack/parameters/hashsize"), "utf8")).toBe("65536\n");

    const inNetns = sysRoot({ hashsize: 16384, netns: ["net:[2]", "net:[1]"] });
    const log2 = memoryLogger();
    const r2 = await raiseConntrackHashsize(262144, createConntrackHashsizeClient({ root: inNetns }), log2);
    expect(r2.outcome).toMatchObject({ action: "skipped", detail: "not in the initial network namespace" });
    expect(readFileSync(join(inNetns, "sys/module/nf_conntrack/parameters/hashsize"), "utf8")).toBe(
      "16384\n",
    );
    expect(log2.lines.some((l) => l.includes("initial network namespace"))).toBe(true);
  });
});
