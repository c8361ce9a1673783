// Runs in the guest (see test/vm/kernel-vm.test.ts). On a kernel with IPVS the ipvs-mode
// `--dry-run` passes its prerequisite checks, and every command of its plan — ipset restore,
// `ipvsadm --restore`, the kube-ipvs0 dummy device and its addresses, the iptables input with its
// `-m ipvs` rule — is accepted by the real tools in a fresh namespace and builds what it says.
// (On the host, test/e2e/ipvs-plan.test.ts can replay only the ipset and iptables parts.)

import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { runBinary } from "../support/binary.ts";
import { requireKernelVm, scaled } from "../support/kernel-vm.ts";

requireKernelVm("ipvs-plan-replay.vm.ts");

const ns = `kpts-${process.pid.toString(36)}-${randomBytes(3).toString("hex")}-plan`;
const inNs = (argv: readonly string[], stdin?: string) =>
  spawnSync("ip", ["netns", "exec", ns, ...argv], {
    input: stdin,
    encoding: "utf8",
    timeout: scaled(20_000),
  });

afterAll(() => {
  spawnSync("ip", ["netns", "del", ns], { timeout: scaled(10_000) });
});

interface PlannedCommand {
  readonly argv: string[];
  readonly stdin?: string;
}

/** Failures a real run expects and reads as "already done" (the plan cannot know them). */
function expectedRefusal(c: PlannedCommand, stderr: string): boolean {
  const argv = c.argv.join(" ");
  if (c.argv.includes("-N") && stderr.includes("Chain already exists")) return true;
  // Each family ensures kube-ipvs0; the second finds the first one's device.
  if (argv === "ip link add name kube-ipvs0 type dummy" && stderr.includes("File exists")) return true;
  // Stale UDP conntrack entries are flushed whether or not there are any.
  if (c.argv[0] === "conntrack" && stderr.includes("0 flow entries have been deleted")) return true;
  return false;
}

describe("ipvs dry-run plan on a kernel with IPVS", () => {
  test("the prerequisites pass, and every command of the plan succeeds in a fresh namespace", () => {
    const r = runBinary([
      "--mode=ipvs",
      "--dry-run",
      "--state",
      "examples/cluster.yaml",
      "--output=json",
      "--iptables-backend=legacy",
    ]);
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    const report = JSON.parse(r.stdout) as { commands: PlannedCommand[] };
    const tools = new Set(report.commands.map((c) => c.argv[0]));
    for (const tool of ["ipset", "ipvsadm", "ip", "iptables-legacy-restore", "sysctl"]) {
      expect(tools.has(tool), `the plan runs ${tool}`).toBe(true);
    }

    // A real run has loaded ip_vs in its prerequisite check before it writes net.ipv4.vs.*.
    expect(spawnSync("modprobe", ["ip_vs"], { timeout: scaled(10_000) }).status).toBe(0);
    expect(spawnSync("ip", ["netns", "add", ns], { timeout: scaled(10_000) }).status).toBe(0);
    // As on any node, lo is up: until then the namespace has no local routing table, and IPVS
    // refuses every real server as "not unicast" (EINVAL).
    expect(inNs(["ip", "link", "set", "lo", "up"]).status).toBe(0);
    for (const c of report.commands) {
      const done = inNs(c.argv, c.stdin);
      if (done.status !== 0 && expectedRefusal(c, done.stderr)) continue;
      expect({ argv: c.argv.join(" "), code: done.status, stderr: done.stderr }).toEqual({
        argv: c.argv.join(" "),
        code: 0,
        stderr: expect.any(String),
      });
    }

    const ipvs = inNs(["ipvsadm", "-Ln"]).stdout;
    expect(ipvs).toMatch(
      /TCP {2}198\.51\.100\.10:80 rr persistent 10800\n(.*\n)*? {2}-> 203\.0\.113\.11:8080 +Masq +1 /,
    );
    expect(ipvs).toContain("UDP  198.51.100.53:53 rr");
    const bound = inNs(["ip", "-o", "-4", "addr", "show", "dev", "kube-ipvs0"]).stdout;
    for (const vip of ["198.51.100.10", "198.51.100.53", "192.0.2.100", "192.0.2.200"]) {
      expect(bound).toContain(` ${vip}/32 `);
    }
    const filter = inNs(["iptables-legacy-save", "-t", "filter"]).stdout;
    // iptables-save prints the ipvs match's options in its own order and the REJECT default.
    expect(filter).toContain(
      "-A KUBE-IPVS-OUT-FILTER -s 192.0.2.200/32 -m ipvs --vproto 6 --vaddr 192.0.2.200 --vport 443 -j DROP",
    );
    expect(filter).toContain(
      "-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT",
    );
  });
});
