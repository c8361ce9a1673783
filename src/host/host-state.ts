// A HostState document (DESIGN.md, --state) stands in for the live host: what it states
// replaces the probe, what it omits is probed read-only on the machine we run on.

import { z } from "zod";
import type { IpsetClient } from "./ipset.ts";
import type { KernelClient } from "./kernel.ts";
import { normalizeModuleName } from "./kernel.ts";

export const hostStateSchema = z
  .object({
    apiVersion: z.literal("kube-proxy-ts/v1"),
    kind: z.literal("HostState"),
    metadata: z.object({}).passthrough().optional(),
    kernelVersion: z.string().min(1).optional(),
    modules: z.array(z.string().min(1)).optional(),
    ipsetVersion: z.string().min(1).optional(),
    iptablesVersion: z.string().min(1).optional(),
    nfacct: z.boolean().optional(),
    interfaces: z.array(z.object({ name: z.string().min(1), addresses: z.array(z.string()) })).optional(),
    iptablesSave: z.string().optional(),
    ip6tablesSave: z.string().optional(),
    ipsetSave: z.string().optional(),
    ipvsSave: z.string().optional(),
  })
  .strict();

export type HostState = z.infer<typeof hostStateSchema>;

export class HostStateError extends Error {
  constructor(readonly issues: { path: string; message: string }[]) {
    super(`invalid HostState: ${issues.map((i) => `${i.path || "(document)"}: ${i.message}`).join("; ")}`);
    this.name = "HostStateError";
  }
}

export function parseHostState(doc: unknown): HostState {
  const r = hostStateSchema.safeParse(doc);
  if (r.success) return r.data;
  throw new HostStateError(r.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })));
}

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
