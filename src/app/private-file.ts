// Writes the files kube-proxy-ts produces on request (--dump-state, --write-config-to). Both can
// hold what a cluster would rather not show (every Service and endpoint, the kubeconfig path),
// and both are often pointed into shared directories, so each is written:
// - readable by its owner only (mode 0600);
// - atomically: a temporary file in the same directory, fsynced, then renamed over FILE, so a
//   reader sees the old file or the whole new one, and a failure leaves no partial file;
// - never through a symlink: the temporary file is created with O_CREAT|O_EXCL|O_NOFOLLOW (a
//   name planted in advance makes the open fail), and rename(2) replaces the directory entry
//   FILE itself. A symlink at FILE is therefore REPLACED by the new regular file; the file it
//   pointed to is left untouched.

import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";

const MODE = 0o600;

function writeAll(fd: number, bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
}

// Best effort: makes the rename itself durable. Some filesystems refuse fsync on a directory.
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    fsyncSync(fd);
  } catch {
    // The file's own data is already on disk; only the rename's durability is left to the kernel.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Writes `data` to `path` with mode 0600, atomically, never following a symlink (see above). */
export function writePrivateFileSync(path: string, data: string | Uint8Array): void {
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const fd = openSync(temp, flags, MODE);
  let renamed = false;
  try {
    try {
      // The umask can only clear bits; set the mode outright so it is 0600 whatever it was.
      fchmodSync(fd, MODE);
      writeAll(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
    renamed = true;
  } finally {
    if (!renamed) {
      try {
        unlinkSync(temp);
      } catch {
        // Already gone: nothing is left behind either way.
      }
    }
  }
  syncDirectory(dir);
}
