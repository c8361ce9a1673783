// A real run: prepare the node, open the cluster source, build the proxier for the mode, serve
// health and metrics, and sync until SIGTERM/SIGINT. Rules stay in place on exit, as upstream.

import { writeFileSync } from "node:fs";
import type { RunOptions } from "../cli/types.ts";
import type { ProxyConfig } from "../config/types.ts";
import { probeHostState } from "../host/probe.ts";
import { resolveNodeName } from "../k8s/node-name.ts";
import { recordingHandler, renderStateFile } from "../k8s/object-store.ts";
import type { ClusterEventHandler } from "../k8s/source.ts";
import type { Logger } from "../log/logger.ts";
import { healthTimeoutMs, ProxierHealth } from "../proxy/healthcheck/proxier-health.ts";
import { ServiceHealthServer } from "../proxy/healthcheck/service-health.ts";
import { createMetrics } from "../proxy/metrics/metrics.ts";
import { SyncController } from "../proxy/sync-controller.ts";
import { createHost, type Host, type HostOptions } from "./host.ts";
import { buildIptablesMode } from "./iptables-mode.ts";
import { detectNodeIPs } from "./node-ips.ts";
import { prepareNode } from "./prepare.ts";
import { openRealSource } from "./real-source.ts";
import { startServers } from "./servers.ts";

function waitForShutdown(log: Logger): Promise<void> {
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      log.info("Shutting down; rules stay in place", { signal });
      resolve();
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
  });
}

function applyOomScoreAdj(value: number, log: Logger): void {
  try {
    writeFileSync("/proc/self/oom_score_adj", String(value));
  } catch (err) {
    // Best effort, as upstream (e.g. unprivileged containers).
    log.v(2).info("Failed to apply oom_score_adj", {
      value,
      err: err instanceof Error ? err.message : String(err),
    });
  }
}

/** Tells proxier health about this Node (eligibility) as it changes. */
function withNodeHealth(inner: ClusterEventHandler, health: ProxierHealth): ClusterEventHandler {
  return {
    ...inner,
    onServiceChange: (p, c) => inner.onServiceChange(p, c),
    onEndpointSliceChange: (s, r) => inner.onEndpointSliceChange(s, r),
    onServicesSynced: () => inner.onServicesSynced(),
    onEndpointSlicesSynced: () => inner.onEndpointSlicesSynced(),
    onNodeChange(node) {
      if (node) health.syncNode(node);
      inner.onNodeChange(node);
    },
  };
}

export async function realRun(
  config: ProxyConfig,
  opts: RunOptions,
  log: Logger,
  hostOverrides: Partial<HostOptions> = {},
): Promise<number> {
  const host = createHost({ dryRun: false, ...hostOverrides });
  const prep = await prepareNode(config, host, log, false);
  if (prep.fatal) {
    log.error(prep.fatal);
    return 1;
  }
  applyOomScoreAdj(config.oomScoreAdj, log);
  if (opts.initOnly) {
    log.info("Initialization done (--init-only); exiting");
    return 0;
  }
  if (prep.mode === "ipvs") {
    log.error("The ipvs proxier is not part of this build yet; run with --proxy-mode=iptables");
    return 1;
  }
  return runIptables(config, opts, host, log);
}

async function runIptables(config: ProxyConfig, opts: RunOptions, host: Host, log: Logger): Promise<number> {
  const nodeName = resolveNodeName(config.hostnameOverride);
  const src = openRealSource(config, opts, nodeName, log);
  if ("error" in src) {
    log.error("Cannot reach the cluster", { err: src.error });
    return 1;
  }
  log.info("Reading cluster state", { from: src.description, node: nodeName });
  const nodeIPs = await detectNodeIPs(config.bindAddress, () => src.lookupNodeIPs(), log);
  const metrics = createMetrics();
  const health = new ProxierHealth({ healthTimeoutMs: healthTimeoutMs(config) });
  const serviceHealth = new ServiceHealthServer({
    nodeName,
    health,
    logger: log.named("healthcheck"),
    recorder: src.recorder,
  });
  let mode: Awaited<ReturnType<typeof buildIptablesMode>>;
  try {
    mode = await buildIptablesMode({
      exec: host.exec,
      config,
      metrics,
      log,
      nodeName,
      nodeIPs,
      backend: opts.iptablesBackend,
      healthCheck: serviceHealth,
    });
  } catch (err) {
    log.error("Cannot use iptables", { err: err instanceof Error ? err.message : String(err) });
    return 1;
  }
  const servers = await startServers(config, "iptables", health, metrics.registry, log);
  const controller = new SyncController({
    nodeName,
    proxier: mode.proxier,
    minSyncPeriodMs: config.iptables.minSyncPeriod,
    syncPeriodMs: config.iptables.syncPeriod,
    logger: log.named("sync"),
    recorder: src.recorder,
    hooks: {
      queued: () => {
        metrics.syncProxyRulesLastQueuedTimestamp.setToCurrentTime();
        for (const f of mode.families) health.queuedUpdate(f);
      },
      synced: () => {
        for (const f of mode.families) health.updated(f);
      },
    },
  });
  const monitors = mode.proxiers.map((p) =>
    p.canaryMonitor(() => {
      p.requestFullSync();
      controller.requestSync();
    }),
  );
  const { handler, store } = recordingHandler(withNodeHealth(controller, health));
  controller.start();
  await src.source.start(handler);
  void src.birthCry();
  void controller.firstSync().then(async () => {
    for (const m of monitors) m.start();
    if (opts.dumpStateFile) {
      writeFileSync(
        opts.dumpStateFile,
        renderStateFile(store, await probeHostState(host.exec, host.kernel, host.ipset)),
      );
      log.info("Wrote cluster and host state", { file: opts.dumpStateFile });
    }
  });

  await waitForShutdown(log);
  for (const m of monitors) m.stop();
  await src.source.stop();
  await controller.stop();
  await serviceHealth.close();
  await servers.close();
  return 0;
}
