import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFakeSysctl, createSysctlClient, SysctlError } from "../../src/host/sysctl.ts";

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
