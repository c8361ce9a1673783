// The ipvs deprecation notice as the built binary reports it in a dry run: `--mode=ipvs
// --dry-run` on the embedded example cluster (no API server: the environment names none) logs
// the deprecation at error level on stderr, lists the Warning Event a real run would post on its
// Node (IPVSDeprecation, action StartKubeProxy) in JSON's `events` and in the text output's
// "Events a real run would post" section, and exits 3 on a host without IPVS (0 where every
// prerequisite holds). nftables mode reports no such Event. A real ipvs run posting the Event to
// an API server is test/vm/ipvs-deprecation-event.vm.ts (it needs the VM's IPVS kernel).
//
// Run: `node_modules/.bin/bun test --timeout 60000 test/e2e/ipvs-deprecation.test.ts`.
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { kubeProxyBinary } from "../support/e2e-kubeproxy.ts";
import { inKernelVm, scaled } from "../support/kernel-vm.ts";

const MESSAGE =
  "The ipvs proxier is now deprecated and may be removed in a future release. Please use 'nftables' instead.";
const EVENT = {
  type: "Warning",
  reason: "IPVSDeprecation",
  action: "StartKubeProxy",
  message: MESSAGE,
  regarding: "Node/node-a",
};

interface Report {
  mode: string;
  checks: { name: string; ok: boolean; detail: string }[];
  events?: Record<string, unknown>[];
}

/** The binary's dry run with `args`, in an environment that names no API server. */
function dryRun(args: readonly string[]): { code: number; stdout: string; stderr: string } {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && k !== "KUBECONFIG" && !k.startsWith("KUBERNETES_SERVICE_")) env[k] = v;
  }
  const r = spawnSync(kubeProxyBinary(), ["--dry-run", ...args], {
    encoding: "utf8",
    env,
    timeout: scaled(30_000),
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function parseReport(stdout: string): Report {
  try {
    return JSON.parse(stdout) as Report;
  } catch {
    throw new Error(`--output=json printed no JSON object:\n${stdout.slice(0, 2000)}`);
  }
}

/** Whether this machine can run IPVS at all (the VM's kernel can; this host's cannot). */
const hostHasIpvs = () => inKernelVm() || existsSync("/proc/net/ip_vs");

describe("ipvs deprecation in --dry-run", () => {
  test("--output=json: the Warning Event in `events`, the error line on stderr, exit 3 without IPVS", () => {
    const r = dryRun(["--mode=ipvs", "--output=json"]);
    const report = parseReport(r.stdout);
    expect(report.mode).toBe("ipvs");
    expect(report.events, r.stdout.slice(0, 2000)).toEqual([EVENT]);
    // klog's error level: "E<mmdd> <time> ..." and the message quoted.
    const errorLines = r.stderr.split("\n").filter((l) => /^E\d{4} /.test(l) && l.includes(MESSAGE));
    expect(errorLines.length, r.stderr).toBe(1);
    // The cluster came from the embedded example, not from anything on this machine.
    const state = report.checks.find((c) => c.name === "cluster state");
    expect(state?.detail, JSON.stringify(report.checks)).toContain("examples/cluster.yaml (embedded)");
    // Exit 3 exactly when a prerequisite failed; on a host without IPVS the modules check fails.
    expect(r.code, r.stderr).toBe(report.checks.every((c) => c.ok) ? 0 : 3);
    if (!hostHasIpvs()) {
      expect(r.code).toBe(3);
      expect(report.checks.find((c) => c.name === "ipvs kernel modules")?.ok).toBe(false);
    }
  });

  test("text output: the 'Events a real run would post' section names the Event", () => {
    const r = dryRun(["--mode=ipvs"]);
    expect([0, 3]).toContain(r.code);
    const lines = r.stdout.split("\n");
    const at = lines.indexOf("Events a real run would post (1):");
    expect(at, r.stdout.slice(0, 3000)).toBeGreaterThanOrEqual(0);
    expect(lines[at + 1]).toBe(`  Warning IPVSDeprecation (StartKubeProxy) on Node/node-a: ${MESSAGE}`);
  });

  test("nftables mode: no deprecation Event and no deprecation log line", () => {
    const r = dryRun(["--mode=nftables", "--output=json"]);
    const report = parseReport(r.stdout);
    expect(report.mode).toBe("nftables");
    expect(report.events ?? []).not.toContainEqual(expect.objectContaining({ reason: "IPVSDeprecation" }));
    expect(r.stderr).not.toContain("ipvs proxier is now deprecated");
    expect(r.stdout).not.toContain("IPVSDeprecation");
  });
});
