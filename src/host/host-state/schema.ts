// The HostState document (DESIGN.md, --state): its schema, the one parse that validates it, and
// how it may state the iptables version.

import { z } from "zod";
import { normalizeSysctlName } from "../sysctl/client.ts";
import { HostStateError } from "./errors.ts";

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
    /** `nft --version`'s number ("1.0.6" or "v1.0.6"), for nftables mode's check. */
    nftVersion: z
      .string()
      .regex(/^v?\d+(\.\d+)+$/, 'not an nft version (expected "1.0.6" or "v1.0.6")')
      .optional(),
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

export function parseHostState(doc: unknown): HostState {
  const r = hostStateSchema.safeParse(doc);
  if (r.success) return r.data;
  throw new HostStateError(r.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })));
}
