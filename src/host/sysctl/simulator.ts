// In-memory stand-ins for the sysctl clients (tests and replay): sysctls by name, and nf_conntrack's
// hashsize with the initial-netns and read-only-sysfs refusals the kernel gives.

import { normalizeSysctlName, parseIntValue } from "./client.ts";
import { SysctlError } from "./errors.ts";
import { CONNTRACK_HASHSIZE_PATH, type ConntrackHashsizeClient, type SysctlClient } from "./types.ts";

export interface SimulatedSysctlOptions {
  /** Names whose writes fail, like a read-only /proc/sys in an unprivileged container. */
  readOnly?: Iterable<string>;
}

export interface SimulatedSysctl extends SysctlClient {
  readonly values: Map<string, string>;
  /** Every successful write, in order. */
  readonly writes: { name: string; value: string }[];
}

/** In-memory sysctls; names are stored in slash form. */
export function createSimulatedSysctl(
  initial: Record<string, string | number> = {},
  opts: SimulatedSysctlOptions = {},
): SimulatedSysctl {
  const values = new Map<string, string>();
  for (const [name, value] of Object.entries(initial)) values.set(normalizeSysctlName(name), String(value));
  const readOnly = new Set([...(opts.readOnly ?? [])].map(normalizeSysctlName));
  const writes: { name: string; value: string }[] = [];

  const get = async (name: string) => values.get(normalizeSysctlName(name));
  return {
    values,
    writes,
    get,
    async getInt(name) {
      const raw = await get(name);
      return raw === undefined ? undefined : parseIntValue(name, raw);
    },
    async set(name, value) {
      const key = normalizeSysctlName(name);
      const text = String(value);
      if (readOnly.has(key)) {
        throw new SysctlError(name, `cannot set sysctl ${name}=${text}: read-only file system`, text);
      }
      values.set(key, text);
      writes.push({ name: key, value: text });
    },
  };
}

export interface SimulatedConntrackHashsize extends ConntrackHashsizeClient {
  value: number | undefined;
  readonly writes: number[];
}

/** In-memory hashsize; `initialNetns: false` makes writes fail with EOPNOTSUPP, as the kernel does. */
export function createSimulatedConntrackHashsize(
  opts: { value?: number; initialNetns?: boolean; sysfsWritable?: boolean } = {},
): SimulatedConntrackHashsize {
  const fake: SimulatedConntrackHashsize = {
    value: opts.value,
    writes: [],
    get: async () => fake.value,
    async set(value) {
      if (opts.initialNetns === false || opts.sysfsWritable === false) {
        const code = opts.initialNetns === false ? "EOPNOTSUPP" : "EROFS";
        const cause = Object.assign(new Error(code), { code });
        throw new SysctlError(
          CONNTRACK_HASHSIZE_PATH,
          `cannot set ${CONNTRACK_HASHSIZE_PATH}: ${code}`,
          String(value),
          {
            cause,
          },
        );
      }
      fake.value = value;
      fake.writes.push(value);
    },
    inInitialNetns: async () => opts.initialNetns,
    sysfsWritable: async () => opts.sysfsWritable ?? true,
  };
  return fake;
}
