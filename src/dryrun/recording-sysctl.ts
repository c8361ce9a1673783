// Under --dry-run sysctls are read for real but each write becomes the `sysctl -w` command an
// operator would run, in the same ordered command list as every other planned change.

import { normalizeSysctlName, type SysctlClient } from "../host/sysctl.ts";

export function sysctlCommand(name: string, value: number | string): string[] {
  return ["sysctl", "-w", `${name.replaceAll("/", ".")}=${value}`];
}

/**
 * Reads after a planned write see the planned value, as they would on the host once the plan
 * ran (e.g. nf_conntrack_tcp_be_liberal set from config, then read by the iptables proxier).
 */
export function createRecordingSysctl(inner: SysctlClient, record: (argv: string[]) => void): SysctlClient {
  const planned = new Map<string, string>();
  const get = async (name: string) => planned.get(normalizeSysctlName(name)) ?? inner.get(name);
  return {
    get,
    async getInt(name) {
      const key = normalizeSysctlName(name);
      return planned.has(key) ? Number(planned.get(key)) : inner.getInt(name);
    },
    async set(name, value) {
      planned.set(normalizeSysctlName(name), String(value));
      record(sysctlCommand(name, value));
    },
  };
}
