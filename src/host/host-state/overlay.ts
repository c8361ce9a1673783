// A HostState document (DESIGN.md, --state) stands in for the live host: what it states
// replaces the probe, what it omits is probed read-only on the machine we run on. These wrap the
// live kernel, ipset and sysctl clients accordingly.

import type { IpsetClient } from "../ipset/types.ts";
import { normalizeModuleName } from "../kernel/client.ts";
import type { KernelClient } from "../kernel/types.ts";
import { normalizeSysctlName } from "../sysctl/client.ts";
import type { SysctlClient } from "../sysctl/types.ts";
import type { HostState } from "./schema.ts";

const SOURCE = "--state HostState";

/** Kernel facts from HostState; modprobe is never run for a host the state describes. */
export function kernelFromHostState(state: HostState, live: KernelClient): KernelClient {
  const modules = state.modules ? new Set(state.modules.map(normalizeModuleName)) : undefined;
  return {
    version: async () => state.kernelVersion ?? (await live.version()),
    async modules() {
      if (!modules) return live.modules();
      return {
        loaded: new Set(modules),
        builtin: new Set<string>(),
        loadable: new Set<string>(),
        sources: [SOURCE],
      };
    },
    async loadModule(name) {
      if (!modules) return live.loadModule(name);
      const n = normalizeModuleName(name);
      return modules.has(n)
        ? { ok: true, detail: `module ${name} listed in ${SOURCE}` }
        : { ok: false, detail: `module ${name} not listed in ${SOURCE}` };
    },
    probeModule(name) {
      return this.loadModule(name);
    },
  };
}

export function ipsetFromHostState(state: HostState, live: IpsetClient): IpsetClient {
  return {
    ...live,
    async version() {
      return state.ipsetVersion
        ? { ok: true, version: state.ipsetVersion.replace(/^v/, "") }
        : live.version();
    },
  };
}

/** Sysctl reads answered from HostState where it names the sysctl; the rest read the host. */
export function sysctlFromHostState(state: HostState, live: SysctlClient): SysctlClient {
  if (!state.sysctls) return live;
  const values = new Map<string, string>();
  for (const [name, value] of Object.entries(state.sysctls)) {
    values.set(normalizeSysctlName(name), String(value).trim());
  }
  const stated = (name: string) => values.get(normalizeSysctlName(name));
  return {
    get: async (name) => stated(name) ?? live.get(name),
    getInt: async (name) => {
      const raw = stated(name);
      return raw === undefined ? live.getInt(name) : Number(raw);
    },
    set: (name, value) => live.set(name, value),
  };
}
