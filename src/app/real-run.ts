// A real run: prepare the node, open the cluster source, build the proxier for the mode, serve
// health and metrics, and sync until SIGTERM/SIGINT. Rules stay in place on exit, as upstream.

import { writeFileSync } from "node:fs";
import type { RunOptions } from "../cli/types.ts";
import { effectiveFeatureGates } from "../config/feature-gates.ts";
import type { ProxyConfig } from "../config/types.ts";
import { nodeEligibility } from "../k8s/node-info.ts";
import { resolveNodeName } from "../k8s/node-name.ts";
import { recordingHandler } from "../k8s/object-store.ts";
import type { ClusterEventHandler } from "../k8s/source.ts";
import type { Logger } from "../log/logger.ts";
import { cleanupOtherModes, healthTimeoutMs, modeForConfig, modeNamed } from "../modes/registry.ts";
import type { RunningMode } from "../modes/types.ts";
import { trackerMetrics } from "../proxy/change-metrics.ts";
import { SyncHistory } from "../proxy/debug-state/history.ts";
import { createDriftCounter, DriftChecker, driftIntervalMs, mergeDrift } from "../proxy/drift.ts";
import { serviceHealthListenAddresses } from "../proxy/healthcheck/listen-addresses.ts";
import { ProxierHealth } from "../proxy/healthcheck/proxier-health.ts";
import { ServiceHealthServer } from "../proxy/healthcheck/service-health.ts";
import { localAddresses } from "../proxy/local-addresses.ts";
import { SyncController } from "../proxy/sync-controller.ts";
import { collectGarbage, enableGarbageCollections } from "../runtime.ts";
import { errText } from "../util/err-text.ts";
import { memoryFigures } from "../util/memory.ts";
import { debugStateHandler } from "./debug-state.ts";
import { createHost, type Host, type HostOptions } from "./host.ts";
import { detectNodeIPs } from "./node-ips.ts";
import { type Preparation, prepareNode } from "./prepare.ts";
import { openRealSource } from "./real-source.ts";
import { createRunMetrics } from "./run-metrics.ts";
import { startServers } from "./servers.ts";
import { dumpState } from "./state-dump.ts";

/** Resolves with the exit code: 0 on SIGTERM/SIGINT, or the code `until` settles with. */
function waitForShutdown(log: Logger, until?: Promise<number>): Promise<number> {
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      log.info("Shutting down; rules stay in place", { signal });
      resolve(0);
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
    void until?.then(resolve);
  });
}

function applyOomScoreAdj(value: number, log: Logger): void {
  try {
    writeFileSync("/proc/self/oom_score_adj", String(value));
  } catch (err) {
    // Best effort, as upstream (e.g. unprivileged containers).
    log.v(2).info("Failed to apply oom_score_adj", {
      value,
      err: errText(err),
    });
  }
}

/** Tells proxier health about this Node (eligibility) as it changes. */
function withNodeHealth(inner: ClusterEventHandler, health: ProxierHealth): ClusterEventHandler {
  return {
    ...inner,
    onServiceChange: (p, c) => inner.onServiceChange(p, c),
    onEndpointSliceChange: (s, r) => inner.onEndpointSliceChange(s, r),
    onServiceCIDRChange: (c, r) => inner.onServiceCIDRChange(c, r),
    onServicesSynced: () => inner.onServicesSynced(),
    onEndpointSlicesSynced: () => inner.onEndpointSlicesSynced(),
    onNodeChange(node) {
      // Read defensively: a Node with wrong-typed taints must not throw in the informer callback.
      if (node) health.syncNode(nodeEligibility(node));
      inner.onNodeChange(node);
    },
  };
}

/**
 * `until`, when given, ends the run on its own (the --config watch): the sync loop stops as on
 * SIGTERM and realRun returns the code it settles with.
 */
export async function realRun(
  config: ProxyConfig,
  opts: RunOptions,
  log: Logger,
  hostOverrides: Partial<HostOptions> = {},
  until?: Promise<number>,
): Promise<number> {
  enableGarbageCollections();
  const host = createHost({ dryRun: false, ...hostOverrides });
  await cleanupOtherModes(modeForConfig(config).name, host.exec, log, {
    excludeCIDRs: config.ipvs.excludeCIDRs,
    featureGates: config.featureGates,
  });
  const prep = await prepareNode(config, host, log, false);
  if (prep.fatal) {
    log.error(prep.fatal);
    return 1;
  }
  applyOomScoreAdj(config.oomScoreAdj, log);
  return runMode(prep, config, opts, host, log, until);
}

