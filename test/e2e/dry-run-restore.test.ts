// The --dry-run plan is real: its iptables commands, replayed in a fresh network namespace,
// are accepted by the kernel and build the chains a real run would.

import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { runBinary } from "../support/binary.ts";
import { scaled } from "../support/kernel-vm.ts";

const ns = `kpts-${process.pid.toString(36)}-${randomBytes(3).toString("hex")}-dryrun`;

function inNs(argv: readonly string[], stdin?: string) {
  return spawnSync("ip", ["netns", "exec", ns, ...argv], {
    input: stdin,
    encoding: "utf8",
    timeout: scaled(20_000),
  });
}

afterAll(() => {
  spawnSync("ip", ["netns", "del", ns], { timeout: scaled(10_000) });
});

describe("dry-run plan replayed on a real kernel", () => {
  test("every iptables and nfacct command of `--dry-run --state examples/cluster.yaml` succeeds in a fresh namespace", () => {
    expect(spawnSync("ip", ["netns", "add", ns], { timeout: scaled(10_000) }).status).toBe(0);
    const r = runBinary([
      "--dry-run",
      "--state",
      "examples/cluster.yaml",
      "--output=json",
      "--iptables-backend=legacy",
    ]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { commands: { argv: string[]; stdin?: string }[] };
    const iptables = report.commands.filter((c) => /^(ip6?tables|nfacct)/.test(c.argv[0] ?? ""));
    const restores = iptables.filter((c) => c.argv[0]?.endsWith("-restore"));
    expect(restores.map((c) => c.argv[0])).toEqual(["iptables-legacy-restore", "ip6tables-legacy-restore"]);
    expect(restores[0]?.stdin).toContain("-A KUBE-SERVICES");
    for (const c of iptables) {
      const done = inNs(c.argv, c.stdin);
      // -N of an existing chain exits 1, which the client reads as "already there" (as upstream).
      if (c.argv.includes("-N") && done.status === 1 && done.stderr.includes("Chain already exists"))
        continue;
      // Both families ensure the same nfacct counter; the second add finds it there (EBUSY).
      if (c.argv[0] === "nfacct" && done.stderr.includes("Device or resource busy")) continue;
      expect({ argv: c.argv.join(" "), code: done.status, stderr: done.stderr }).toEqual({
        argv: c.argv.join(" "),
        code: 0,
        stderr: expect.any(String),
      });
    }
    const saved = inNs(["iptables-legacy-save", "-t", "nat"]).stdout;
    expect(saved).toContain(":KUBE-SERVICES");
    expect(saved).toContain(
      '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    );
    expect(saved).toMatch(/-A KUBE-SERVICES -d 198\.51\.100\.10\/32 .* -j KUBE-SVC-/);
  });
});
