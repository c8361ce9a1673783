// ipvs mode as the registry sees it: its sync periods, the prerequisites a node must meet
// (kernel modules, ipset version), its kernel settings, how it is built for a real or a dry
// run, its part of the --dry-run report (the planned virtual servers) and its --cleanup part
// (ipsets, virtual servers, kube-ipvs0).

import type { ModeDefinition, PlannedMode } from "../types.ts";
import { buildIpvsMode } from "./build.ts";
import { cleanupIpvsState } from "./cleanup.ts";
import { explainIpvs } from "./explain.ts";
import { canUseIpvsProxier } from "./prerequisites.ts";
import { ipvsSysctls } from "./sysctls.ts";

export const ipvsMode: ModeDefinition<"ipvs"> = {
  name: "ipvs",
  // Upstream 1.35 (kubernetes#134539): logged at start and posted on the Node.
  deprecation: {
    message:
      "The ipvs proxier is now deprecated and may be removed in a future release. Please use 'nftables' instead.",
    eventReason: "IPVSDeprecation",
    eventAction: "StartKubeProxy",
  },
  periods: (config) => config.ipvs,

  async prerequisites(host, config, dryRun) {
    const verdict = await canUseIpvsProxier(
      { kernel: host.kernel, ipset: host.ipset, dryRun },
      config.ipvs.scheduler,
    );
    if (verdict.ok) return { checks: verdict.checks };
    const failed = verdict.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
    return {
      checks: verdict.checks,
      fatal: `can't use the IPVS proxier: ${failed.join("; ")}; ipset version found: ${verdict.ipsetVersion ?? "none"}`,
    };
  },

  sysctls: ipvsSysctls,

  async build(o) {
    const ipvs = await buildIpvsMode({ ...o, netlink: true });
    return {
      families: ipvs.families,
      proxier: ipvs.proxier,
      afterFirstSync: () => {},
      stop: () => ipvs.stop(),
      describe: () => ipvs.backends,
      drift: () => Promise.all(ipvs.proxiers.map((p) => p.drift())),
      repairDrift: () => {
        for (const p of ipvs.proxiers) p.requestFullSync();
      },
    };
  },

  async plan(o): Promise<PlannedMode> {
    const ipvs = await buildIpvsMode({ ...o, dryRun: true });
    // A dry run exits after one sync: no graceful-termination timer may keep it alive.
    ipvs.stop();
    return { proxier: ipvs.proxier, report: () => ({ ipvs: { virtualServers: ipvs.virtualServers() } }) };
  },

  dryRunReport: (planned) => planned?.report?.() ?? { ipvs: { virtualServers: [] } },

  explain: explainIpvs,

  cleanup: (exec, log, o) => cleanupIpvsState(exec, log, o.excludeCIDRs),
};
