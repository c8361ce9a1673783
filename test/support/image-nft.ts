// The nft the image ships, runnable on this machine: scripts/build-rootfs's root is kept in
// dist/image-rootfs (built on first use: the binary, then trixie's packages from the cache or
// the mirror), and a wrapper starts its nft through that root's own loader and libraries, since
// trixie's glibc is newer than the one a bookworm host has. fake-vs-real checks FakeNft against
// it as well as the host's nft, nftables-outside-changes runs the binary with it, and
// scripts/bench-api --nft=image measures with it.

import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { isAbsolute, join } from "node:path";
import { ensureBinary, tempDir } from "./binary.ts";
import { scaled } from "./kernel-vm.ts";

const REPO = join(import.meta.dir, "..", "..");
export const IMAGE_ROOT = join(REPO, "dist", "image-rootfs");
const WRAPPER = join(REPO, "dist", "image-nft");
const BUILD_TIMEOUT_MS = 10 * 60_000;

/** The path of a program that runs the image's nft; builds the root when it is missing. */
export function imageNftProgram(): string {
  if (!existsSync(join(IMAGE_ROOT, "usr", "sbin", "nft"))) buildRoot();
  const libs = join(IMAGE_ROOT, "usr", "lib", "x86_64-linux-gnu");
  const text = `#!/bin/sh\nexec ${libs}/ld-linux-x86-64.so.2 --library-path ${libs} ${IMAGE_ROOT}/usr/sbin/nft "$@"\n`;
  // Rewritten only when it differs: another process may be running it.
  if (!existsSync(WRAPPER) || readFileSync(WRAPPER, "utf8") !== text)
    writeFileSync(WRAPPER, text, { mode: 0o755 });
  return WRAPPER;
}

/** A PATH whose `nft` is `program` (the rest as `basePath`), for a process that runs "nft". */
export function pathWithNft(
  program: string,
  basePath = process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin",
): string {
  const dir = tempDir("kpts-nft-path-");
  symlinkSync(isAbsolute(program) ? program : join(process.cwd(), program), join(dir, "nft"));
  return `${dir}:${basePath}`;
}

/** Builds into a fresh directory and renames it into place, so a concurrent build never sees half a root. */
function buildRoot(): void {
  ensureBinary();
  const staging = mkdtempSync(join(REPO, "dist", ".image-rootfs-"));
  try {
    const r = spawnSync("bash", ["scripts/build-rootfs", staging], {
      cwd: REPO,
      encoding: "utf8",
      timeout: scaled(BUILD_TIMEOUT_MS),
      maxBuffer: 16 << 20,
    });
    if (r.status !== 0) throw new Error(`scripts/build-rootfs exited ${r.status}: ${r.stderr}`);
    if (!existsSync(join(IMAGE_ROOT, "usr", "sbin", "nft"))) {
      rmSync(IMAGE_ROOT, { recursive: true, force: true });
      renameSync(staging, IMAGE_ROOT);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
