// Test suites that need a kernel this host lacks (IPVS, dummy devices, a second kernel version)
// run inside scripts/kernel-vm. The host side boots one guest per test file, each with its own
// limit (so a slow or hung file fails alone and the next file still runs), runs `bun test` there
// with a JUnit report written into the shared work tree, and turns each guest test case back into
// a host test. The guest side reads inKernelVm() and stretches its waits with timeScale().

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const REPO = resolve(import.meta.dir, "../..");

/** True inside the guest (scripts/kernel-vm sets it for the command it runs). */
export function inKernelVm(): boolean {
  return process.env.KPTS_KERNEL_VM === "1";
}

/**
 * Stops a guest-only suite loudly when it is run anywhere but the guest (rather than skipping,
 * which would prove nothing). `file` names the suite in the message.
 */
export function requireKernelVm(file: string): void {
  if (!inKernelVm()) throw new Error(`${file} runs in the kernel VM (see test/vm/kernel-vm.test.ts)`);
}

/**
 * How much slower than this host a test must allow the machine to be: a guest's CPU is emulated
 * unless scripts/kernel-vm found a working KVM (TCG: 10-20x slower, more on a busy host; KVM:
 * near native, but the guest shares the host's cores), so every wait and deadline in a guest
 * suite is multiplied by this. KPTS_TIME_SCALE overrides it.
 */
export function timeScale(): number {
  const forced = Number(process.env.KPTS_TIME_SCALE);
  if (Number.isFinite(forced) && forced >= 1) return forced;
  if (!inKernelVm()) return 1;
  return process.env.KPTS_VM_ACCEL === "kvm" ? 4 : 20;
}

/** `ms` stretched for this machine (see timeScale). */
export function scaled(ms: number): number {
  return Math.round(ms * timeScale());
}

export interface GuestCase {
  /** The guest test file, relative to the repository. */
  readonly file: string;
  /** The innermost describe() name ("" at top level). */
  readonly group: string;
  readonly name: string;
  readonly seconds: number;
  /** The failure text, when the case failed. */
  readonly failure?: string;
}

/** One guest test file and how long its `bun test` may run in the guest. */
export interface GuestFile {
  /** Relative to the repository (any name; `bun test ./path` runs it). */
  readonly file: string;
  /** Seconds `bun test` of this file may take inside the guest, boot not included. */
  readonly limitSeconds: number;
}

/** What one guest boot for one file left. */
export interface GuestFileRun {
  readonly file: string;
  /**
   * scripts/kernel-vm's exit status: the guest's `bun test` status, 124 when the file hit its own
   * limit, 125 when the guest could not boot or did not finish.
   */
  readonly status: number;
  /** The file's cases; one failed "(the whole file)" case when it left no report. */
  readonly cases: readonly GuestCase[];
  /** Everything this guest printed (also streamed while it ran). */
  readonly output: string;
  /** Host wall time of this guest, boot included. */
  readonly wallSeconds: number;
}

export interface GuestRunOptions {
  readonly files: readonly GuestFile[];
  /** Shell commands run in each guest before its file (module loads a node would have done). */
  readonly setup?: readonly string[];
  /** Per-test timeout inside the guest, ms. */
  readonly testTimeoutMs?: number;
  /**
   * Seconds a guest may spend booting and shutting down on top of its file's limit (default 300:
   * an emulated boot takes 10-20 s here, more on a busy host).
   */
  readonly bootAllowanceSeconds?: number;
  /** Where the guests' output goes as it arrives (default: stderr, prefixed). */
  readonly onOutput?: (chunk: string) => void;
}

const XML_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function xmlText(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref[0] === "#") {
      const code =
        ref[1] === "x" || ref[1] === "X" ? Number.parseInt(ref.slice(2), 16) : Number(ref.slice(1));
      return Number.isFinite(code) ? String.fromCodePoint(code) : whole;
    }
    return XML_ENTITIES[ref] ?? whole;
  });
}

function xmlAttr(tag: string, name: string): string {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m?.[1] === undefined ? "" : xmlText(m[1]);
}