async function runMode(
  prep: Preparation,
  config: ProxyConfig,
  opts: RunOptions,
  host: Host,
  log: Logger,
  until?: Promise<number>,
): Promise<number> {
  const nodeName = resolveNodeName(config.hostnameOverride);
  const modeName = prep.mode;
  // First, so every API request (the Node lookup included) is counted.
  const { metrics, restClient } = createRunMetrics({
    mode: modeName,
    featureGates: effectiveFeatureGates(config.featureGates),
  });
  const src = openRealSource(config, opts, nodeName, log, restClient);
  if ("error" in src) {
    log.error("Cannot reach the cluster", { err: src.error });
    return 1;
  }
  log.info("Reading cluster state", { from: src.description, node: nodeName });
  for (const w of prep.nodeWarnings) {
    // Upstream posts these on its Node at startup (e.g. a read-only /sys).
    src.recorder.record({
      ref: { kind: "Node", name: nodeName, uid: nodeName },
      type: "Warning",
      reason: w.reason,
      action: w.action ?? "StartKubeProxy",
      message: w.message,
    });
  }
  const nodeIPs = (await detectNodeIPs(config.bindAddress, () => src.lookupNodeIPs(), log)).ips;
  const featureGates = effectiveFeatureGates(config.featureGates);
  const health = new ProxierHealth({ healthTimeoutMs: healthTimeoutMs(config, modeName) });
  let serviceHealth: ServiceHealthServer;
  let mode: RunningMode;
  try {
    // Health check ports listen where NodePorts are served, from the same `ip -o addr` source.
    const nodeAddresses = await serviceHealthListenAddresses(config.nodePortAddresses, nodeIPs, () =>
      localAddresses(host.exec, log),
    );
    serviceHealth = new ServiceHealthServer({
      nodeName,
      ...(nodeAddresses ? { nodeAddresses } : {}),
      health,
      logger: log.named("healthcheck"),
      recorder: src.recorder,
    });
    mode = await modeNamed(modeName).build({
      exec: host.exec,
      config,
      featureGates,
      metrics,
      log,
      nodeName,
      nodeIPs,
      sysctl: host.sysctl,
      backend: opts.iptablesBackend,
      healthCheck: serviceHealth,
      recorder: src.recorder,
    });
  } catch (err) {
    log.error(`Cannot start ${modeName} mode`, { err: errText(err) });
    return 1;
  }
  if (opts.initOnly) {
    // Like upstream, --init-only goes as far as building the proxier (its sysctls included).
    mode.stop();
    await serviceHealth.close();
    log.info("Initialization done (--init-only); exiting");
    return 0;
  }
  const history = new SyncHistory();
  // Drift found (periodically or on /debug/drift) is repaired by a full sync, queued once the
  // sync loop exists.
  let queueSync = () => {};
  const driftOf = mode.drift?.bind(mode);
  const drift = driftOf
    ? new DriftChecker({
        check: async () => mergeDrift(modeName, await driftOf()),
        repair: () => {
          mode.repairDrift?.();
          queueSync();
        },
        counter: createDriftCounter(metrics.registry),
        log: log.named("drift"),
        intervalMs: driftIntervalMs(process.env),
      })
    : undefined;
  const periods = modeNamed(modeName).periods(config);
  const controller = new SyncController({
    nodeName,
    proxier: mode.proxier,
    minSyncPeriodMs: periods.minSyncPeriod,
    syncPeriodMs: periods.syncPeriod,
    logger: log.named("sync"),
    recorder: src.recorder,
    featureGates,
    metrics: trackerMetrics(metrics),
    history,
    hooks: {
      queued: () => {
        for (const f of mode.families) {
          metrics.syncProxyRulesLastQueuedTimestamp.setToCurrentTime({ ip_family: f });
          health.queuedUpdate(f);
        }
      },
      synced: () => {
        for (const f of mode.families) health.updated(f);
      },
      // What delivering the initial lists left behind (their texts alone are tens of MB at
      // 10,000 Services) is collected before the first sync, the biggest, builds on top of it.
      beforeFirstSync: collectGarbage,
    },
  });
  queueSync = () => controller.requestSync();
  const handler = withNodeHealth(controller, health);
  // Every object for --dump-state; for /debug/state's snapshot, the objects other than slices
  // (references to what the informers hold anyway; slices are rebuilt from the trackers).
  const recording = opts.dumpStateFile
    ? recordingHandler(handler)
    : config.metricsBindAddress
      ? recordingHandler(handler, { endpointSlices: false })
      : undefined;
  const servers = await startServers(
    config,
    modeName,
    health,
    metrics.registry,
    log,
    {
      featureGates,
      flagValues: opts.flagValues ?? {},
      ...(drift ? { drift: () => drift.checkOnce() } : {}),
    },
    recording &&
      debugStateHandler({
        nodeName,
        mode: modeName,
        running: mode,
        synced: controller,
        history,
        delivered: recording.store,
        host,
      }),
  );
  controller.start();
  // While the informers list: the first sync then starts with its cluster-independent part done.
  void mode.proxier.prepare?.();
  await src.source.start(recording?.handler ?? handler);
  void src.birthCry();
  let stopping = false;
  void controller.firstSync().then(async () => {
    log.v(2).info("Memory after the first sync", { ...memoryFigures() });
    // A stop that came during the first sync must not find canary timers started after it.
    if (stopping) return;
    mode.afterFirstSync(() => controller.requestSync());
    drift?.start();
    // A file that cannot be written is reported; the proxy keeps running.
    if (opts.dumpStateFile && recording) await dumpState(opts.dumpStateFile, recording.store, host, log);
  });

  const code = await waitForShutdown(log, until);
  stopping = true;
  drift?.stop();
  mode.stop();
  await src.source.stop();
  await controller.stop();
  await serviceHealth.close();
  await servers.close();
  return code;
}
