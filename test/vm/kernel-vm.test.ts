// The suites that need another kernel, run in one boot of scripts/kernel-vm (Debian's stock
// kernel under QEMU: IPVS, dummy devices, kernel 6.1 beside this host's). Each test case the
// guest ran becomes a test here, named "<file> › <group> › <name>", so a failure in the guest
// fails `npm test` by name. Guest suites are test/vm/*.vm.ts (a name the host's own `bun test`
// does not pick up) plus the host's iptables e2e suites, run again on the guest's kernel.

import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ensureBinary } from "../support/binary.ts";
import { type GuestCase, inKernelVm, parseJunit, runInKernelVm } from "../support/kernel-vm.ts";

const REPO = resolve(import.meta.dir, "../..");
const GUEST_SUITES = readdirSync(join(REPO, "test", "vm"))
  .filter((f) => f.endsWith(".vm.ts"))
  .sort()
  .map((f) => `test/vm/${f}`);
/**
 * Host suites that run again on the guest's kernel, so syntax one kernel refuses is caught.
 * (first-sync.test.ts is left out: its 1,200-chain cluster costs minutes on an emulated CPU and
 * writes no rule the others do not.)
 */
const SECOND_KERNEL_SUITES = [
  "test/e2e/iptables.test.ts",
  "test/e2e/dry-run-restore.test.ts",
  "test/e2e/cleanup.test.ts",
  "test/e2e/nftables-cleanup.test.ts",
];
/** What a node has loaded before kube-proxy starts (containers and CNI use conntrack). */
const NODE_SETUP = ["modprobe nf_conntrack"];

if (inKernelVm()) throw new Error("test/vm/kernel-vm.test.ts runs on the host, not in the guest");

ensureBinary();
const run = await runInKernelVm({
  files: [...GUEST_SUITES, ...SECOND_KERNEL_SUITES],
  setup: NODE_SETUP,
  // CI's whole run must stay under 30 minutes; alone on CI's machine the guest needs far less.
  limitSeconds: 1380,
  fileLimitSeconds: 600,
});
console.error(
  `kernel-vm: ${run.cases.length} guest tests, ${run.cases.filter((c) => c.failure).length} failed, ` +
    `exit ${run.status}, ${run.wallSeconds.toFixed(0)} s wall`,
);

const label = (c: GuestCase) => [c.file, c.group, c.name].filter(Boolean).join(" › ");

describe("in the kernel VM", () => {
  test("the guest booted and exited with its tests' status", () => {
    const failed = run.cases.filter((c) => c.failure).length;
    if (run.status !== 0 && failed === 0) {
      throw new Error(`the guest exited ${run.status} with no failed test:\n${run.output.slice(-4000)}`);
    }
    expect(run.cases.length).toBeGreaterThan(0);
  });

  for (const c of run.cases) {
    test(label(c), () => {
      if (c.failure) throw new Error(`failed in the guest (${c.seconds.toFixed(1)} s):\n${c.failure}`);
    });
  }
});

describe("scripts/kernel-vm", () => {
  test("a guest that does not finish in time is reported, with exit 125", () => {
    const r = spawnSync(join(REPO, "scripts", "kernel-vm"), ["--timeout", "1", "--", "sleep", "600"], {
      cwd: REPO,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.status).toBe(125);
    expect(r.stderr).toContain("did not finish within 1s");
  });

  test("runs from any work directory (here one under /tmp), which it shares read-write, and passes the exit status back", () => {
    const dir = mkdtempSync(join(tmpdir(), "kpts-vm-"));
    try {
      writeFileSync(join(dir, "in"), "from the host\n");
      const r = spawnSync(
        join(REPO, "scripts", "kernel-vm"),
        ["--", "bash", "-c", 'cat in > out && echo "$KPTS_KERNEL_VM" >> out && exit 7'],
        { cwd: dir, encoding: "utf8", timeout: 600_000 },
      );
      expect(r.status, r.stderr).toBe(7);
      expect(readFileSync(join(dir, "out"), "utf8")).toBe("from the host\n1\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);

  test("a command is required", () => {
    const r = spawnSync(join(REPO, "scripts", "kernel-vm"), [], {
      cwd: REPO,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.status).toBe(125);
    expect(r.stderr).toContain("no command given");
  });

  test("parseJunit reads names, files, groups and failure text", () => {
    const xml = `<testsuites><testsuite name="a.vm.ts" file="a.vm.ts">
      <testcase name="ok &lt;1&gt;" classname="grp" time="0.5" file="a.vm.ts" line="2" />
      <testcase name="bad" classname="" time="1.25" file="a.vm.ts" line="3"><failure type="E" message="m">boom&#10;here</failure></testcase>
    </testsuite></testsuites>`;
    expect(parseJunit(xml)).toEqual([
      { file: "a.vm.ts", group: "grp", name: "ok <1>", seconds: 0.5 },
      { file: "a.vm.ts", group: "", name: "bad", seconds: 1.25, failure: "boom\nhere" },
    ]);
  });
});
