// --dry-run with more than one --state: a replay. The snapshots are synced in order on one
// proxier, on a simulated host, so each step after the first gets the partial sync the daemon
// would run when the cluster moved from the previous snapshot to this one (the later snapshots
// arrive as watch events: adds and updates, then deletes). Each step's commands are printed.

import { readFile } from "node:fs/promises";
import type { RunOptions } from "../cli/types.ts";
import type { ProxyConfig } from "../config/types.ts";
import { type DryRunReport, dryRunExitCode, renderJsonParts, renderText } from "../dryrun/report.ts";
import { nodeIPs } from "../k8s/node-info.ts";
import { resolveNodeName } from "../k8s/node-name.ts";
import type { ObjectStore } from "../k8s/object-store.ts";
import { parseStateDocuments, type StateDocuments } from "../k8s/state-file.ts";
import { deliverDiff, viewOf } from "../k8s/state-file-source.ts";
import type { Logger } from "../log/logger.ts";
import { steppedClock } from "../util/clock.ts";
import { errText } from "../util/err-text.ts";
import { describeDocuments, documentsView } from "./cluster-source.ts";
import { startPlanning, writeJson } from "./dry-run.ts";
import type { Io } from "./run.ts";
import { createSimulatedHost, type SimulatedHost } from "./simulated-host.ts";
import { dumpState } from "./state-dump.ts";

/**
 * How much later each snapshot is taken to arrive than the one before: past the proxiers' short
 * delays (nftables deletes a chain it flushed at a sync a second or more later), short of their
 * periodic work (30 s reconciles, the hourly full sync). So a replay's steps do not depend on how
 * fast this machine runs them.
 */
export const REPLAY_STEP_MS = 2_000;

/** One --state file, parsed. */
export interface Snapshot {
  readonly file: string;
  readonly docs: StateDocuments;
}

async function readSnapshots(files: readonly string[]): Promise<Snapshot[]> {
  const out: Snapshot[] = [];
  for (const file of files) out.push({ file, docs: parseStateDocuments(await readFile(file, "utf8"), file) });
  return out;
}

export async function replay(config: ProxyConfig, opts: RunOptions, log: Logger, io: Io): Promise<number> {
  let snapshots: Snapshot[];
  try {
    snapshots = await readSnapshots(opts.stateFiles ?? []);
  } catch (err) {
    io.stderr(`kube-proxy-ts: cannot read the cluster state: ${errText(err)}\n`);
    return 1;
  }
  let done: Replayed;
  try {
    done = await replaySteps(config, opts, snapshots, log);
  } catch (err) {
    io.stderr(`kube-proxy-ts: ${errText(err)}\n`);
    return 1;
  }
  const { reports, host, store } = done;
  const dumpFailed = opts.dumpStateFile ? !(await dumpState(opts.dumpStateFile, store, host, log)) : false;
  if (opts.output === "json") await writeJson(stepsJson(reports), io);
  else {
    reports.forEach((r, i) => {
      io.stdout(`${i > 0 ? "\n" : ""}=== Step ${i + 1} of ${reports.length}: ${snapshots[i]?.file} ===\n`);
      io.stdout(renderText(r));
    });
  }
  if (dumpFailed) return 1;
  return reports.some((r) => dryRunExitCode(r) !== 0) ? 3 : 0;
}

export interface Replayed {
  /** One report per snapshot, each over the commands of its step. */
  readonly reports: DryRunReport[];
  /** The simulated host as the last step left it. */
  readonly host: SimulatedHost;
  readonly store: ObjectStore;
}

/** The steps themselves: the snapshots given (parsed), in order, on a new simulated host. */
export async function replaySteps(
  config: ProxyConfig,
  opts: RunOptions,
  snapshots: readonly Snapshot[],
  log: Logger,
): Promise<Replayed> {
  const [first, ...later] = snapshots;
  if (!first) throw new Error("a replay needs at least one snapshot");
  const view = documentsView(first.docs, first.file, config.hostnameOverride);
  const nodeName = view.nodeName ?? resolveNodeName(config.hostnameOverride);
  const node = first.docs.nodes.find((n) => n.metadata?.name === nodeName);
  let host: SimulatedHost;
  try {
    host = await createSimulatedHost(view.hostState, nodeIPs(node).ordered);
  } catch (err) {
    throw new Error(`${first.file}: ${errText(err)}`);
  }

  const time = steppedClock();
  const session = await startPlanning(config, opts, host, nodeName, view, log, time.clock);
  const reports: DryRunReport[] = [];
  let taken = 0;
  const step = async (snap: Snapshot, changes: string) => {
    // Changes that ask for no sync (a Node's status, an object rewritten as it was) get none,
    // as in the daemon, until its periodic sync.
    const synced = session.syncRequested();
    if (synced) await session.sync();
    const commands = host.recorder.commands.slice(taken);
    taken = host.recorder.commands.length;
    const report = stepReport(session.report(commands), snap, reports.length === 0);
    report.notes.push(
      `replay step ${reports.length + 1} of ${snapshots.length}: ${snap.file} (${changes}${synced ? "" : "; no sync: nothing a sync reads changed"})`,
    );
    reports.push(report);
  };
  await step(first, "full sync on the simulated host");
  let previous = viewOf(first.docs, nodeName);
  for (const snap of later) {
    time.advance(REPLAY_STEP_MS);
    const next = viewOf(snap.docs, nodeName);
    const changed = deliverDiff(previous, next, session.handler);
    previous = next;
    await step(snap, `${changed} object change${changed === 1 ? "" : "s"} from the step before`);
  }
  return { reports, host, store: session.store };
}

/** A step's report says what its own snapshot held (the setup's check read the first). */
function stepReport(report: DryRunReport, snap: Snapshot, first: boolean): DryRunReport {
  const hostState = snap.docs.hostState !== undefined;
  const unused =
    hostState && !first
      ? " (a later step's HostState is not used: the host is what the steps before left)"
      : "";
  const detail = `${describeDocuments(snap.file, snap.docs, hostState)}${unused}`;
  return {
    ...report,
    checks: report.checks.map((c) => (c.name === "cluster state" ? { ...c, detail } : c)),
  };
}

/** `{"steps": [plan, ...]}`, each plan in the one-step report's JSON, written a piece at a time. */
function* stepsJson(reports: readonly DryRunReport[]): Generator<string> {
  yield '{\n"steps": [\n';
  for (const [i, report] of reports.entries()) {
    if (i > 0) yield ",\n";
    yield* renderJsonParts(report);
  }
  yield "]\n}\n";
}
