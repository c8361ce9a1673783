// nftables mode as the registry sees it: its sync periods, the checks upstream makes before
// choosing it (kernel, nft version, the table), how it is built for a real or a dry run, its
// part of the --dry-run report (the transaction it would run, per family) and its --cleanup
// part (the two `kube-proxy` tables).

import type { ModeDefinition, PlannedMode } from "../types.ts";
import { buildNftablesMode } from "./build.ts";
import { cleanupNftablesLeftovers } from "./cleanup.ts";
import { canUseNftablesProxier } from "./prerequisites.ts";

export const nftablesMode: ModeDefinition<"nftables"> = {
  name: "nftables",
  periods: (config) => config.nftables,

  async prerequisites(host) {
    const verdict = await canUseNftablesProxier({ exec: host.exec, kernel: host.kernel });
    if (verdict.ok) return { checks: verdict.checks };
    const failed = verdict.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
    return { checks: verdict.checks, fatal: `can't use the nftables proxier: ${failed.join("; ")}` };
  },

  async build(o) {
    const nft = await buildNftablesMode(o);
    return { families: nft.families, proxier: nft.proxier, afterFirstSync: () => {}, stop: () => {} };
  },

  async plan(o): Promise<PlannedMode> {
    const nft = await buildNftablesMode(o, { keepLastTransaction: true });
    return {
      proxier: nft.proxier,
      report: () => ({
        nftables: {
          transactions: nft.proxiers.map((p, i) => ({
            family: nft.families[i],
            transaction: p.lastTransaction,
          })),
        },
      }),
    };
  },

  dryRunReport: (planned) => planned?.report?.() ?? { nftables: { transactions: [] } },

  cleanup: (exec, log, o) => cleanupNftablesLeftovers(exec, log, o.featureGates),
};
