// Upstream's nftables mode keeps all of its rules in two tables, `ip kube-proxy` and
// `ip6 kube-proxy`. A node that moves from it to iptables or ipvs mode (or runs --cleanup) must
// not keep them: upstream's platformCleanup deletes them whenever the NFTablesProxyMode feature
// gate is on (locked on since v1.33). Best effort: a host without nft, or whose kernel has no
// nf_tables, has nothing to delete.

import { effectiveFeatureGates } from "../../config/feature-gates.ts";
import type { Exec } from "../../exec/types.ts";
import { createNftClient } from "../../host/nft/client.ts";
import { NftError } from "../../host/nft/errors.ts";
import type { NftClient, NftTable } from "../../host/nft/types.ts";
import type { Logger } from "../../log/logger.ts";
import { errText } from "../../util/err-text.ts";

export const NFTABLES_MODE_TABLES: readonly NftTable[] = [
  { family: "ip", name: "kube-proxy" },
  { family: "ip6", name: "kube-proxy" },
];

/**
 * The one place cleanup reads the NFTablesProxyMode gate (GA and locked on since 1.33, so in
 * practice always on; validation refuses setting it false).
 */
export function nftablesProxyModeEnabled(featureGates: Readonly<Record<string, boolean>>): boolean {
  return effectiveFeatureGates(featureGates).enabled("NFTablesProxyMode");
}

/** Deletes upstream's nftables tables where they exist; false when something could not be done. */
export async function cleanupNftables(
  nft: Pick<NftClient, "listTables" | "deleteTable">,
  log: Logger,
): Promise<boolean> {
  let tables: NftTable[] | undefined;
  try {
    tables = await nft.listTables();
  } catch (err) {
    if (err instanceof NftError && err.isUnsupported) {
      log.v(2).info("nftables is not supported by this kernel; no nftables rules to clean up");
      return true;
    }
    log.error("Error cleaning up nftables rules", { err: errText(err) });
    return false;
  }
  if (tables === undefined) {
    log.v(2).info("nft is not installed; no nftables rules to clean up");
    return true;
  }
  let ok = true;
  for (const table of NFTABLES_MODE_TABLES) {
    if (!tables.some((t) => t.family === table.family && t.name === table.name)) continue;
    try {
      if (await nft.deleteTable(table)) {
        log.info("Deleted the nftables table of upstream's nftables mode", {
          family: table.family,
          table: table.name,
        });
      }
    } catch (err) {
      ok = false;
      log.error("Error cleaning up nftables rules", {
        family: table.family,
        table: table.name,
        err: errText(err),
      });
    }
  }
  return ok;
}

/** --cleanup's part for upstream's nftables mode: its tables, while the gate is on. */
export async function cleanupNftablesLeftovers(
  exec: Exec,
  log: Logger,
  featureGates: Readonly<Record<string, boolean>>,
): Promise<boolean> {
  if (!nftablesProxyModeEnabled(featureGates)) return true;
  return cleanupNftables(createNftClient({ exec }), log);
}
