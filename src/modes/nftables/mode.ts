// nftables mode as the registry sees it: its sync periods, the checks upstream makes before
// choosing it (kernel, nft version, the table), how it is built for a real or a dry run, and
// its --cleanup part (the two `kube-proxy` tables).

import type { ModeDefinition, PlannedMode } from "../types.ts";
import { buildNftablesMode } from "./build.ts";
import { cleanupNftablesLeftovers } from "./cleanup.ts";
import { explainNftables } from "./explain.ts";
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
    const nft = await buildNftablesMode(o, { netlink: true });
    return {
      families: nft.families,
      proxier: nft.proxier,
      afterFirstSync: () => {},
      stop: () => {},
      describe: () => [nft.writer],
      drift: () => Promise.all(nft.proxiers.map((p) => p.drift())),
      repairDrift: () => {
        // Listed first: a deleted chain is then created again rather than flushed.
        for (const p of nft.proxiers) p.requestFullSync({ relist: true });
      },
    };
  },

  // The planned transactions are the report's `nft -f -` commands (the recorder keeps them).
  async plan(o): Promise<PlannedMode> {
    return { proxier: (await buildNftablesMode(o)).proxier };
  },

  explain: explainNftables,

  cleanup: (exec, log, o) => cleanupNftablesLeftovers(exec, log, o.featureGates),
};
