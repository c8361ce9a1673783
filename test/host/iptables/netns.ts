// A throwaway network namespace for real-binary tests of the host clients. Every command runs
// through `ip netns exec`, so nothing a test does can touch the root namespace's tables, and
// every run is bounded by a timeout.

import { randomBytes } from "node:crypto";
import { createRealExec } from "../../../src/exec/runner.ts";
import type { Exec, ExecRequest, ExecResult } from "../../../src/exec/types.ts";

const RUN_TIMEOUT_MS = 20_000;

export interface TestNetns {
  readonly name: string;
  /** An Exec whose every command runs inside the namespace. */
  readonly exec: Exec;
  /** Deletes the namespace (idempotent). */
  remove(): Promise<void>;
}

export async function createTestNetns(): Promise<TestNetns> {
  const host = createRealExec();
  const name = `kpts-${process.pid.toString(36)}-${randomBytes(3).toString("hex")}`;
  const add = await host.run({ cmd: "ip", args: ["netns", "add", name], timeoutMs: RUN_TIMEOUT_MS });
  if (add.code !== 0) throw new Error(`ip netns add ${name}: ${add.stderr.trim()}`);
  let removed = false;
  const exec: Exec = {
    run(req: ExecRequest): Promise<ExecResult> {
      if (removed) throw new Error(`netns ${name} was removed`);
      return host.run({
        ...req,
        cmd: "ip",
        args: ["netns", "exec", name, req.cmd, ...req.args],
        timeoutMs: Math.min(req.timeoutMs ?? RUN_TIMEOUT_MS, RUN_TIMEOUT_MS),
      });
    },
  };
  return {
    name,
    exec,
    async remove() {
      if (removed) return;
      removed = true;
      await host.run({ cmd: "ip", args: ["netns", "del", name], timeoutMs: RUN_TIMEOUT_MS });
    },
  };
}
