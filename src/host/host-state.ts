// A HostState document (DESIGN.md, --state) stands in for the live host: what it states
// replaces the probe, what it omits is probed read-only on the machine we run on.

import { z } from "zod";
import type { IpsetClient } from "./ipset.ts";
import type { KernelClient } from "./kernel.ts";
import { normalizeModuleName } from "./kernel.ts";
import { normalizeSysctlName, type SysctlClient } from "./sysctl.ts";

export interface StatedIptablesVersion {
  readonly version: string;
  readonly mode?: "legacy" | "nf_tables";
}

/**
 * iptablesVersion as a HostState may give it: bare ("1.8.9", like ipsetVersion), with a "v",
 * or whole `iptables --version` output ("iptables v1.8.9 (legacy)").
 */
export function statedIptablesVersion(text: string): StatedIptablesVersion | undefined {
  const m = /^\s*(?:ip6?tables(?:-legacy|-nft)?\s+)?v?(\d+(?:\.\d+)+)(?:\s+\((legacy|nf_tables)\))?\s*$/.exec(
    text,
  );
  if (!m?.[1]) return undefined;
  return m[2] ? { version: m[1], mode: m[2] as "legacy" | "nf_tables" } : { version: m[1] };
}

function validSysctlName(name: string): boolean {
  try {
    normalizeSysctlName(name);
    return name !== "";
  } catch {
    return false;
  }
}

export const hostStateSchema = z
  .object({
    apiVersion: z.literal("kube-proxy-ts/v1"),
    kind: z.literal("HostState"),
    metadata: z.object({}).passthrough().optional(),
    kernelVersion: z.string().min(1).optional(),
    modules: z.array(z.string().min(1)).optional(),
    ipsetVersion: z.string().min(1).optional(),
    iptablesVersion: z
      .string()
      .refine((v) => statedIptablesVersion(v) !== undefined, {
        message: 'not an iptables version (expected "1.8.9", "v1.8.9" or "iptables v1.8.9 (legacy)")',
      })
      .optional(),
    nfacct: z.boolean().optional(),
    /** Kernel tunables as read under /proc/sys, by name ("net/netfilter/x" or "net.netfilter.x"). */
    sysctls: z
      .record(
        z.string().refine(validSysctlName, { message: "not a sysctl name (e.g. net/ipv4/ip_forward)" }),
        z.union([z.number().int(), z.string().regex(/^\s*-?\d+\s*$/, "not an integer")]),
      )
      .optional(),
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
