// Every host tool's error answers isNotFound()/isExists() from its own tool's words and codes,
// and every one of them is a HostToolError.

import { describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConntrackError, NO_CONNECTION_TO_DELETE } from "../../src/host/conntrack/errors.ts";
import { HostInputError, HostToolError } from "../../src/host/errors.ts";
import { HostStateError } from "../../src/host/host-state/errors.ts";
import { IpsetError, IpsetParseError } from "../../src/host/ipset/errors.ts";
import { IptablesError, IptablesRestoreError } from "../../src/host/iptables/errors.ts";
import { IpvsError } from "../../src/host/ipvs/errors.ts";
import { KernelError } from "../../src/host/kernel/errors.ts";
import { NetlinkError } from "../../src/host/netlink/errors.ts";
import { NfacctError } from "../../src/host/nfacct/errors.ts";
import { NftError } from "../../src/host/nft/errors.ts";
import { createSysctlClient } from "../../src/host/sysctl/client.ts";
import { SysctlError } from "../../src/host/sysctl/errors.ts";

function answers(err: HostToolError): { notFound: boolean; exists: boolean } {
  expect(err).toBeInstanceOf(HostToolError);
  expect(err).toBeInstanceOf(Error);
  return { notFound: err.isNotFound(), exists: err.isExists() };
}

const neither = { notFound: false, exists: false };
const notFound = { notFound: true, exists: false };
const exists = { notFound: false, exists: true };

