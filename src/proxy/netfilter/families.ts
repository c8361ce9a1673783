// Which iptables backend a run uses and which IP families it can serve: both the iptables mode
// and the ipvs mode (whose iptables rules go through the same backend) decide it this way; every
// mode first asks whether the kernel has IPv6 at all (upstream 1.34, and 1.36 for disable_ipv6).

import type { Exec } from "../../exec/types.ts";
import { type BackendPreference, detectBackend } from "../../host/iptables/backend.ts";
import { iptablesCommands } from "../../host/iptables/commands.ts";
import type { IptablesBackend } from "../../host/iptables/types.ts";
import type { SysctlClient } from "../../host/sysctl/types.ts";
import type { Logger } from "../../log/logger.ts";
import type { IPFamily } from "../../util/net/family.ts";

/** A family is proxied when its tool can read the nat table (upstream's Present() check). */
export async function usableFamilies(exec: Exec, backend: IptablesBackend): Promise<IPFamily[]> {
  const out: IPFamily[] = [];
  for (const family of ["IPv4", "IPv6"] as const) {
    const cmd = iptablesCommands(family, backend).iptables;
    const r = await exec.run({ cmd, args: ["-w", "5", "-t", "nat", "-S", "POSTROUTING"], timeoutMs: 10_000 });
    if (r.code === 0) out.push(family);
  }
  return out;
}

/**
 * Whether the kernel has IPv6: /proc/sys/net/ipv6 exists (a kernel booted with ipv6.disable=1,
 * or without IPv6, has none) and net.ipv6.conf.all.disable_ipv6 is not 1.
 */
export async function kernelSupportsIPv6(sysctl: Pick<SysctlClient, "get">): Promise<boolean> {
  const disabled = await sysctl.get("net/ipv6/conf/all/disable_ipv6");
  return disabled !== undefined && disabled !== "1";
}

/** `families` without IPv6 when the kernel has none, said the way upstream logs it. */
export async function withKernelSupport(
  families: readonly IPFamily[],
  sysctl: Pick<SysctlClient, "get"> | undefined,
  log: Logger,
): Promise<IPFamily[]> {
  if (!sysctl || !families.includes("IPv6") || (await kernelSupportsIPv6(sysctl))) return [...families];
  log.info("No kernel support for family", { ipFamily: "IPv6" });
  return families.filter((f) => f !== "IPv6");
}

/** The iptables backend (logged with its reason) and the families it can serve; both modes use it. */
export async function chooseBackendAndFamilies(
  exec: Exec,
  log: Logger,
  preference: BackendPreference,
  sysctl?: Pick<SysctlClient, "get">,
): Promise<{ backend: IptablesBackend; families: IPFamily[]; reason: string }> {
  const choice = await detectBackend(exec, log, preference);
  log.info("Using iptables backend", { backend: choice.backend, reason: choice.reason });
  const families = await withKernelSupport(await usableFamilies(exec, choice.backend), sysctl, log);
  if (families.length === 0)
    throw new Error(`iptables (${choice.backend}) cannot read the nat table on this node`);
  return { backend: choice.backend, families, reason: choice.reason };
}
