// CanUseIPVSProxier: decides truthfully whether this node can run ipvs mode. The verdict is
// the same for a real run (which refuses to start) and --dry-run (which reports and exits 3).

import type { IpsetClient } from "../../host/ipset/types.ts";
import { MIN_IPSET_VERSION } from "../../host/ipset/types.ts";
import type { KernelClient } from "../../host/kernel/types.ts";
import type { Check } from "../../proxy/check.ts";
import { versionAtLeast } from "../../util/version.ts";

/** Base modules every ipvs node needs; the conntrack module's name changed in kernel 4.19. */
export function requiredIpvsModules(kernelVersion: string, scheduler: string): string[] {
  const conntrack = versionAtLeast(kernelVersion, "4.19") ? "nf_conntrack" : "nf_conntrack_ipv4";
  const mods = ["ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_sh", conntrack];
  const sched = `ip_vs_${scheduler || "rr"}`;
  if (!mods.includes(sched)) mods.push(sched);
  return mods;
}

export interface IpvsPrereqResult {
  readonly ok: boolean;
  readonly checks: Check[];
  readonly missingModules: string[];
  readonly ipsetVersion?: string;
}

export interface IpvsPrereqDeps {
  readonly kernel: KernelClient;
  readonly ipset: IpsetClient;
  /** In dry-run we only ask modprobe whether a module could be loaded (modprobe -n). */
  readonly dryRun: boolean;
}

async function checkModules(
  deps: IpvsPrereqDeps,
  scheduler: string,
): Promise<{ check: Check; missing: string[] }> {
  const version = await deps.kernel.version();
  const wanted = requiredIpvsModules(version, scheduler);
  const { loaded, builtin, sources } = await deps.kernel.modules();
  const missing: string[] = [];
  const loadedNow: string[] = [];
  for (const mod of wanted) {
    if (loaded.has(mod) || builtin.has(mod)) continue;
    const attempt = deps.dryRun ? await deps.kernel.probeModule(mod) : await deps.kernel.loadModule(mod);
    if (attempt.ok) loadedNow.push(mod);
    else missing.push(mod);
  }
  const read =
    sources.length > 0
      ? sources.join(", ")
      : "no module list found (/proc/modules, modules.builtin, /boot/config)";
  const verb = deps.dryRun ? "loadable with modprobe" : "loaded with modprobe";
  let detail: string;
  if (missing.length > 0) {
    detail = `kernel ${version}: missing required kernel modules: ${missing.join(", ")} (read: ${read})`;
  } else {
    detail = `kernel ${version}: ${wanted.join(", ")} available${loadedNow.length ? ` (${verb}: ${loadedNow.join(", ")})` : ""}`;
  }
  return { check: { name: "ipvs kernel modules", ok: missing.length === 0, detail }, missing };
}

async function checkIpset(ipset: IpsetClient): Promise<{ check: Check; version?: string }> {
  const v = await ipset.version();
  if (!v.ok) return { check: { name: "ipset version", ok: false, detail: v.detail } };
  const ok = versionAtLeast(v.version, MIN_IPSET_VERSION);
  const detail = ok
    ? `ipset ${v.version} (need >= ${MIN_IPSET_VERSION})`
    : `ipset ${v.version} is older than the required ${MIN_IPSET_VERSION}`;
  return { check: { name: "ipset version", ok, detail }, version: v.version };
}

export async function canUseIpvsProxier(deps: IpvsPrereqDeps, scheduler: string): Promise<IpvsPrereqResult> {
  const mods = await checkModules(deps, scheduler);
  const ipset = await checkIpset(deps.ipset);
  const checks = [mods.check, ipset.check];
  return {
    ok: checks.every((c) => c.ok),
    checks,
    missingModules: mods.missing,
    ...(ipset.version ? { ipsetVersion: ipset.version } : {}),
  };
}
