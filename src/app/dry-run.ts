// --dry-run: one full sync computed from the API server, a --state snapshot, or the embedded
// example; every check run for real, nothing on the host changed; then print the plan and exit.

import type { RunOptions } from "../cli/types.ts";
import { type EffectiveFeatureGates, effectiveFeatureGates } from "../config/feature-gates.ts";
import type { ProxyConfig } from "../config/types.ts";
import { missingToolsCheck } from "../dryrun/missing-tools.ts";
import { PlanProxier } from "../dryrun/plan-proxier.ts";
import {
  type DryRunReport,
  dryRunExitCode,
  type PlannedCommand,
  renderJsonParts,
  renderText,
} from "../dryrun/report.ts";
import { type EventRecorder, memoryRecorder } from "../k8s/events.ts";
import { loadKubeConfig } from "../k8s/kubeconfig.ts";
import { nodeIPs, nodeName as nodeNameOf } from "../k8s/node-info.ts";
import { resolveNodeName } from "../k8s/node-name.ts";
import { type ObjectStore, recordingHandler } from "../k8s/object-store.ts";
import type { NodeObject, ObjectRef } from "../k8s/objects.ts";
import type { ClusterEventHandler } from "../k8s/source.ts";
import type { Logger } from "../log/logger.ts";
import { cleanupOtherModes, type ModeName, modeForConfig, modeNamed } from "../modes/registry.ts";
import type { PlannedMode } from "../modes/types.ts";
import type { Check } from "../proxy/check.ts";
import { createMetrics } from "../proxy/metrics/metrics.ts";
import type { Proxier } from "../proxy/proxier.ts";
import { SyncController } from "../proxy/sync-controller.ts";
import { collectGarbage, collectYoungGarbageAnyway } from "../runtime.ts";
import type { Clock } from "../util/clock.ts";
import { errText } from "../util/err-text.ts";
import { type ClusterSnapshot, loadClusterView } from "./cluster-source.ts";
import { createHost, type Host, type HostOptions } from "./host.ts";
import { detectNodeIPs } from "./node-ips.ts";
import { prepareNode } from "./prepare.ts";
import type { Io } from "./run.ts";
import { dumpState } from "./state-dump.ts";

/** How long a dry run waits for the API server's initial lists. */
const API_SYNC_TIMEOUT_MS = 30_000;

export async function dryRun(
  config: ProxyConfig,
  opts: RunOptions,
  log: Logger,
  io: Io,
  hostOverrides: Partial<HostOptions> = {},
): Promise<number> {
  const stateFile = opts.stateFiles?.[0];
  const kube = stateFile
    ? undefined
    : loadKubeConfig({
        kubeconfigPath: config.clientConnection.kubeconfig || undefined,
        master: opts.master,
        env: process.env,
      });
  let view: ClusterSnapshot;
  try {
    view = await loadClusterView({
      stateFile,
      kube,
      hostnameOverride: config.hostnameOverride,
      log,
      apiSyncTimeoutMs: API_SYNC_TIMEOUT_MS,
      qps: config.clientConnection.qps,
      burst: config.clientConnection.burst,
    });
  } catch (err) {
    io.stderr(`kube-proxy-ts: cannot read the cluster state: ${errText(err)}\n`);
    return 1;
  }

  const host = createHost({
    dryRun: true,
    ...(view.hostState ? { hostState: view.hostState } : {}),
    ...hostOverrides,
  });
  const nodeName = view.nodeName ?? resolveNodeName(config.hostnameOverride);
  const session = await startPlanning(config, opts, host, nodeName, view, log);
  await session.sync();
  const missing = missingToolsCheck(host.missingTools ?? []);
  const report = session.report(host.recorder?.commands ?? [], missing ? [missing] : []);
  const dumpFailed = opts.dumpStateFile
    ? !(await dumpState(opts.dumpStateFile, session.store, host, log))
    : false;
  if (opts.output === "json") await writeJson(renderJsonParts(report), io);
  else io.stdout(renderText(report));
  // The plan is printed either way; a state file asked for and not written is a usage error.
  return dumpFailed ? 1 : dryRunExitCode(report);
}

/** A dry run's proxier, fed and synced step by step: one step for a plan, one per snapshot in a replay. */
export interface PlanningSession {
  /** The handler the cluster's objects (and, in a replay, the later snapshots' changes) go to. */
  readonly handler: ClusterEventHandler;
  readonly store: ObjectStore;
  /** Runs one sync, as the daemon would once the changes are in; a failure becomes a check. */
  sync(): Promise<void>;
  /** Whether what was delivered since the last sync asked for one (a daemon would not sync otherwise). */
  syncRequested(): boolean;
  /** The report of the sync just run, over the commands it recorded. */
  report(commands: PlannedCommand[], extraChecks?: readonly Check[]): DryRunReport;
}

/**
 * What a dry run does before its first sync: drop other modes' leftovers, prepare the node,
 * deliver `view` and build the mode's proxier beside the planner, on the dry-run `host`.
 */
