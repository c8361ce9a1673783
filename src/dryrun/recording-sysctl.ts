// Under --dry-run sysctls are read for real but each write becomes the `sysctl -w` command an
// operator would run, in the same ordered command list as every other planned change.

import type { SysctlClient } from "../host/sysctl.ts";

export function sysctlCommand(name: string, value: number | string): string[] {
  return ["sysctl", "-w", `${name.replaceAll("/", ".")}=${value}`];
}

export function createRecordingSysctl(inner: SysctlClient, record: (argv: string[]) => void): SysctlClient {
  return {
    get: (name) => inner.get(name),
    getInt: (name) => inner.getInt(name),
    async set(name, value) {
      record(sysctlCommand(name, value));
    },
  };
}
