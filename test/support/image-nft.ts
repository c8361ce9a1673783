// The nft the image ships, runnable on this machine: scripts/build-rootfs's root is kept in
// dist/image-rootfs (built on first use: the binary, then trixie's packages from the cache or
// the mirror), and a wrapper starts its nft through that root's own loader and libraries, since
// trixie's glibc is newer than the one a bookworm host has. fake-vs-real checks FakeNft against
// it as well as the host's nft, nftables-outside-changes runs the binary with it, and
// scripts/bench-api --nft=image measures with it. Another suite's nft (trixie's 1.1.3) stands in
// for another program on the node that uses a newer nft.

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
const BUILD_TIMEOUT_MS = 10 * 60_000;

/** Where a suite's root goes: the image's own (the default suite) or another suite's. */
function rootOf(suite: string | undefined): { root: string; wrapper: string } {
  return suite === undefined
    ? { root: join(REPO, "dist", "image-rootfs"), wrapper: join(REPO, "dist", "image-nft") }
    : { root: join(REPO, "dist", `rootfs-${suite}`), wrapper: join(REPO, "dist", `nft-${suite}`) };
}

/** The path of a program that runs the image's nft; builds the root when it is missing. */
export function imageNftProgram(): string {
  return suiteNftProgram(undefined);
}

/**
 * The same for another Debian suite's nft (scripts/build-rootfs with KPTS_ROOTFS_SUITE), e.g.
 * trixie's, to play another program on the node that uses a newer nft.
 */
export function suiteNftProgram(suite: string | undefined): string {
  const { root, wrapper } = rootOf(suite);
  if (!existsSync(join(root, "usr", "sbin", "nft"))) buildRoot(root, suite);
  const libs = join(root, "usr", "lib", "x86_64-linux-gnu");
  const text = `#!/bin/sh\nexec ${libs}/ld-linux-x86-64.so.2 --library-path ${libs} ${root}/usr/sbin/nft "$@"\n`;
  // Rewritten only when it differs: another process may be running it.
  if (!existsSync(wrapper) || readFileSync(wrapper, "utf8") !== text)
    writeFileSync(wrapper, text, { mode: 0o755 });
  return wrapper;
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
function buildRoot(root: string, suite: string | undefined): void {
  ensureBinary();
  const staging = mkdtempSync(join(REPO, "dist", ".rootfs-"));
  try {
    const r = spawnSync("bash", ["scripts/build-rootfs", staging], {
      cwd: REPO,
      encoding: "utf8",
      env: suite === undefined ? process.env : { ...process.env, KPTS_ROOTFS_SUITE: suite },
      timeout: scaled(BUILD_TIMEOUT_MS),
      maxBuffer: 16 << 20,
    });
    if (r.status !== 0) throw new Error(`scripts/build-rootfs exited ${r.status}: ${r.stderr}`);
    if (!existsSync(join(root, "usr", "sbin", "nft"))) {
      rmSync(root, { recursive: true, force: true });
      renameSync(staging, root);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
