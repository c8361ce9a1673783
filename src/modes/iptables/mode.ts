// iptables mode as the registry sees it: its sync periods, how it is built for a real run
// (proxiers per family plus the canary monitors started after the first sync) and for a dry
// run, and its --cleanup part (every kube-proxy chain, in both backends and families).

import type { ModeDefinition, RunningMode } from "../types.ts";
import { buildIptablesMode } from "./build.ts";
import { cleanupIptablesEverywhere } from "./cleanup.ts";
import { explainIptables } from "./explain.ts";

export const iptablesMode: ModeDefinition<"iptables"> = {
  name: "iptables",
  periods: (config) => config.iptables,

  async build(o): Promise<RunningMode> {
    const ipt = await buildIptablesMode(o);
    let monitors: { stop(): void }[] = [];
    return {
      families: ipt.families,
      proxier: ipt.proxier,
      afterFirstSync(requestSync) {
        monitors = ipt.proxiers.map((p) => {
          const m = p.canaryMonitor(() => {
            p.requestFullSync();
            requestSync();
          });
          m.start();
          return m;
        });
      },
      stop: () => {
        for (const m of monitors) m.stop();
      },
      describe: () => [{ component: "iptables", chosen: ipt.backend, reason: ipt.backendReason }],
      drift: () => Promise.all(ipt.proxiers.map((p) => p.drift())),
      repairDrift: () => {
        for (const p of ipt.proxiers) p.requestFullSync();
      },
    };
  },

  async plan(o) {
    return { proxier: (await buildIptablesMode(o)).proxier };
  },

  explain: explainIptables,

  cleanup: (exec, log) => cleanupIptablesEverywhere(exec, log),
};
