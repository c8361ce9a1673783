// Benchmarks the iptables proxier on synthetic clusters (by default 1,000 and 10,000 Services x 10
// endpoints). Objects are fed through the real SyncController and change trackers; every sync
// goes to the real IptablesProxier, whose restore only captures the payload (no kernel), so
// the compute time is ours alone: a full sync, then a partial sync after one endpoint of one
// Service changed. The last full and partial payloads are then restored, with the argv the
// real iptables client uses, by iptables-legacy-restore and iptables-nft-restore inside a
// network namespace this script creates (and deletes at the end, on error and on signals too);
// the partial payload goes on top of the full one, as on a node. Prints figures, never asserts.
//
// Usage: scripts/bench-iptables [--services=1000,10000] [--endpoints=10] [--runs=5]
//          [--restore-runs=3] [--restore-timeout=600] [--skip-nft] [--skip-restore]
// Restores need root and `ip netns`. Synthetic addresses come from 198.18.0.0/15 (RFC 2544
// benchmarking range): Service IPs from 198.18.0.1, endpoint IPs from 198.18.64.0 upward, the
// node at 198.19.255.254. Nothing is ever restored into the root network namespace.

import { defaultProxyConfig } from "../src/config/defaults.ts";
import type { Exec, ExecRequest } from "../src/exec/types.ts";
import { createIptablesClient } from "../src/host/iptables/client.ts";
import {
  type IptablesBackend,
  type IptablesClient,
  type RestoreInput,
  type RestoreOptions,
  type RulePosition,
  restoreInputText,
  type Table,
} from "../src/host/iptables/types.ts";
import { nullLogger } from "../src/log/logger.ts";
import { IptablesProxier } from "../src/modes/iptables/proxier.ts";
import { createMetrics } from "../src/proxy/metrics/metrics.ts";
import { FakeClock } from "../src/util/testing/fake-clock.ts";
import {
  benchSyncPairs,
  checkFits,
  count,
  ip,
  MB,
  median,
  ms,
  Namespace,
  NODE_NAME,
  NODE_OFFSET,
  netnsExecOverheadMs,
  peakRssBytes,
  positiveInt,
  positiveInts,
  rejectUnknownFlags,
  runBench,
  type SyncPairs,
  sh,
  size,
  TARGET_SERVICES,
  verdict,
} from "./bench-support.ts";

/** What the proxier passes to every restore (iptables-restore --noflush --counters). */
const RESTORE_OPTIONS: RestoreOptions = { noFlush: true, counters: true };
// ---------------------------------------------------------------------------------------------
// Flags

interface Options {
  services: number[];
  endpoints: number;
  runs: number;
  restoreRuns: number;
  restoreTimeoutS: number;
  skipNft: boolean;
  skipRestore: boolean;
}

function parseOptions(): Options {
  const known = [
    "services",
    "endpoints",
    "runs",
    "restore-runs",
    "restore-timeout",
    "skip-nft",
    "skip-restore",
  ];
  rejectUnknownFlags(known);
  return {
    services: positiveInts("services", [1_000, 10_000]),
    endpoints: positiveInt("endpoints", 10),
    runs: positiveInt("runs", 5),
    restoreRuns: positiveInt("restore-runs", 3),
    restoreTimeoutS: positiveInt("restore-timeout", 600),
    skipNft: process.argv.includes("--skip-nft"),
    skipRestore: process.argv.includes("--skip-restore"),
  };
}

// ---------------------------------------------------------------------------------------------
// Synthetic cluster

// ---------------------------------------------------------------------------------------------
// Compute: the proxier with a restore that only captures the payload

/**
 * An IptablesClient without a kernel: restores are captured, everything else succeeds at once.
 * iptables-save lists the nat chains the captured payloads left behind (as of the last
 * settle(), which runs outside the timings), so the proxier's stale-chain sweep sees what it
 * would see on a node; the rules themselves are left out.
 */