export async function startPlanning(
  config: ProxyConfig,
  opts: RunOptions,
  host: Host,
  nodeName: string,
  view: ClusterSnapshot,
  log: Logger,
  /** The proxiers' clock: a replay steps it between snapshots. */
  clock?: Clock,
): Promise<PlanningSession> {
  // What a real run would do first: drop upstream's nftables-mode tables, where they exist.
  await cleanupOtherModes(modeForConfig(config).name, host.exec, log, {
    excludeCIDRs: config.ipvs.excludeCIDRs,
    featureGates: config.featureGates,
  });
  const prep = await prepareNode(config, host, log, true);
  const planner = new PlanProxier();
  // The mode's proxier is built once the Node (and so the node IPs) has been delivered.
  const proxiers: Proxier[] = [planner];
  const featureGates = effectiveFeatureGates(config.featureGates);
  let requested = false;
  const controller = new SyncController({
    nodeName,
    hooks: {
      queued: () => {
        requested = true;
      },
      synced: () => {
        requested = false;
      },
    },
    proxier: { sync: async (input) => void (await Promise.all(proxiers.map((p) => p.sync(input)))) },
    minSyncPeriodMs: 0,
    syncPeriodMs: 3_600_000,
    logger: log.named("sync"),
    featureGates,
  });
  const { handler, store } = recordingHandler(controller);
  const stateCheck = await view.deliver(handler);
  const setupChecks: Check[] = [...prep.checks, stateCheck];
  // Events the mode would post on objects (a Service held out of ipvs mode's sets), per step.
  const modeEvents = memoryRecorder();
  const built = await planMode(
    prep.mode,
    config,
    featureGates,
    opts,
    host,
    store.node,
    log,
    clock,
    modeEvents,
  );
  if ("check" in built) setupChecks.push(built.check);
  else proxiers.push(built.proxier);
  let checks = setupChecks;
  return {
    handler,
    store,
    syncRequested: () => requested,
    async sync() {
      // As the daemon does before its first sync (a no-op here unless collections are on, as in
      // scripts/sync-memory.ts): what reading the cluster left behind goes before the sync builds.
      collectGarbage();
      try {
        await controller.syncNow();
      } catch (err) {
        checks = [...checks, { name: "sync", ok: false, detail: errText(err) }];
      }
    },
    report(commands, extraChecks = []) {
      const report: DryRunReport = {
        mode: prep.mode,
        checks: [...checks, ...extraChecks],
        commands,
        services: planner.servicePorts,
        ...(modeNamed(prep.mode).dryRunReport?.("proxier" in built ? built : undefined) ?? {}),
        notes: [`node ${nodeName}`],
        events: [
          ...prep.nodeWarnings.map((w) => ({
            type: "Warning" as const,
            reason: w.reason,
            action: w.action ?? "StartKubeProxy",
            message: w.message,
            regarding: `Node/${nodeName}`,
          })),
          ...modeEvents.events.splice(0).map((e) => ({
            type: "Warning" as const,
            reason: e.reason,
            action: e.action,
            message: e.message,
            regarding: regardingText(e.ref),
          })),
        ],
      };
      // A later step starts from the setup's checks again: only its own sync can fail it.
      checks = setupChecks;
      return report;
    },
  };
}

/** "Service/ns/name", "Node/name": what an event is about, as the report names it. */
function regardingText(ref: ObjectRef): string {
  return ref.namespace ? `${ref.kind}/${ref.namespace}/${ref.name}` : `${ref.kind}/${ref.name}`;
}

/** Characters of report written between two collections of the pieces already written. */
const CHARS_PER_COLLECTION = 4 << 20;

/**
 * A JSON report, each piece made once the last was taken and written, so only one exists at a
 * time; the pieces written are collected as they go (a report can be twice the rules' size).
 */
export async function writeJson(parts: Iterable<string>, io: Io): Promise<void> {
  let chars = 0;
  for (const part of parts) {
    if (io.stdoutPaced) await io.stdoutPaced(part);
    else io.stdout(part);
    chars += part.length;
    if (chars >= CHARS_PER_COLLECTION) {
      chars = 0;
      collectYoungGarbageAnyway();
    }
  }
}

/** The mode's proxier on the dry-run host: reads the real tables, records every change. */
async function planMode(
  mode: ModeName,
  config: ProxyConfig,
  featureGates: EffectiveFeatureGates,
  opts: RunOptions,
  host: Host,
  node: NodeObject | undefined,
  log: Logger,
  clock: Clock | undefined,
  recorder: EventRecorder,
): Promise<PlannedMode | { check: Check }> {
  // Read quietly: the sync controller has already reported what is wrong with this Node.
  const rawNodeIPs = nodeIPs(node).ordered;
  try {
    return await modeNamed(mode).plan({
      exec: host.exec,
      config,
      featureGates,
      metrics: createMetrics(),
      log,
      nodeName: nodeNameOf(node),
      nodeIPs: (await detectNodeIPs(config.bindAddress, () => rawNodeIPs, log)).ips,
      sysctl: host.sysctl,
      backend: opts.iptablesBackend,
      ...(clock ? { clock } : {}),
      recorder,
    });
  } catch (err) {
    return { check: { name: mode, ok: false, detail: errText(err) } };
  }
}
