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

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readlinkSync } from "node:fs";
import { defaultProxyConfig } from "../src/config/defaults.ts";
import { createRealExec } from "../src/exec/runner.ts";
import type { Exec, ExecRequest, ExecResult } from "../src/exec/types.ts";
import { createIptablesClient } from "../src/host/iptables/client.ts";
import type {
  IptablesBackend,
  IptablesClient,
  RestoreOptions,
  RulePosition,
  Table,
} from "../src/host/iptables/types.ts";
import type { EndpointSliceObject, ServiceObject } from "../src/k8s/objects.ts";
import { nullLogger } from "../src/log/logger.ts";
import { IptablesProxier } from "../src/modes/iptables/proxier.ts";
import { createMetrics } from "../src/proxy/metrics/metrics.ts";
import type { Proxier, SyncInput } from "../src/proxy/proxier.ts";
import { SyncController } from "../src/proxy/sync-controller.ts";
import { FakeClock } from "../src/util/testing/fake-clock.ts";

const BASE = (198 << 24) + (18 << 16);
const RANGE = 2 ** 17;
const ENDPOINT_OFFSET = 64 * 256;
const NODE_NAME = "node-0";
const NODE_OFFSET = RANGE - 2;
/** What the proxier passes to every restore (iptables-restore --noflush --counters). */
const RESTORE_OPTIONS: RestoreOptions = { noFlush: true, counters: true };
/** The size the targets are stated for. */
const TARGET_SERVICES = 10_000;
const MB = 1e6;

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

/** `--name=value` or `--name value`; undefined when absent. */
function flag(name: string): string | undefined {
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === `--${name}`) return argv[i + 1] ?? "";
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return undefined;
}

function positiveInts(name: string, fallback: number[]): number[] {
  const raw = flag(name);
  if (raw === undefined) return fallback;
  const values = raw.split(",").map((s) => Number(s.trim()));
  if (values.length === 0 || values.some((v) => !Number.isInteger(v) || v < 1)) {
    throw new Error(`--${name} needs positive integers (comma-separated)`);
  }
  return values;
}

function positiveInt(name: string, fallback: number): number {
  const values = positiveInts(name, [fallback]);
  if (values.length !== 1) throw new Error(`--${name} needs one positive integer`);
  return values[0]!;
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
  for (const a of process.argv.slice(2)) {
    const name = a.replace(/^--/, "").split("=")[0]!;
    if (a.startsWith("--") && !known.includes(name)) throw new Error(`unknown flag ${a}`);
  }
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

function ip(offset: number): string {
  if (offset < 0 || offset >= RANGE) throw new Error("synthetic cluster too large for 198.18.0.0/15");
  const n = BASE + offset;
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

function count(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

function checkFits(services: number, perService: number, runs: number): void {
  if (services >= ENDPOINT_OFFSET || ENDPOINT_OFFSET + services * perService + runs >= NODE_OFFSET) {
    throw new Error(`${services} services x ${perService} endpoints do not fit in 198.18.0.0/15`);
  }
}

function makeService(i: number): ServiceObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: `ns-${i % 50}`, name: `svc-${i}`, uid: `uid-${i}`, resourceVersion: "1" },
    spec: { type: "ClusterIP", clusterIP: ip(i + 1), ports: [{ name: "http", port: 80, protocol: "TCP" }] },
  };
}

