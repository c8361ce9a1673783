// --dry-run: one full sync computed from the API server, a --state snapshot, or the embedded
// example; every check run for real, nothing on the host changed; then print the plan and exit.

import { writeFileSync } from "node:fs";
import type { RunOptions } from "../cli/types.ts";
import type { ProxyConfig } from "../config/types.ts";
import { PlanProxier } from "../dryrun/plan-proxier.ts";
import { type DryRunReport, dryRunExitCode, renderJson, renderText } from "../dryrun/report.ts";
import { probeHostState } from "../host/probe.ts";
import { loadKubeConfig } from "../k8s/kubeconfig.ts";
import { resolveNodeName } from "../k8s/node-name.ts";
import { recordingHandler, renderStateFile } from "../k8s/object-store.ts";
import type { Logger } from "../log/logger.ts";
import type { Check } from "../mode/check.ts";
import { SyncController } from "../proxy/sync-controller.ts";
import { type ClusterSnapshot, loadClusterView } from "./cluster-source.ts";
import { createHost, type HostOptions } from "./host.ts";
import { prepareNode } from "./prepare.ts";
import type { Io } from "./run.ts";

/** How long a dry run waits for the API server's initial lists. */
const API_SYNC_TIMEOUT_MS = 30_000;

export async function dryRun(
  config: ProxyConfig,
  opts: RunOptions,
  log: Logger,
  io: Io,
  hostOverrides: Partial<HostOptions> = {},
): Promise<number> {
  const kube = opts.stateFile
    ? undefined
    : loadKubeConfig({
        kubeconfigPath: config.clientConnection.kubeconfig || undefined,
        master: opts.master,
        env: process.env,
      });
  let view: ClusterSnapshot;
  try {
    view = await loadClusterView({
      stateFile: opts.stateFile,
      kube,
      hostnameOverride: config.hostnameOverride,
      log,
      apiSyncTimeoutMs: API_SYNC_TIMEOUT_MS,
      qps: config.clientConnection.qps,
      burst: config.clientConnection.burst,
    });
  } catch (err) {
    io.stderr(
      `kube-proxy-ts: cannot read the cluster state: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    return 1;
  }

  const host = createHost({
    dryRun: true,
    ...(view.hostState ? { hostState: view.hostState } : {}),
    ...hostOverrides,
  });
  const prep = await prepareNode(config, host, log, true);
  const planner = new PlanProxier();
  const nodeName = view.nodeName ?? resolveNodeName(config.hostnameOverride);
  const controller = new SyncController({
    nodeName,
    proxier: planner,
    minSyncPeriodMs: 0,
    syncPeriodMs: 3_600_000,
    logger: log.named("sync"),
  });
  const { handler, store } = recordingHandler(controller);
  const stateCheck = await view.deliver(handler);
  await controller.syncNow();

  if (opts.dumpStateFile) {
    writeFileSync(
      opts.dumpStateFile,
      renderStateFile(store, await probeHostState(host.exec, host.kernel, host.ipset)),
    );
    log.info("Wrote cluster and host state", { file: opts.dumpStateFile });
  }

  const checks: Check[] = [...prep.checks, stateCheck];
  const report: DryRunReport = {
    mode: prep.mode,
    checks,
    commands: host.recorder?.commands ?? [],
    services: planner.servicePorts,
    ...(prep.mode === "ipvs" ? { ipvs: { virtualServers: [] } } : {}),
    notes: [`node ${nodeName}`],
  };
  io.stdout(opts.output === "json" ? renderJson(report) : renderText(report));
  return dryRunExitCode(report);
}
