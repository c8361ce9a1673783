// Runs in the guest (see test/vm/kernel-vm.test.ts): the guest is what the other guest suites
// assume — a kernel with IPVS and dummy devices, root, the work tree writable, the binary there.

import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { inKernelVm } from "../support/kernel-vm.ts";

const REPO = resolve(import.meta.dir, "../..");
const sh = (cmd: string) => spawnSync("bash", ["-c", cmd], { encoding: "utf8", timeout: 120_000 });

test("runs in the guest, as root", () => {
  expect(inKernelVm()).toBe(true);
  expect(process.getuid?.()).toBe(0);
});

test("the kernel loads IPVS and makes dummy devices", () => {
  const r = sh(
    "modprobe ip_vs && ipvsadm -Ln && ip link add kpts-probe0 type dummy && ip link del kpts-probe0",
  );
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  expect(r.stdout).toContain("IP Virtual Server version");
});

test("the work tree is shared read-write and the binary is in it", () => {
  const probe = join(REPO, "dist", `guest-write-${process.pid}`);
  writeFileSync(probe, "x");
  expect(existsSync(probe)).toBe(true);
  rmSync(probe);
  expect(existsSync(join(REPO, "dist", "kube-proxy-ts"))).toBe(true);
});
