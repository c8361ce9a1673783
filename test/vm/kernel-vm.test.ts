// The suites that need another kernel, run by scripts/kernel-vm (Debian's stock kernel under
// QEMU: IPVS, dummy devices, kernel 6.1 beside this host's), each file in a guest of its own with
// its own limit, so a slow file fails alone. Each test case a guest ran becomes a test here, named
// "<file> › <group> › <name>", so a failure in a guest fails `npm test` by name. Guest suites are
// test/vm/*.vm.ts (a name the host's own `bun test` does not pick up). With KPTS_VM_FULL=1 (and in
// scripts/release) the host's iptables/nftables e2e suites also run again on the guest's kernel.

import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { ensureBinary } from "../support/binary.ts";
import {
  type GuestCase,
  type GuestFile,
  type GuestFileRun,
  inKernelVm,
  parseJunit,
  runGuestFiles,
  writeGuestOutput,
} from "../support/kernel-vm.ts";

const REPO = resolve(import.meta.dir, "../..");
/**
 * A file's own limit inside its guest. Alone on an idle machine the slowest file
 * (ipvs-lifecycle) takes about 3 minutes emulated; this leaves room for a machine several times
 * busier, and a file that hangs costs only itself.
 */
const FILE_LIMIT_SECONDS = 900;
const GUEST_SUITES: GuestFile[] = readdirSync(join(REPO, "test", "vm"))
  .filter((f) => f.endsWith(".vm.ts"))
  .sort()
  .map((f) => ({ file: `test/vm/${f}`, limitSeconds: FILE_LIMIT_SECONDS }));
/**
 * Host suites that run again on the guest's kernel, so syntax one kernel refuses is caught. They
 * double the VM's time, so they run only with KPTS_VM_FULL=1 (scripts/release sets it).
 * (first-sync.test.ts is left out: its 1,200-chain cluster costs minutes on an emulated CPU and
 * writes no rule the others do not.)
 */
const SECOND_KERNEL_SUITES: GuestFile[] = [
  "test/e2e/iptables.test.ts",
  "test/e2e/dry-run-restore.test.ts",
  "test/e2e/cleanup.test.ts",
  "test/e2e/nftables-cleanup.test.ts",
].map((file) => ({ file, limitSeconds: FILE_LIMIT_SECONDS }));
/** What a node has loaded before kube-proxy starts (containers and CNI use conntrack). */
const NODE_SETUP = ["modprobe nf_conntrack"];

if (inKernelVm()) throw new Error("test/vm/kernel-vm.test.ts runs on the host, not in the guest");

ensureBinary();
// A parallel `bun test` shows a file's output only when the file is done; the guests' output
// also goes to this log as it arrives, for `tail -f` during a run.
const GUEST_LOG = join(REPO, "dist", "kernel-vm", "guests.log");
mkdirSync(dirname(GUEST_LOG), { recursive: true });
writeFileSync(GUEST_LOG, "");
const runs = await runGuestFiles({
  files: [...GUEST_SUITES, ...(process.env.KPTS_VM_FULL === "1" ? SECOND_KERNEL_SUITES : [])],
  setup: NODE_SETUP,
  onOutput: (chunk) => {
    appendFileSync(GUEST_LOG, chunk);
    writeGuestOutput(chunk);
  },
});
for (const r of runs) {
  console.error(
    `kernel-vm: ${r.file}: ${r.cases.length} guest tests, ${r.cases.filter((c) => c.failure).length} failed, ` +
      `exit ${r.status}, ${r.wallSeconds.toFixed(0)} s wall`,
  );
}
// scripts/test lists the slowest files; each guest file counts as one there.
if (process.env.KPTS_GUEST_TIMINGS) {
  const timings = Object.fromEntries(
    runs.map((r) => [`${r.file} (kernel VM)`, Math.round(r.wallSeconds * 1000)]),
  );
  writeFileSync(process.env.KPTS_GUEST_TIMINGS, `${JSON.stringify(timings, null, 2)}\n`);
}

const label = (c: GuestCase) => [c.file, c.group, c.name].filter(Boolean).join(" › ");

/** A guest that failed without a failed case (setup, a crash after the report) fails its file. */
function exitedAsItsTests(r: GuestFileRun): void {
  const failed = r.cases.filter((c) => c.failure).length;
  if (r.status !== 0 && failed === 0) {
    throw new Error(`the guest exited ${r.status} with no failed test:\n${r.output.slice(-4000)}`);
  }
  expect(r.cases.length).toBeGreaterThan(0);
}

describe("in the kernel VM", () => {
  for (const r of runs) {
    test(`${r.file} › the guest booted and exited with its tests' status`, () => exitedAsItsTests(r));
    for (const c of r.cases) {
      test(label(c), () => {
        if (c.failure) throw new Error(`failed in the guest (${c.seconds.toFixed(1)} s):\n${c.failure}`);
      });
    }
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

  test("runs from any work directory (here one under /tmp), which it shares read-write, passes the exit status back, and tells the guest the accelerator the probe chose", () => {
    const prepared = spawnSync(join(REPO, "scripts", "kernel-vm"), ["--prepare"], {
      cwd: REPO,
      encoding: "utf8",
      timeout: 600_000,
    });
    const accel = /accelerator (kvm|tcg)/.exec(prepared.stderr)?.[1];
    expect(accel, prepared.stderr).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), "kpts-vm-"));
    try {
      writeFileSync(join(dir, "in"), "from the host\n");
      const r = spawnSync(
        join(REPO, "scripts", "kernel-vm"),
        ["--", "bash", "-c", 'cat in > out && echo "$KPTS_KERNEL_VM $KPTS_VM_ACCEL" >> out && exit 7'],
        { cwd: dir, encoding: "utf8", timeout: 600_000 },
      );
      expect(r.status, r.stderr).toBe(7);
      expect(readFileSync(join(dir, "out"), "utf8")).toBe(`from the host\n1 ${accel}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);

  test("a file that overruns its limit fails alone: the next file still runs in its own guest and reports", async () => {
    const out: string[] = [];
    const [overran, next] = await runGuestFiles({
      files: [
        { file: "test/vm/fixtures/overruns.guest.ts", limitSeconds: 20 },
        { file: "test/vm/fixtures/passes.guest.ts", limitSeconds: FILE_LIMIT_SECONDS },
      ],
      onOutput: (chunk) => out.push(chunk),
    });
    expect(overran?.status, out.join("")).toBe(124);
    expect(overran?.cases).toEqual([
      {
        file: "test/vm/fixtures/overruns.guest.ts",
        group: "",
        name: "(the whole file)",
        seconds: 0,
        failure: "test/vm/fixtures/overruns.guest.ts did not finish within its limit of 20 s",
      },
    ]);
    expect(next?.status, out.join("")).toBe(0);
    expect(next?.cases.map((c) => [c.name, c.failure])).toEqual([
      ["runs in the guest after the file before it was stopped", undefined],
    ]);
  }, 3_600_000);

  test("KPTS_VM_ACCEL other than auto, kvm or tcg: exit 125 naming the value", () => {
    const r = spawnSync(join(REPO, "scripts", "kernel-vm"), ["--", "true"], {
      cwd: REPO,
      encoding: "utf8",
      timeout: 600_000,
      env: { ...process.env, KPTS_VM_ACCEL: "fast" },
    });
    expect(r.status).toBe(125);
    expect(r.stderr).toContain("KPTS_VM_ACCEL must be auto, kvm or tcg, not 'fast'");
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
