// Traffic helpers over a Topology: echo servers in pods, probes from any namespace. The
// scripts (e2e-server.ts, e2e-probe.ts) run under the Bun that runs the tests.

import { join } from "node:path";
import type { ProbeReply, ProbeResult } from "./e2e-probe.ts";
import { scaled } from "./kernel-vm.ts";
import type { Daemon, NsRef, Topology } from "./netns.ts";

export type { ProbeReply, ProbeResult };

const SUPPORT = import.meta.dir;
const SERVER = join(SUPPORT, "e2e-server.ts");
const PROBE = join(SUPPORT, "e2e-probe.ts");
/** The Bun binary running this test process (also node_modules/.bin/bun under scripts/test). */
export const BUN = process.execPath;

export interface ProbeSummary {
  ok: boolean;
  attempts: number;
  okCount: number;
  backends: Record<string, number>;
  errors: Record<string, number>;
  results: ProbeResult[];
}

export interface ServerOptions {
  tcp?: readonly number[];
  udp?: readonly number[];
  maxSeconds?: number;
}

/** Starts the echo server in pod namespace `pod` (replying with `name`, default the pod). */
export async function startServer(
  topo: Topology,
  pod: NsRef,
  opts: ServerOptions,
  name: string = pod,
): Promise<Daemon> {
  const argv = [BUN, SERVER, "--name", name, "--max-seconds", String(opts.maxSeconds ?? 600)];
  if (opts.tcp?.length) argv.push("--tcp", opts.tcp.join(","));
  if (opts.udp?.length) argv.push("--udp", opts.udp.join(","));
  const d = topo.spawnDaemon(pod, argv);
  await d.waitForOutput(/^READY /m, 15_000);
  return d;
}

export interface ProbeOptions {
  proto?: "tcp" | "udp";
  /** "ip:port" */
  target: string;
  source?: string;
  count?: number;
  intervalMs?: number;
  timeoutMs?: number;
  durationMs?: number;
}

/** What one attempt may take unless the caller says otherwise (stretched like every wait). */
const DEFAULT_TIMEOUT_MS = scaled(2000);

function probeArgv(o: ProbeOptions, stream: boolean): string[] {
  const argv = [BUN, PROBE, "--proto", o.proto ?? "tcp", "--target", o.target];
  if (o.source) argv.push("--source", o.source);
  if (o.count !== undefined) argv.push("--count", String(o.count));
  if (o.intervalMs !== undefined) argv.push("--interval-ms", String(o.intervalMs));
  argv.push("--timeout-ms", String(o.timeoutMs ?? DEFAULT_TIMEOUT_MS));
  if (o.durationMs !== undefined) argv.push("--duration-ms", String(o.durationMs));
  if (stream) argv.push("--stream");
  return argv;
}

function parseSummary(stdout: string, what: string, stderr: string): ProbeSummary {
  const last = stdout.trim().split("\n").pop() ?? "";
  try {
    const s = JSON.parse(last) as ProbeSummary;
    if (typeof s.attempts !== "number") throw new Error("not a summary");
    return s;
  } catch {
    throw new Error(`probe ${what} printed no summary\nstdout:\n${stdout}\nstderr:\n${stderr}`);
  }
}

/** Runs a probe to completion in namespace `ns` and returns its summary. */
export async function probe(topo: Topology, ns: NsRef, o: ProbeOptions): Promise<ProbeSummary> {
  const count = o.count ?? 1;
  const per = (o.timeoutMs ?? DEFAULT_TIMEOUT_MS) + (o.intervalMs ?? 0);
  const bound = Math.min(count * per, o.durationMs ?? Number.POSITIVE_INFINITY) + per + 10_000;
  // topo.run stretches the bound on a slow (emulated) machine.
  const r = await topo.run(ns, probeArgv(o, false), { timeoutMs: bound });
  return parseSummary(r.stdout, `${ns} -> ${o.target}`, r.stderr);
}

/** One attempt; the result of the single probe. */
export async function probeOnce(topo: Topology, ns: NsRef, o: ProbeOptions): Promise<ProbeResult> {
  const s = await probe(topo, ns, { ...o, count: 1 });
  const r = s.results[0];
  if (!r) throw new Error(`probe ${ns} -> ${o.target} made no attempt`);
  return r;
}

/** A probe running in the background (e.g. across a rule change); bounded by its own options. */
export interface BackgroundProbe {
  readonly daemon: Daemon;
  /** Results streamed so far. */
  results(): ProbeResult[];
  /** Waits for the probe to finish (it stops by itself at count/duration) and returns its summary. */
  done(): Promise<ProbeSummary>;
  /** Asks the probe to stop after its current attempt (SIGTERM) and returns its summary. */
  stop(): Promise<ProbeSummary>;
}

export function probeInBackground(topo: Topology, ns: NsRef, o: ProbeOptions): BackgroundProbe {
  const daemon = topo.spawnDaemon(ns, probeArgv(o, true));
  const results = () =>
    daemon
      .stdout()
      .split("\n")
      .filter((l) => l.startsWith('{"ok"') && !l.includes('"attempts":'))
      .map((l) => JSON.parse(l) as ProbeResult);
  const finish = async (boundMs: number) => {
    const timer = setTimeout(() => void daemon.kill(500), scaled(boundMs));
    await daemon.exited;
    clearTimeout(timer);
    return parseSummary(daemon.stdout(), `${ns} -> ${o.target}`, daemon.stderr());
  };
  const per = (o.timeoutMs ?? DEFAULT_TIMEOUT_MS) + (o.intervalMs ?? 0);
  return {
    daemon,
    results,
    done() {
      const count = o.count ?? 1;
      return finish(Math.min(count * per, o.durationMs ?? Number.POSITIVE_INFINITY) + per + 10_000);
    },
    stop() {
      if (daemon.exitCode() === undefined) process.kill(daemon.pid, "SIGTERM");
      return finish(per + 5000);
    },
  };
}

/** Compact text for assertion messages. */
export function describeSummary(s: ProbeSummary): string {
  const peers = [...new Set(s.results.map((r) => r.reply?.peer).filter(Boolean))];
  return `${s.okCount}/${s.attempts} ok, backends ${JSON.stringify(s.backends)}, errors ${JSON.stringify(s.errors)}, peers ${JSON.stringify(peers)}`;
}

export type { Daemon };