/** Service i's slice; `replaced` swaps endpoint 0 for that address (one endpoint change). */
function makeSlice(i: number, perService: number, replaced?: { address: string; version: number }) {
  const endpoints = Array.from({ length: perService }, (_, j) => ({
    addresses: [j === 0 && replaced ? replaced.address : ip(ENDPOINT_OFFSET + i * perService + j)],
    nodeName: `node-${(i + j) % 100}`,
    zone: `zone-${j % 3}`,
    conditions: { ready: true, serving: true, terminating: false },
  }));
  const slice: EndpointSliceObject = {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      namespace: `ns-${i % 50}`,
      name: `svc-${i}-abcde`,
      labels: { "kubernetes.io/service-name": `svc-${i}` },
      resourceVersion: String((replaced?.version ?? 0) + 1),
    },
    addressType: "IPv4",
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    endpoints,
  };
  return slice;
}

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
  async restoreAll(data: string, _opts: RestoreOptions): Promise<void> {
    this.payloads.push(data);
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

/** Times only the proxier's sync, as the SyncController calls it. */
class TimedProxier implements Proxier {
  lastMs = 0;
  constructor(private readonly inner: Proxier) {}
  async sync(input: SyncInput): Promise<void> {
    const t = performance.now();
    await this.inner.sync(input);
    this.lastMs = performance.now() - t;
  }
}

interface ComputeResult {
  fullMs: number[];
  partialMs: number[];
  /** From the last run: a full payload and the partial one that follows it. */
  fullPayload: string;
  partialPayload: string;
}

// A full collection before each timed sync, so one sync does not pay for the last one's garbage
// (node exposes gc with --expose-gc; Bun through its global object).
function collectGarbage(): void {
  const g = globalThis as { gc?: () => void; Bun?: { gc(force: boolean): void } };
  if (g.gc) g.gc();
  else g.Bun?.gc(true);
}

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
  const timed = new TimedProxier(proxier);
  const controller = new SyncController({
    nodeName: NODE_NAME,
    proxier: timed,
    minSyncPeriodMs: 1000,
    syncPeriodMs: config.iptables.syncPeriod,
  });
  // The runner is never started: syncs happen only when syncNow() is called below.
  for (let i = 0; i < services; i++) controller.onServiceChange(undefined, makeService(i));
  for (let i = 0; i < services; i++) controller.onEndpointSliceChange(makeSlice(i, perService), false);
  controller.onServicesSynced();
  controller.onEndpointSlicesSynced();

  const sync = async (): Promise<{ ms: number; payload: string }> => {
    ipt.payloads = [];
    collectGarbage();
    await controller.syncNow();
    if (ipt.payloads.length !== 1)
      throw new Error("sanity check failed: a sync did not restore exactly once");
    ipt.settle();
    return { ms: timed.lastMs, payload: ipt.payloads[0]! };
  };

  await sync(); // the first sync after start (cold code paths), not counted
  const changed = Math.floor(services / 2);
  const result: ComputeResult = { fullMs: [], partialMs: [], fullPayload: "", partialPayload: "" };
  for (let r = 0; r < runs; r++) {
    proxier.requestFullSync();
    const full = await sync();
    const address = ip(ENDPOINT_OFFSET + services * perService + r);
    controller.onEndpointSliceChange(makeSlice(changed, perService, { address, version: r + 1 }), false);
    const partial = await sync();
    // A partial sync declares the chains of the changed Service only.
    if (!partial.payload.includes(address) || count(partial.payload, "\n:KUBE-SVC-") !== 1) {
      throw new Error("sanity check failed: the sync after one endpoint change was not a partial sync");
    }
    result.fullMs.push(full.ms);
    result.partialMs.push(partial.ms);
    // Only the last run's pair is kept: an earlier one held would add to the peak RSS.
    if (r === runs - 1) {
      result.fullPayload = full.payload;
      result.partialPayload = partial.payload;
    }
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Restore: iptables-*-restore in a network namespace of our own

function sh(cmd: string, args: string[]): { code: number; out: string } {
  const res = spawnSync(cmd, args, { encoding: "utf8", env: { ...process.env, LC_ALL: "C" } });
  return { code: res.status ?? 1, out: `${res.stdout ?? ""}${res.stderr ?? ""}`.trim() };
}

class Namespace {
  private deleted = false;
  private constructor(readonly name: string) {}

  /** Creates kpts-bench-<random>; refuses to go on unless it is a network namespace of its own. */
  static create(): Namespace {
    const name = `kpts-bench-${randomBytes(4).toString("hex")}`;
    const add = sh("ip", ["netns", "add", name]);
    if (add.code !== 0) throw new Error(`ip netns add ${name} failed: ${add.out}`);
    const ns = new Namespace(name);
    activeNamespace = ns;
    const root = readlinkSync("/proc/self/ns/net");
    const inside = sh("ip", ["netns", "exec", name, "readlink", "/proc/self/ns/net"]);
    if (inside.code !== 0 || inside.out === "" || inside.out === root) {
      ns.delete();
      throw new Error(`network namespace ${name} is not separate from the root one (${inside.out})`);
    }
    return ns;
  }

  /** An Exec that runs every command inside the namespace (ip netns exec execs it directly). */
  exec(): Exec & { last?: ExecRequest } {
    const real = createRealExec();
    const wrapped: Exec & { last?: ExecRequest } = {
      run: (req: ExecRequest): Promise<ExecResult> => {
        const inner = { ...req, cmd: "ip", args: ["netns", "exec", this.name, req.cmd, ...req.args] };
        wrapped.last = inner;
        return real.run(inner);
      },
    };
    return wrapped;
  }

  /** Kills whatever still runs inside (only our own children can), then deletes the namespace. */
  delete(): void {
    if (this.deleted) return;
    this.deleted = true;
    const pids = sh("ip", ["netns", "pids", this.name]);
    for (const pid of pids.out.split(/\s+/).filter((p) => /^\d+$/.test(p))) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // already gone
      }
    }
    const del = sh("ip", ["netns", "del", this.name]);
    if (del.code !== 0) console.error(`bench-iptables: ip netns del ${this.name} failed: ${del.out}`);
    if (activeNamespace === this) activeNamespace = undefined;
  }
}

