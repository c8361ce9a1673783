// Test suites that need a kernel this host lacks (IPVS, dummy devices, a second kernel version)
// run inside scripts/kernel-vm. The host side boots the guest once, runs `bun test` there with
// a JUnit report written into the shared work tree, and turns each guest test case back into a
// host test. The guest side reads inKernelVm() and stretches its waits with timeScale().

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
 * How much slower than this host a test must allow the machine to be: the guest's CPU is emulated
 * (10-20x slower, more on a busy host), so every wait and deadline in a guest suite is multiplied
 * by this. KPTS_TIME_SCALE overrides it.
 */
export function timeScale(): number {
  const forced = Number(process.env.KPTS_TIME_SCALE);
  if (Number.isFinite(forced) && forced >= 1) return forced;
  return inKernelVm() ? 20 : 1;
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

export interface GuestRun {
  /** scripts/kernel-vm's exit status: the guest command's, or 125 when the guest failed. */
  readonly status: number;
  readonly cases: readonly GuestCase[];
  /** Everything the guest printed (also streamed to stderr while it ran). */
  readonly output: string;
  readonly wallSeconds: number;
}

export interface GuestRunOptions {
  /** Test files, relative to the repository (any name; `bun test ./path` runs it). */
  readonly files: readonly string[];
  /** Shell commands run in the guest before the tests (module loads a node would have done). */
  readonly setup?: readonly string[];
  /** Per-test timeout inside the guest, ms. */
  readonly testTimeoutMs?: number;
  /** The whole guest's limit, seconds. */
  readonly limitSeconds?: number;
  /** Each file's limit inside the guest, seconds. */
  readonly fileLimitSeconds?: number;
  /** Where the guest's output goes as it arrives (default: stderr, prefixed). */
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
 * Runs `files` in one guest boot, one `bun test` per file with its own JUnit report, so a file
 * that hangs or crashes loses only its own results; resolves when the guest is gone. A file
 * that left no report becomes one failed case saying so.
 */
export function runInKernelVm(o: GuestRunOptions): Promise<GuestRun> {
  const outDir = join(REPO, "dist", "kernel-vm", `run-${process.pid}-${Date.now()}`);
  mkdirSync(outDir, { recursive: true });
  const reportOf = (i: number) => join(outDir, `${i}.xml`);
  const bun = relative(REPO, join(REPO, "node_modules", ".bin", "bun"));
  const perFile = o.files.map((f, i) =>
    [
      "NO_COLOR=1",
      "timeout",
      "--kill-after=10",
      String(o.fileLimitSeconds ?? 900),
      bun,
      "test",
      `--timeout=${o.testTimeoutMs ?? 600_000}`,
      "--reporter=junit",
      `--reporter-outfile=${relative(REPO, reportOf(i))}`,
      `./${f}`,
    ]
      .map(shellQuote)
      .join(" "),
  );
  const script = [
    ...(o.setup ?? []).map((cmd) => `${cmd} || exit 125`),
    "failed=0",
    ...perFile.map((cmd) => `${cmd} || failed=1`),
    "exit $failed",
  ].join("\n");
  const argv = [
    join(REPO, "scripts", "kernel-vm"),
    "--timeout",
    String(o.limitSeconds ?? 1500),
    "--",
    "bash",
    "-c",
    script,
  ];
  const onOutput =
    o.onOutput ?? ((chunk: string) => process.stderr.write(chunk.replace(/^(?=.)/gm, "  [vm] ")));
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
      const cases: GuestCase[] = [];
      o.files.forEach((file, i) => {
        const report = reportOf(i);
        if (existsSync(report)) {
          cases.push(...parseJunit(readFileSync(report, "utf8")).map((c) => ({ ...c, file })));
        } else {
          cases.push({
            file,
            group: "",
            name: "(the whole file)",
            seconds: 0,
            failure: `${file} left no report: it did not finish (per-file limit ${o.fileLimitSeconds ?? 900} s, guest limit ${o.limitSeconds ?? 1500} s) or bun crashed; see the guest output above`,
          });
        }
      });
      rmSync(outDir, { recursive: true, force: true });
      resolvePromise({
        status: code ?? (signal ? 128 : 125),
        cases,
        output,
        wallSeconds: (Date.now() - started) / 1000,
      });
    });
  });
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./=:,+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
