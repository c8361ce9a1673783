// The real compiled binary under test. scripts/test builds it first; a lone `bun test` run
// builds it on demand so these tests never run against a stale or missing file.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
  const r = spawnSync(ensureBinary(), args, { encoding: "utf8", timeout: opts.timeoutMs ?? 30_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export function tempDir(prefix = "kpts-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