/** The test cases of a `bun test --reporter=junit` report. */
export function parseJunit(xml: string): GuestCase[] {
  const cases: GuestCase[] = [];
  const re = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (let m = re.exec(xml); m !== null; m = re.exec(xml)) {
    const tag = m[1] ?? "";
    const body = m[3] ?? "";
    const failure = /<(failure|error)\b([^>]*)>([\s\S]*?)<\/\1>|<(failure|error)\b([^>]*)\/>/.exec(body);
    const c: GuestCase = {
      file: xmlAttr(tag, "file"),
      group: xmlAttr(tag, "classname"),
      name: xmlAttr(tag, "name"),
      seconds: Number(xmlAttr(tag, "time")) || 0,
      ...(failure
        ? {
            failure:
              xmlText(failure[3] || xmlAttr(` ${failure[2] ?? failure[5] ?? ""}`, "message")) || "failed",
          }
        : {}),
    };
    cases.push(c);
  }
  return cases;
}

/**
 * Runs each file in a guest of its own, one after another. A file's limit counts only its own
 * `bun test`, so no file's slowness can cut another's time; a file that left no report becomes
 * one failed case that says why.
 */
export async function runGuestFiles(o: GuestRunOptions): Promise<GuestFileRun[]> {
  const runs: GuestFileRun[] = [];
  for (const f of o.files) runs.push(await runGuestFile(f, o));
  return runs;
}

/** scripts/kernel-vm's status when the guest's own `timeout` stopped the file. */
const FILE_LIMIT_HIT = 124;

/** What the guest prints, and the host reports, when a file hits its limit. */
const limitHitMessage = (f: GuestFile) => `${f.file} did not finish within its limit of ${f.limitSeconds} s`;

/** The default destination of guest output: the host's stderr, each line marked as the guest's. */
export function writeGuestOutput(chunk: string): void {
  process.stderr.write(chunk.replace(/^(?=.)/gm, "  [vm] "));
}

function runGuestFile(f: GuestFile, o: GuestRunOptions): Promise<GuestFileRun> {
  const outDir = join(REPO, "dist", "kernel-vm", `run-${process.pid}-${Date.now()}`);
  mkdirSync(outDir, { recursive: true });
  const report = join(outDir, "report.xml");
  const bun = relative(REPO, join(REPO, "node_modules", ".bin", "bun"));
  const testCmd = [
    "NO_COLOR=1",
    "timeout",
    "--kill-after=10",
    String(f.limitSeconds),
    bun,
    "test",
    `--timeout=${o.testTimeoutMs ?? 600_000}`,
    "--reporter=junit",
    `--reporter-outfile=${relative(REPO, report)}`,
    `./${f.file}`,
  ]
    .map(shellQuote)
    .join(" ");
  const script = [
    ...(o.setup ?? []).map((cmd) => `${cmd} || exit 125`),
    testCmd,
    "rc=$?",
    // timeout(1) exits 124 when its TERM ended the file, 137 when it had to KILL it.
    `if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo ${shellQuote(`kernel-vm: ${limitHitMessage(f)}`)}; exit ${FILE_LIMIT_HIT}; fi`,
    'exit "$rc"',
  ].join("\n");
  const guestLimit = f.limitSeconds + (o.bootAllowanceSeconds ?? 300);
  const argv = [
    join(REPO, "scripts", "kernel-vm"),
    "--timeout",
    String(guestLimit),
    "--",
    "bash",
    "-c",
    script,
  ];
  const onOutput = o.onOutput ?? writeGuestOutput;
  const started = Date.now();
  return new Promise((resolvePromise) => {
    const child = spawn(argv[0] as string, argv.slice(1), { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const take = (d: Buffer) => {
      const s = d.toString("utf8");
      output += s;
      onOutput(s);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", (err) => {
      output += `\n${String(err)}\n`;
    });
    child.on("close", (code, signal) => {
      const status = code ?? (signal ? 128 : 125);
      const cases = existsSync(report)
        ? parseJunit(readFileSync(report, "utf8")).map((c) => ({ ...c, file: f.file }))
        : [
            {
              file: f.file,
              group: "",
              name: "(the whole file)",
              seconds: 0,
              failure: noReportReason(f, status, guestLimit),
            },
          ];
      rmSync(outDir, { recursive: true, force: true });
      resolvePromise({ file: f.file, status, cases, output, wallSeconds: (Date.now() - started) / 1000 });
    });
  });
}

function noReportReason(f: GuestFile, status: number, guestLimit: number): string {
  if (status === FILE_LIMIT_HIT) return limitHitMessage(f);
  if (status === 125) {
    return `${f.file}: the guest could not boot or did not finish within ${guestLimit} s (kernel-vm exit 125); see the guest output above`;
  }
  return `${f.file} left no report: bun exited ${status} without one; see the guest output above`;
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./=:,+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
