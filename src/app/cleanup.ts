// --cleanup: remove what any kube-proxy (upstream or ours, iptables, ipvs or upstream's nftables
// mode, legacy or nft backend) left on this node, then exit. Idempotent: a second run finds
// nothing to do.

import type { Exec } from "../exec/types.ts";
import type { Logger } from "../log/logger.ts";
import { cleanupNftablesLeftovers } from "../modes/nftables/cleanup.ts";
import { cleanupAllModes } from "../modes/registry.ts";

/**
 * At the start of an iptables or ipvs mode run: what upstream's nftables mode left is removed
 * (upstream's platformCleanup). Best effort; failures are logged and the run goes on.
 */
export async function cleanupOtherModes(
  exec: Exec,
  log: Logger,
  featureGates: Readonly<Record<string, boolean>>,
): Promise<void> {
  await cleanupNftablesLeftovers(exec, log, featureGates);
}

export async function cleanupNode(
  exec: Exec,
  log: Logger,
  excludeCIDRs: readonly string[] = [],
  featureGates: Readonly<Record<string, boolean>> = {},
): Promise<number> {
  return (await cleanupAllModes(exec, log, { excludeCIDRs, featureGates })) ? 0 : 1;
}