class CapturingIptables implements IptablesClient {
  readonly family = "IPv4";
  readonly backend = "legacy";
  payloads: string[] = [];
  private readonly natChains = new Set<string>();
  private natSave = "*nat\nCOMMIT\n";

  /** Applies the captured payloads' chain declarations and deletions to the nat chain list. */
  settle(): void {
    for (const payload of this.payloads) {
      const nat = payload.slice(payload.indexOf("\n*nat\n"));
      for (const m of nat.matchAll(/^(:|-X )(\S+)/gm)) {
        if (m[1] === ":") this.natChains.add(m[2]!);
        else this.natChains.delete(m[2]!);
      }
    }
    this.natSave = `*nat\n${[...this.natChains].map((c) => `:${c} - [0:0]\n`).join("")}COMMIT\n`;
  }

  async save(table: Table): Promise<string> {
    return table === "nat" ? this.natSave : `*${table}\nCOMMIT\n`;
  }
  async saveAll(): Promise<string> {
    return `*filter\nCOMMIT\n${this.natSave}`;
  }
  async restoreAll(data: RestoreInput, _opts: RestoreOptions): Promise<void> {
    this.payloads.push(restoreInputText(data));
  }
  async ensureChain(_table: Table, _chain: string): Promise<boolean> {
    return true;
  }
  async chainExists(_table: Table, _chain: string): Promise<boolean> {
    return true;
  }
  async flushChain(_table: Table, _chain: string): Promise<void> {}
  async deleteChain(_table: Table, _chain: string): Promise<void> {}
  async ensureRule(_p: RulePosition, _t: Table, _c: string, _args: readonly string[]): Promise<boolean> {
    return true;
  }
  async deleteRule(_table: Table, _chain: string, _args: readonly string[]): Promise<void> {}
  async version(): Promise<string> {
    return "1.8.9";
  }
  // Every iptables since 1.6.2 (2018) has it; the payload then carries --random-fully like a node's.
  async hasRandomFully(): Promise<boolean> {
    return true;
  }
}

type ComputeResult = SyncPairs;

async function benchCompute(services: number, perService: number, runs: number): Promise<ComputeResult> {
  const config = defaultProxyConfig();
  config.clusterCIDRs = ["198.18.0.0/15"];
  const nodeIP = ip(NODE_OFFSET);
  const ipt = new CapturingIptables();
  const proxier = new IptablesProxier({
    iptables: ipt,
    family: "IPv4",
    config,
    metrics: createMetrics(),
    logger: nullLogger,
    nodeName: NODE_NAME,
    nodeIPs: { IPv4: nodeIP },
    localAddresses: async () => ["127.0.0.1/8", `${nodeIP}/15`],
    // Time stands still for the proxier: the hourly full sync and the periodic iptables-save
    // sweep never kick in between the runs, whatever the machine's speed.
    clock: new FakeClock(1_000_000),
  });
  return benchSyncPairs({
    proxier,
    syncPeriodMs: config.iptables.syncPeriod,
    services,
    perService,
    runs,
    takePayloads: () => ipt.payloads.splice(0),
    afterSync: () => ipt.settle(),
    isFull: (payload) => payload.includes("\n:KUBE-SERVICES"),
    // A partial sync declares the chains of the changed Service only.
    isPartial: (payload, address) => payload.includes(address) && count(payload, "\n:KUBE-SVC-") === 1,
  });
}

// ---------------------------------------------------------------------------------------------
// Restore: iptables-*-restore in a network namespace of our own

const printedArgv = new Set<IptablesBackend>();

interface RestoreTimes {
  /** Milliseconds, or "timeout" / a short error. */
  full: (number | string)[];
  partial: (number | string)[];
  argv: string;
}

interface Backend {
  readonly backend: IptablesBackend;
  readonly client: IptablesClient;
  readonly exec: Exec & { last?: ExecRequest };
}

function backendFor(ns: Namespace, backend: IptablesBackend, timeoutS: number): Backend {
  const exec = ns.exec();
  const client = createIptablesClient({ exec, family: "IPv4", backend, timeoutMs: timeoutS * 1000 });
  return { backend, client, exec };
}

