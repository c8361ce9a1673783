// Which iptables backend a run uses and which IP families it can serve: both the iptables mode
// and the ipvs mode (whose iptables rules go through the same backend) decide it this way.

import type { Exec } from "../../exec/types.ts";
import { type BackendPreference, detectBackend } from "../../host/iptables/backend.ts";
import { iptablesCommands } from "../../host/iptables/commands.ts";
import type { IptablesBackend } from "../../host/iptables/types.ts";
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

/** The iptables backend (logged with its reason) and the families it can serve; both modes use it. */
export async function chooseBackendAndFamilies(
  exec: Exec,
  log: Logger,
  preference: BackendPreference,
): Promise<{ backend: IptablesBackend; families: IPFamily[] }> {
  const choice = await detectBackend(exec, log, preference);
  log.info("Using iptables backend", { backend: choice.backend, reason: choice.reason });
  const families = await usableFamilies(exec, choice.backend);
  if (families.length === 0)
    throw new Error(`iptables (${choice.backend}) cannot read the nat table on this node`);
  return { backend: choice.backend, families };
}
