// The ipvs --dry-run plan on a real kernel: its ipset restore script and its iptables input
// are accepted by the real tools in a fresh namespace. This host's kernel has no IPVS and no dummy
// devices, so the ipvsadm, `ip link add ... type dummy` and `-m ipvs` steps are skipped here;
// test/vm/ipvs-plan-replay.vm.ts replays the whole plan on a kernel that has them.

import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { runBinary } from "../support/binary.ts";

const ns = `kpts-${process.pid.toString(36)}-${randomBytes(3).toString("hex")}-ipvs`;
const inNs = (argv: readonly string[], stdin?: string) =>
  spawnSync("ip", ["netns", "exec", ns, ...argv], { input: stdin, encoding: "utf8", timeout: 20_000 });

afterAll(() => {
  spawnSync("ip", ["netns", "del", ns], { timeout: 10_000 });
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
