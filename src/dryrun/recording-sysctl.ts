// Under --dry-run sysctls (and nf_conntrack's hashsize) are read for real but each write becomes
// the command an operator would run, in the same ordered command list as every other change.

import { normalizeSysctlName } from "../host/sysctl/client.ts";
import {
  CONNTRACK_HASHSIZE_PATH,
  type ConntrackHashsizeClient,
  type SysctlClient,
} from "../host/sysctl/types.ts";

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

/** The hashsize write an operator would run: a module parameter has no sysctl name. */
export function hashsizeCommand(value: number): string[] {
  return ["sh", "-c", `echo ${value} > ${CONNTRACK_HASHSIZE_PATH}`];
}

export function createRecordingHashsize(
  inner: ConntrackHashsizeClient,
  record: (argv: string[]) => void,
): ConntrackHashsizeClient {
  return {
    get: () => inner.get(),
    inInitialNetns: () => inner.inInitialNetns(),
    sysfsWritable: () => inner.sysfsWritable(),
    async set(value) {
      record(hashsizeCommand(value));
    },
  };
}