/** Empties filter and nat (a restore without --noflush drops every rule and user chain). */
async function resetTables(b: Backend, timeoutS: number): Promise<void> {
  const res = await b.exec.run({
    cmd: `iptables-${b.backend}-restore`,
    args: [],
    stdin: "*filter\nCOMMIT\n*nat\nCOMMIT\n",
    timeoutMs: timeoutS * 1000,
  });
  if (res.code !== 0) throw new Error(`resetting ${b.backend} tables failed: ${res.stderr.trim()}`);
}

async function timedRestore(b: Backend, payload: string, timeoutS: number): Promise<number | string> {
  const t = performance.now();
  try {
    await b.client.restoreAll(payload, RESTORE_OPTIONS);
    return performance.now() - t;
  } catch (err) {
    const code = (err as { exitCode?: number }).exitCode;
    if (code === 124) return `timeout (> ${timeoutS} s)`;
    const msg = err instanceof Error ? err.message : String(err);
    return `failed (${msg.length > 200 ? `${msg.slice(0, 200)}...` : msg})`;
  }
}

/** After full + partial: the endpoint chains in the namespace are the ones the payloads leave. */
async function checkRestored(b: Backend, c: ComputeResult): Promise<void> {
  const declared = (text: string) => text.match(/^:KUBE-SEP-\S+/gm)?.map((l) => l.slice(1)) ?? [];
  const chains = new Set([...declared(c.fullPayload), ...declared(c.changePayload)]);
  for (const m of c.changePayload.matchAll(/^-X (\S+)/gm)) chains.delete(m[1]!);
  const expected = chains.size;
  const found = declared(await b.client.save("nat")).length;
  if (found !== expected) {
    throw new Error(
      `sanity check failed: ${found} KUBE-SEP chains in the ${b.backend} tables, expected ${expected}`,
    );
  }
}

