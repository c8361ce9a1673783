// The built binary's nftables-mode smoke check, through `--dry-run --output=json`: the checks
// upstream makes before it chooses the mode (kernel >= 5.13, nft >= 1.0.1, the table can be
// created), the transaction a real run would send, and exit codes as for ipvs (0 when every
// prerequisite holds, 3 when one does not).

import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureBinary, tempDir } from "../support/binary.ts";

interface Report {
  mode: string;
  checks: { name: string; ok: boolean; detail: string }[];
  commands: { argv: string[]; stdin?: string }[];
}

function stateFile(hostState: string): string {
  const file = join(tempDir(), "state.yaml");
  const doc = `---\napiVersion: kube-proxy-ts/v1\nkind: HostState\n${hostState}\n`;
  writeFileSync(file, `${readFileSync("examples/cluster.yaml", "utf8")}${doc}`);
  return file;
}

function dryRun(args: string[], env: NodeJS.ProcessEnv = process.env): { code: number; report: Report } {
  const r = spawnSync(ensureBinary(), ["--proxy-mode=nftables", "--dry-run", "--output=json", ...args], {
    encoding: "utf8",
    timeout: 90_000,
    env,
  });
  if (!r.stdout?.trim()) throw new Error(`no report (exit ${r.status}): ${r.stderr}`);
  return { code: r.status ?? -1, report: JSON.parse(r.stdout) as Report };
}

const check = (r: Report, name: string) => r.checks.find((c) => c.name === name);
const transactions = (r: Report) =>
  r.commands.filter((c) => c.argv[0] === "nft" && c.argv.join(" ") === "nft -f -").map((c) => c.stdin ?? "");

describe("nftables mode: the dry run", () => {
  test("this host (kernel >= 5.13, nft 1.0.6): exit 0, the checks, one transaction per family", () => {
    const { code, report } = dryRun(["--state", stateFile("nftVersion: 1.0.6\nkernelVersion: 6.1.0")]);
    expect(report.mode).toBe("nftables");
    expect(check(report, "nftables kernel version")).toMatchObject({ ok: true });
    expect(check(report, "nft version")).toMatchObject({ ok: true, detail: "nft 1.0.6 (need >= 1.0.1)" });
    expect(check(report, "nftables ip table")?.ok).toBe(true);
    expect(code).toBe(0);
    const all = transactions(report);
    const v4 = all.find((t) => t.startsWith("add table ip kube-proxy")) ?? "";
    const v6 = all.find((t) => t.startsWith("add table ip6 kube-proxy")) ?? "";
    expect(v4).toContain('add table ip kube-proxy { comment "rules for kube-proxy" ; }');
    expect(v4).toContain("add element ip kube-proxy service-ips { 198.51.100.10 . tcp . 80 : goto service-");
    expect(v4).toContain("numgen random mod 2 0 goto endpoint-");
    expect(v6).toContain("add table ip6 kube-proxy");
    // --check probes ran for real and are not part of the plan.
    expect(report.commands.some((c) => c.argv.includes("--check"))).toBe(false);
  });

  test("a kernel older than 5.13: exit 3 and the failed check says so", () => {
    const { code, report } = dryRun(["--state", stateFile("kernelVersion: 5.10.0")]);
    expect(code).toBe(3);
    expect(check(report, "nftables kernel version")).toMatchObject({
      ok: false,
      detail: "kube-proxy in nftables mode requires kernel 5.13 or later; this is 5.10.0",
    });
  });

  test("KUBE_PROXY_NFTABLES_SKIP_KERNEL_VERSION_CHECK skips the kernel check, as upstream", () => {
    const { report } = dryRun(["--state", stateFile("kernelVersion: 5.10.0")], {
      ...process.env,
      KUBE_PROXY_NFTABLES_SKIP_KERNEL_VERSION_CHECK: "1",
    });
    expect(check(report, "nftables kernel version")?.ok).toBe(true);
  });

  test("an empty KUBE_PROXY_NFTABLES_SKIP_KERNEL_VERSION_CHECK does not skip it (1.33)", () => {
    const { code, report } = dryRun(["--state", stateFile("kernelVersion: 5.10.0")], {
      ...process.env,
      KUBE_PROXY_NFTABLES_SKIP_KERNEL_VERSION_CHECK: "",
    });
    expect(code).toBe(3);
    expect(check(report, "nftables kernel version")?.ok).toBe(false);
  });

  test("an nft older than 1.0.1: exit 3", () => {
    const { code, report } = dryRun(["--state", stateFile("nftVersion: 0.9.8")]);
    expect(code).toBe(3);
    expect(check(report, "nft version")).toMatchObject({
      ok: false,
      detail: "nft 0.9.8 is older than the required 1.0.1",
    });
  });

  test("a host without nft: exit 3, nft not installed", () => {
    const emptyPath = join(tempDir(), "bin");
    mkdirSync(emptyPath);
    const { code, report } = dryRun([], { ...process.env, PATH: emptyPath });
    expect(code).toBe(3);
    expect(check(report, "nft version")).toMatchObject({ ok: false, detail: "nft is not installed" });
  });
});
