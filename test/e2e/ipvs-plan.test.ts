// The ipvs --dry-run plan on a real kernel: its ipset restore script and its iptables input
// are accepted by the real tools in a fresh namespace. This host's kernel has no IPVS and no dummy
// devices, so the ipvsadm, `ip link add ... type dummy` and `-m ipvs` steps are skipped here;
// test/vm/ipvs-plan-replay.vm.ts replays the whole plan on a kernel that has them. A Service
// past a set's maxelem is held out of the plan: the script still fits the real sets.

import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { runBinary, tempDir } from "../support/binary.ts";
import { renderState, writeStateFile } from "../support/e2e-cluster.ts";
import { OLD_WEB, wideService } from "../support/e2e-ipvs.ts";

const ns = `kpts-${process.pid.toString(36)}-${randomBytes(3).toString("hex")}-ipvs`;
const fullNs = `${ns}f`;
const inNs = (argv: readonly string[], stdin?: string, where = ns) =>
  spawnSync("ip", ["netns", "exec", where, ...argv], { input: stdin, encoding: "utf8", timeout: 20_000 });
const dir = tempDir("kpts-ipvs-plan-");

afterAll(() => {
  for (const n of [ns, fullNs]) spawnSync("ip", ["netns", "del", n], { timeout: 10_000 });
  rmSync(dir, { recursive: true, force: true });
});

describe("ipvs dry-run plan replayed on a real kernel", () => {
  test("the ipset script and the iptables commands succeed in a fresh namespace", () => {
    expect(spawnSync("ip", ["netns", "add", ns], { timeout: 10_000 }).status).toBe(0);
    const r = runBinary([
      "--mode=ipvs",
      "--dry-run",
      "--state",
      "examples/cluster.yaml",
      "--output=json",
      "--iptables-backend=legacy",
    ]);
    const report = JSON.parse(r.stdout) as { commands: { argv: string[]; stdin?: string }[] };
    const replayable = report.commands.filter((c) => /^(ipset|ip6?tables)/.test(c.argv[0] ?? ""));
    const ipsetScripts = replayable.filter((c) => c.argv[0] === "ipset");
    expect(ipsetScripts.length).toBeGreaterThan(0);
    expect(ipsetScripts[0]?.stdin).toContain("create KUBE-CLUSTER-IP hash:ip,port");
    expect(report.commands.some((c) => c.argv[0]?.endsWith("tables-legacy-restore"))).toBe(true);
    for (const c of replayable) {
      // `-m ipvs` needs the xt_ipvs module, which a kernel without IPVS cannot load; every
      // other line must be accepted as is.
      const stdin = c.stdin
        ?.split("\n")
        .filter((l) => !l.includes(" -m ipvs "))
        .join("\n");
      const done = inNs(c.argv, stdin);
      if (c.argv.includes("-N") && done.status === 1 && done.stderr.includes("Chain already exists"))
        continue;
      expect({ argv: c.argv.join(" "), code: done.status, stderr: done.stderr }).toEqual({
        argv: c.argv.join(" "),
        code: 0,
        stderr: expect.any(String),
      });
    }
    const sets = inNs(["ipset", "save"]).stdout;
    expect(sets).toContain("add KUBE-CLUSTER-IP 198.51.100.10,tcp:80");
    expect(sets).toContain("add KUBE-LOAD-BALANCER-SOURCE-CIDR 192.0.2.200,tcp:443,203.0.113.128/25");
    const nat = inNs(["iptables-legacy-save", "-t", "nat"]).stdout;
    expect(nat).toContain("--match-set KUBE-CLUSTER-IP dst,dst");
  });
});

describe("ipvs dry-run plan with a Service past a set's maxelem", () => {
  test("the Service is held out with an event, the rest is planned, and the real ipset takes the script", () => {
    const state = join(dir, "state.yaml");
    const node = { name: "node-a", internalIP: "192.0.2.10", podCIDR: "203.0.113.0/26" };
    writeStateFile(state, renderState(node, [OLD_WEB, wideService(128, 513)]));
    const r = runBinary(
      ["--mode=ipvs", "--dry-run", "--state", state, "--output=json", "--hostname-override=node-a"],
      { timeoutMs: 120_000 },
    );
    // 3: a prerequisite failed, as this host's kernel has no IPVS; the sync itself must not.
    expect([0, 3], r.stderr).toContain(r.code);
    const report = JSON.parse(r.stdout) as {
      checks: { name: string; ok: boolean }[];
      commands: { argv: string[]; stdin?: string }[];
      events: { reason: string; regarding: string; message: string }[];
      ipvs: { virtualServers: { address: string; port: number }[] };
    };
    expect(report.checks.filter((c) => !c.ok && c.name !== "ipvs kernel modules")).toEqual([]);
    expect(report.events.filter((e) => e.reason === "KubeProxyIPSetFull")).toEqual([
      {
        type: "Warning",
        reason: "KubeProxyIPSetFull",
        action: "SyncProxyRules",
        regarding: "Service/default/wide",
        message:
          "ipset KUBE-EXTERNAL-IP would hold at least 65664 members with this Service's, more than its maxelem 65536: " +
          "the Service is not programmed in ipvs mode (IPv4) on this node",
      } as never,
    ]);
    expect(report.ipvs.virtualServers.map((v) => `${v.address}:${v.port}`)).toEqual(["198.51.100.10:80"]);
    expect(r.stderr).not.toContain("Sync failed");
    expect(spawnSync("ip", ["netns", "add", fullNs], { timeout: 10_000 }).status).toBe(0);
    const scripts = report.commands.filter((c) => c.argv[0] === "ipset");
    expect(scripts.length).toBeGreaterThan(0);
    for (const c of scripts) {
      const done = inNs(c.argv, c.stdin, fullNs);
      expect({ code: done.status, stderr: done.stderr }).toEqual({ code: 0, stderr: "" });
    }
    expect(inNs(["ipset", "save", "KUBE-CLUSTER-IP"], undefined, fullNs).stdout).toContain(
      "add KUBE-CLUSTER-IP 198.51.100.10,tcp:80",
    );
  });
});