let activeNamespace: Namespace | undefined;
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
  const chains = new Set([...declared(c.fullPayload), ...declared(c.partialPayload)]);
  for (const m of c.partialPayload.matchAll(/^-X (\S+)/gm)) chains.delete(m[1]!);
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
    const partial = await timedRestore(b, c.partialPayload, opts.restoreTimeoutS);
    out.partial.push(partial);
    if (typeof partial !== "number") break;
    if (r === 0) await checkRestored(b, c);
  }
  await resetTables(b, opts.restoreTimeoutS);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Figures

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function ms(x: number): string {
  return x < 100 ? x.toFixed(1) : x.toFixed(0);
}

function size(payload: string): string {
  const bytes = Buffer.byteLength(payload);
  const text = bytes >= MB ? `${(bytes / MB).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(1)} kB`;
  return `${text} / ${count(payload, "\n")} lines`;
}

/** The median when every run succeeded, else the first failure ("timeout", ...). */
function restoreFigure(times: (number | string)[]): { text: string; ms?: number } {
  const failure = times.find((t): t is string => typeof t === "string");
  if (failure !== undefined) return { text: failure };
  const nums = times as number[];
  const m = median(nums);
  return { text: `${ms(m)} ms (median of ${nums.length})`, ms: m };
}

function peakRssBytes(): number {
  return process.resourceUsage().maxRSS * 1024; // kilobytes
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
  const partialMs = median(c.partialMs);
  const of = `(median of ${opts.runs})`;
  console.log(`${label}: full sync compute ${ms(fullMs)} ms ${of}, payload ${size(c.fullPayload)}`);
  console.log(
    `${label}: partial sync compute ${ms(partialMs)} ms ${of} after one endpoint change, payload ${size(c.partialPayload)}`,
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
  const verdict = (ok: boolean) => (ok ? "met" : "not met");
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
    const overhead: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      sh("ip", ["netns", "exec", ns.name, "true"]);
      overhead.push(performance.now() - t);
    }
    console.log(
      `restores run in network namespace ${ns.name} (ip netns exec costs ${ms(median(overhead))} ms, included; timeout ${opts.restoreTimeoutS} s)`,
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

function onSignal(signal: NodeJS.Signals, code: number): void {
  process.on(signal, () => {
    activeNamespace?.delete();
    console.error(`bench-iptables: ${signal}`);
    process.exit(code);
  });
}
onSignal("SIGINT", 130);
onSignal("SIGTERM", 143);
onSignal("SIGHUP", 129);
process.on("exit", () => activeNamespace?.delete());

try {
  await main();
} catch (err) {
  activeNamespace?.delete();
  console.error(`bench-iptables: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
}
