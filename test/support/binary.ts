// The real compiled binary under test. scripts/test builds it first; a lone `bun test` run
// builds it on demand so these tests never run against a stale or missing file.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scaled } from "./kernel-vm.ts";

export const BINARY = join(import.meta.dir, "..", "..", "dist", "kube-proxy-ts");

export function ensureBinary(): string {
  if (!existsSync(BINARY)) {
    const r = spawnSync("bash", ["scripts/build"], {
      cwd: join(import.meta.dir, "..", ".."),
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`scripts/build failed: ${r.stderr}`);
  }
  return BINARY;
}

export interface BinaryResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runBinary(args: string[], opts: { timeoutMs?: number } = {}): BinaryResult {
  // A dry run's report of a big state passes spawnSync's 1 MiB default, which kills the child.
  const r = spawnSync(ensureBinary(), args, {
    encoding: "utf8",
    timeout: scaled(opts.timeoutMs ?? 30_000),
    maxBuffer: 256 << 20,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export function tempDir(prefix = "kpts-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Like runBinary, but without blocking the event loop (needed when the test hosts a server). */
export async function runBinaryAsync(
  args: string[],
  opts: { timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<BinaryResult> {
  const { spawn } = await import("node:child_process");
  const child = spawn(ensureBinary(), args, {
    env: { ...process.env, ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => {
    stdout += d;
  });
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), scaled(opts.timeoutMs ?? 30_000));
  const code = await new Promise<number>((resolve) => child.on("close", (c) => resolve(c ?? -1)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}