async function benchRestore(b: Backend, c: ComputeResult, opts: Options): Promise<RestoreTimes> {
  await b.client.version(); // the client's one-time version probe, outside the timings
  const out: RestoreTimes = { full: [], partial: [], argv: "" };
  for (let r = 0; r < opts.restoreRuns; r++) {
    await resetTables(b, opts.restoreTimeoutS);
    const full = await timedRestore(b, c.fullPayload, opts.restoreTimeoutS);
    out.argv ||= b.exec.last ? [b.exec.last.cmd, ...b.exec.last.args].join(" ") : "";
    out.full.push(full);
    if (typeof full !== "number") {
      out.partial.push("skipped (full restore did not succeed)");
      break; // another try would fail or time out the same way
    }
    const partial = await timedRestore(b, c.changePayload, opts.restoreTimeoutS);
    out.partial.push(partial);
    if (typeof partial !== "number") break;
    if (r === 0) await checkRestored(b, c);
  }
  await resetTables(b, opts.restoreTimeoutS);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Figures

/** The median when every run succeeded, else the first failure ("timeout", ...). */
function restoreFigure(times: (number | string)[]): { text: string; ms?: number } {
  const failure = times.find((t): t is string => typeof t === "string");
  if (failure !== undefined) return { text: failure };
  const nums = times as number[];
  const m = median(nums);
  return { text: `${ms(m)} ms (median of ${nums.length})`, ms: m };
}

interface CaseSummary {
  services: number;
  fullMs: number;
  partialMs: number;
  legacyFullMs: number | undefined;
  peakRss: number;
}

async function runCase(services: number, opts: Options, ns: Namespace | undefined): Promise<CaseSummary> {
  const label = `${services} services x ${opts.endpoints} endpoints`;
  const c = await benchCompute(services, opts.endpoints, opts.runs);
  const fullMs = median(c.fullMs);
  const partialMs = median(c.changeMs);
  const of = `(median of ${opts.runs})`;
  console.log(`${label}: full sync compute ${ms(fullMs)} ms ${of}, payload ${size(c.fullPayload)}`);
  console.log(
    `${label}: partial sync compute ${ms(partialMs)} ms ${of} after one endpoint change, payload ${size(c.changePayload)}`,
  );
  const computePeakRss = peakRssBytes();
  let legacyFullMs: number | undefined;
  if (ns) {
    const backends: IptablesBackend[] = opts.skipNft ? ["legacy"] : ["legacy", "nft"];
    for (const backend of backends) {
      const t = await benchRestore(backendFor(ns, backend, opts.restoreTimeoutS), c, opts);
      const full = restoreFigure(t.full);
      const partial = restoreFigure(t.partial);
      if (backend === "legacy") legacyFullMs = full.ms;
      const name = `iptables-${backend}-restore`;
      if (t.argv && !printedArgv.has(backend)) {
        printedArgv.add(backend);
        console.log(`${name} argv (as the iptables client runs it, stdin = payload): ${t.argv}`);
      }
      console.log(`${label}: ${name} full payload ${full.text}, partial on top ${partial.text}`);
    }
  }
  const peakRss = peakRssBytes();
  const before = ns ? ` (${(computePeakRss / MB).toFixed(0)} MB before the restores)` : "";
  console.log(`${label}: peak RSS of the benchmark so far ${(peakRss / MB).toFixed(0)} MB${before}`);
  return { services, fullMs, partialMs, legacyFullMs, peakRss };
}

function printTargets(cases: CaseSummary[], opts: Options): void {
  const c = cases.find((x) => x.services === TARGET_SERVICES) ?? cases.at(-1)!;
  const note = c.services === TARGET_SERVICES && opts.endpoints === 10 ? "" : " (targets are for 10000 x 10)";
  console.log(`targets at ${c.services} services x ${opts.endpoints} endpoints${note}:`);
  if (c.legacyFullMs !== undefined) {
    const pct = (100 * c.fullMs) / c.legacyFullMs;
    console.log(
      `  full-sync compute ${ms(c.fullMs)} ms = ${pct.toFixed(1)} % of the legacy restore (${ms(c.legacyFullMs)} ms); target < 10 %: ${verdict(pct < 10)}`,
    );
  } else {
    console.log(
      `  full-sync compute ${ms(c.fullMs)} ms; legacy restore not measured, target < 10 % of it: n/a`,
    );
  }
  console.log(`  partial-sync compute ${ms(c.partialMs)} ms; target < 20 ms: ${verdict(c.partialMs < 20)}`);
  const rss = c.peakRss / MB;
  console.log(`  peak RSS ${rss.toFixed(0)} MB; target < 300 MB: ${verdict(rss < 300)}`);
}

function restoreUnavailable(opts: Options): string | undefined {
  if (opts.skipRestore) return "--skip-restore";
  if (process.getuid?.() !== 0) return "not root";
  if (sh("ip", ["netns", "list"]).code !== 0) return "ip netns unavailable";
  const tools = opts.skipNft ? ["legacy"] : ["legacy", "nft"];
  for (const t of tools) {
    if (sh(`iptables-${t}-restore`, ["--version"]).code !== 0) return `iptables-${t}-restore unavailable`;
  }
  return undefined;
}

async function main(): Promise<void> {
  const opts = parseOptions();
  for (const s of opts.services) checkFits(s, opts.endpoints, opts.runs);
  const why = restoreUnavailable(opts);
  let ns: Namespace | undefined;
  if (why) console.log(`restores: skipped (${why})`);
  else {
    ns = Namespace.create();
    console.log(
      `restores run in network namespace ${ns.name} (ip netns exec costs ${ms(netnsExecOverheadMs(ns))} ms, included; timeout ${opts.restoreTimeoutS} s)`,
    );
  }
  try {
    const cases: CaseSummary[] = [];
    for (const services of opts.services) cases.push(await runCase(services, opts, ns));
    printTargets(cases, opts);
  } finally {
    ns?.delete();
  }
}

await runBench("bench-iptables", main);