describe("HostToolError: isNotFound / isExists per tool", () => {
  test("ipset", () => {
    const e = (stderr: string) => new IpsetError("ipset", ["restore"], 1, stderr);
    expect(answers(e("ipset v7.17: The set with the given name does not exist\n"))).toEqual(notFound);
    expect(answers(e("ipset v7.17: Element cannot be deleted from the set: it's not added\n"))).toEqual(
      notFound,
    );
    expect(
      answers(
        e("ipset v7.17: Error in line 1: Set cannot be created: set with the same name already exists\n"),
      ),
    ).toEqual(exists);
    expect(answers(e("ipset v7.17: Element cannot be added to the set: it's already added\n"))).toEqual(
      exists,
    );
    expect(answers(e("ipset v7.17: Syntax error: unknown argument\n"))).toEqual(neither);
    expect(answers(new IpsetParseError(3, "bogus", "unknown command"))).toEqual(neither);
  });

  test("iptables", () => {
    const e = (stderr: string, code = 1) =>
      new IptablesError("iptables-nft", ["-t", "nat", "-N", "X"], code, stderr);
    expect(answers(e("iptables: No chain/target/match by that name.\n"))).toEqual(notFound);
    expect(answers(e("iptables: Bad rule (does a matching rule exist in that chain?).\n"))).toEqual(notFound);
    expect(answers(e("iptables: Chain already exists.\n"))).toEqual(exists);
    expect(answers(e("iptables v1.8.9 (nf_tables): error creating chain 'X':File exists\n"))).toEqual(exists);
    expect(answers(e("Another app is currently holding the xtables lock.\n", 4))).toEqual(neither);
    const restore = new IptablesRestoreError(
      "iptables-nft-restore",
      ["--noflush"],
      1,
      "iptables-nft-restore: line 2 failed: No chain/target/match by that name.\n",
      "*nat\n-A X -j Y\nCOMMIT\n",
    );
    expect(answers(restore)).toEqual(notFound);
  });

  test("ipvs", () => {
    const e = (stderr: string, kind: "failed" | "not-found" | "unavailable" = "failed") =>
      new IpvsError({ kind, message: "ipvsadm failed", stderr });
    expect(answers(e("No such service\n"))).toEqual(notFound);
    expect(answers(e("No such destination\n"))).toEqual(notFound);
    expect(answers(e("Service already exists\n"))).toEqual(exists);
    expect(answers(e("Destination already exists\n"))).toEqual(exists);
    // ipvsadm missing is not a missing virtual service.
    expect(answers(e("", "not-found"))).toEqual(neither);
    expect(answers(e("Can't initialize ipvs: Protocol not available\n", "unavailable"))).toEqual(neither);
  });

  test("netlink (ip)", () => {
    const e = (stderr: string) => new NetlinkError("ip", ["link", "del", "kube-ipvs0"], 2, stderr);
    expect(answers(e('Cannot find device "kube-ipvs0"\n'))).toEqual(notFound);
    expect(answers(e('Device "kube-ipvs0" does not exist.\n'))).toEqual(notFound);
    expect(answers(e("RTNETLINK answers: File exists\n"))).toEqual(exists);
    expect(answers(e("Error: Unknown device type.\n"))).toEqual(neither);
  });

  test("nft", () => {
    const e = (stderr: string) => new NftError(["delete", "table", "ip", "kube-proxy"], 1, stderr);
    expect(answers(e("Error: Could not process rule: No such file or directory\n"))).toEqual(notFound);
    expect(answers(e("Error: Could not process rule: File exists\n"))).toEqual(exists);
    expect(answers(e("Error: Could not process rule: Operation not supported\n"))).toEqual(neither);
  });

  test("conntrack", () => {
    const e = (stderr: string) =>
      new ConntrackError(["-D", "--orig-dst", "10.0.0.1", "-p", "udp"], 1, stderr);
    expect(answers(e(`conntrack v1.4.7 (conntrack-tools): ${NO_CONNECTION_TO_DELETE}.\n`))).toEqual(notFound);
    expect(
      answers(e("conntrack v1.4.7 (conntrack-tools): Operation failed: such conntrack doesn't exist\n")),
    ).toEqual(notFound);
    expect(answers(e("conntrack v1.4.7 (conntrack-tools): Operation failed: File exists\n"))).toEqual(exists);
    expect(answers(e("conntrack v1.4.7 (conntrack-tools): Operation not permitted\n"))).toEqual(neither);
  });

  test("nfacct", () => {
    const e = (stderr: string) => new NfacctError(["get", "x"], 1, stderr);
    expect(answers(e("nfacct v1.0.2: error: No such file or directory\n"))).toEqual(notFound);
    expect(answers(e("nfacct v1.0.2: error: Device or resource busy\n"))).toEqual(exists);
    expect(answers(e("nfacct v1.0.2: error: File exists\n"))).toEqual(exists);
    expect(answers(e("nfacct v1.0.2: error: Protocol not supported\n"))).toEqual(neither);
  });

  test("sysctl: a write to a sysctl the kernel lacks is not found", async () => {
    const root = await mkdtemp(join(tmpdir(), "kpts-sysctl-"));
    try {
      const err = await createSysctlClient({ root })
        .set("net/netfilter/nf_conntrack_max", 1)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SysctlError);
      expect(answers(err as SysctlError)).toEqual(notFound);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
    const eacces = Object.assign(new Error("EACCES"), { code: "EACCES" });
    expect(answers(new SysctlError("net/ipv4/ip_forward", "denied", "1", { cause: eacces }))).toEqual(
      neither,
    );
    expect(answers(new SysctlError("net/ipv4/ip_forward", "not an integer", "x"))).toEqual(neither);
  });

  test("kernel and HostState errors name no object", () => {
    expect(answers(new KernelError("cannot determine kernel version"))).toEqual(neither);
    expect(answers(new HostStateError([{ path: "kind", message: "invalid literal" }]))).toEqual(neither);
  });

  test("text refused before any tool ran names no object; a huge value is shown cut", () => {
    const err = new HostInputError("nft", "chain name", "a b", "not a name");
    expect(answers(err)).toEqual(neither);
    expect(err.message).toBe('nft: refused chain name "a b": not a name');
    const long = new HostInputError("ip", "device name", "x".repeat(100_000), "too long");
    expect(long.message.length).toBeLessThan(200);
    expect(long.message).toContain("(100000 characters)");
  });
});
