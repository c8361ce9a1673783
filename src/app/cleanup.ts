// --cleanup: remove what any kube-proxy (upstream or ours, iptables, ipvs or upstream's nftables
// mode, legacy or nft backend) left on this node, then exit. Idempotent: a second run finds
// nothing to do.

import type { Exec } from "../exec/types.ts";
import type { Logger } from "../log/logger.ts";
import { cleanupAllModes } from "../modes/registry.ts";

export async function cleanupNode(
  exec: Exec,
  log: Logger,
  excludeCIDRs: readonly string[] = [],
  featureGates: Readonly<Record<string, boolean>> = {},
): Promise<number> {
  return (await cleanupAllModes(exec, log, { excludeCIDRs, featureGates })) ? 0 : 1;
}
