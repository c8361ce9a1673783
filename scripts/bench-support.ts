// What the in-process proxier benchmarks (bench-iptables, bench-nftables) share: their flags,
// the synthetic cluster (addresses from 198.18.0.0/15) fed through the real SyncController,
// the timing of one proxier sync, a network namespace of their own that is always deleted
// (on error and on signals too), and the way figures are printed.

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readlinkSync } from "node:fs";
import { defaultProxyConfig } from "../src/config/defaults.ts";
import type { ProxyConfig } from "../src/config/types.ts";
import { createRealExec } from "../src/exec/runner.ts";
import type { Exec, ExecRequest, ExecResult } from "../src/exec/types.ts";
import type { NftClient, NftListKind, NftTransactionLike } from "../src/host/nft/types.ts";
import type { EndpointSliceObject, ServiceObject } from "../src/k8s/objects.ts";
import { nullLogger } from "../src/log/logger.ts";
import { nftablesNodePortAddresses } from "../src/modes/nftables/build.ts";
import { NftablesProxier } from "../src/modes/nftables/proxier.ts";
import { createMetrics } from "../src/proxy/metrics/metrics.ts";
import type { Proxier, SyncInput } from "../src/proxy/proxier.ts";
import { SyncController } from "../src/proxy/sync-controller.ts";
import { FakeClock } from "../src/util/testing/fake-clock.ts";

const BASE = (198 << 24) + (18 << 16);
const RANGE = 2 ** 17;
export const ENDPOINT_OFFSET = 64 * 256;
export const NODE_NAME = "node-0";
export const NODE_OFFSET = RANGE - 2;
/** The size the targets are stated for. */
export const TARGET_SERVICES = 10_000;
export const MB = 1e6;

// ---------------------------------------------------------------------------------------------
// Flags

/** `--name=value` or `--name value`; undefined when absent. */
export function flag(name: string): string | undefined {
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === `--${name}`) return argv[i + 1] ?? "";
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return undefined;
}

export function positiveInts(name: string, fallback: number[]): number[] {
  const raw = flag(name);
  if (raw === undefined) return fallback;
  const values = raw.split(",").map((s) => Number(s.trim()));
  if (values.length === 0 || values.some((v) => !Number.isInteger(v) || v < 1)) {
    throw new Error(`--${name} needs positive integers (comma-separated)`);
  }
  return values;
}

export function positiveInt(name: string, fallback: number): number {
  const values = positiveInts(name, [fallback]);
  if (values.length !== 1) throw new Error(`--${name} needs one positive integer`);
  return values[0]!;
}

/** Refuses any `--flag` not in `known`. */
export function rejectUnknownFlags(known: readonly string[]): void {
  for (const a of process.argv.slice(2)) {
    const name = a.replace(/^--/, "").split("=")[0]!;
    if (a.startsWith("--") && !known.includes(name)) throw new Error(`unknown flag ${a}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Synthetic cluster

export function ip(offset: number): string {
  if (offset < 0 || offset >= RANGE) throw new Error("synthetic cluster too large for 198.18.0.0/15");
  const n = BASE + offset;
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

export function count(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

export function checkFits(services: number, perService: number, runs: number): void {
  if (services >= ENDPOINT_OFFSET || ENDPOINT_OFFSET + services * perService + runs >= NODE_OFFSET) {
    throw new Error(`${services} services x ${perService} endpoints do not fit in 198.18.0.0/15`);
  }
}

export function makeService(i: number): ServiceObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: `ns-${i % 50}`, name: `svc-${i}`, uid: `uid-${i}`, resourceVersion: "1" },
    spec: { type: "ClusterIP", clusterIP: ip(i + 1), ports: [{ name: "http", port: 80, protocol: "TCP" }] },
  };
}

/** Service i's slice; `replaced` swaps endpoint 0 for that address (one endpoint change). */
export function makeSlice(i: number, perService: number, replaced?: { address: string; version: number }) {
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

/** Every Service and slice of the synthetic cluster into a controller that is never started. */
export function feedCluster(controller: SyncController, services: number, perService: number): void {
  for (let i = 0; i < services; i++) controller.onServiceChange(undefined, makeService(i));
  for (let i = 0; i < services; i++) controller.onEndpointSliceChange(makeSlice(i, perService), false);
  controller.onServicesSynced();
  controller.onEndpointSlicesSynced();
}

/** An NftClient without a kernel: every transaction's text is recorded; the table lists empty. */
export class CapturingNft implements NftClient {
  readonly family = "ip";
  readonly table = "kube-proxy";
  payloads: string[] = [];

  async run(tx: NftTransactionLike): Promise<void> {
    if (!(tx.isEmpty?.() ?? tx.size === 0)) this.payloads.push(tx.render());
  }
  async check(_tx: NftTransactionLike): Promise<void> {}
  async list(_kind: NftListKind): Promise<string[]> {
    return [];
  }
  async version(): Promise<string> {
    return "1.0.6";
  }
  async listTables() {
    return [];
  }
  async listTable(): Promise<string | undefined> {
    return undefined;
  }
  async deleteTable() {
    return false;
  }
}

/**
 * The real IPv4 nftables proxier over a CapturingNft, configured as a node with `nodeIP` (on a
 * `prefix`-bit network) and pods in `clusterCIDR`. Time stands still for it: no hourly full
 * sync and no stale-chain deletion between the syncs a benchmark times, whatever its speed.
 */
export function capturingNftablesProxier(o: { nodeIP: string; prefix: number; clusterCIDR: string }): {
  proxier: NftablesProxier;
  nft: CapturingNft;
  config: ProxyConfig;
} {
  const config = defaultProxyConfig();
  config.clusterCIDRs = [o.clusterCIDR];
  const nft = new CapturingNft();
  const proxier = new NftablesProxier({
    nft,
    family: "IPv4",
    config,
    metrics: createMetrics(undefined, "nftables"),
    logger: nullLogger,
    nodeName: NODE_NAME,
    nodeIPs: { IPv4: o.nodeIP },
    nodePortAddresses: nftablesNodePortAddresses(config.nodePortAddresses),
    localAddresses: async () => ["127.0.0.1/8", `${o.nodeIP}/${o.prefix}`],
    clock: new FakeClock(1_000_000),
  });
  return { proxier, nft, config };
}

// ---------------------------------------------------------------------------------------------
// Timing

/** Times only the proxier's sync, as the SyncController calls it. */
export class TimedProxier implements Proxier {
  lastMs = 0;
  constructor(private readonly inner: Proxier) {}
  async sync(input: SyncInput): Promise<void> {
    const t = performance.now();
    await this.inner.sync(input);
    this.lastMs = performance.now() - t;
  }
}

/** Compute times of full syncs and of the syncs after one endpoint change, and the last pair's payloads. */
export interface SyncPairs {
  fullMs: number[];
  changeMs: number[];
  fullPayload: string;
  changePayload: string;
}

export interface SyncPairOptions {
  /** The proxier under test, its writes captured rather than made. */
  readonly proxier: Proxier & { requestFullSync(): void };
  readonly syncPeriodMs: number;
  readonly services: number;
  readonly perService: number;
  readonly runs: number;
  /** The payloads captured since the last call (exactly one per sync is expected). */
  takePayloads(): string[];
  /** Called after each sync (e.g. to let a capturing client settle its state). */
  afterSync?(): void;
  /** Sanity checks: a full sync wrote everything; the change's sync was partial and carries `address`. */
  isFull(payload: string): boolean;
  isPartial(payload: string, address: string): boolean;
}

/**
 * The synthetic cluster through a SyncController (never started: syncs happen only on
 * syncNow()) into the proxier: one cold full sync, then `runs` pairs of a full sync and the
 * sync after one endpoint of one Service changed.
 */
export async function benchSyncPairs(o: SyncPairOptions): Promise<SyncPairs> {
  const timed = new TimedProxier(o.proxier);
  const controller = new SyncController({
    nodeName: NODE_NAME,
    proxier: timed,
    minSyncPeriodMs: 1000,
    syncPeriodMs: o.syncPeriodMs,
  });
  feedCluster(controller, o.services, o.perService);
  const sync = async (): Promise<{ ms: number; payload: string }> => {
    o.takePayloads();
    collectGarbage();
    await controller.syncNow();
    const payloads = o.takePayloads();
    if (payloads.length !== 1) throw new Error("sanity check failed: a sync did not write exactly once");
    o.afterSync?.();
    return { ms: timed.lastMs, payload: payloads[0]! };
  };
  await sync(); // the first sync after start (cold code paths), not counted
  const changed = Math.floor(o.services / 2);
  const result: SyncPairs = { fullMs: [], changeMs: [], fullPayload: "", changePayload: "" };
  for (let r = 0; r < o.runs; r++) {
    o.proxier.requestFullSync();
    const full = await sync();
    const address = ip(ENDPOINT_OFFSET + o.services * o.perService + r);
    controller.onEndpointSliceChange(makeSlice(changed, o.perService, { address, version: r + 1 }), false);
    const change = await sync();
    if (!o.isPartial(change.payload, address))
      throw new Error("sanity check failed: the sync after one endpoint change was not a partial sync");
    if (!o.isFull(full.payload)) throw new Error("sanity check failed: a full sync did not write everything");
    result.fullMs.push(full.ms);
    result.changeMs.push(change.ms);
    // Only the last run's pair is kept: an earlier one held would add to the peak RSS.
    if (r === o.runs - 1) {
      result.fullPayload = full.payload;
      result.changePayload = change.payload;
    }
  }
  return result;
}

// A full collection before each timed sync, so one sync does not pay for the last one's garbage
// (node exposes gc with --expose-gc; Bun through its global object).
export function collectGarbage(): void {
  const g = globalThis as { gc?: () => void; Bun?: { gc(force: boolean): void } };
  if (g.gc) g.gc();
  else g.Bun?.gc(true);
}

// ---------------------------------------------------------------------------------------------
// A network namespace of our own

export function sh(cmd: string, args: string[], stdin?: string): { code: number; out: string } {
  const res = spawnSync(cmd, args, {
    encoding: "utf8",
    env: { ...process.env, LC_ALL: "C" },
    maxBuffer: 1 << 30,
    ...(stdin !== undefined ? { input: stdin } : {}),
  });
  return { code: res.status ?? 1, out: `${res.stdout ?? ""}${res.stderr ?? ""}`.trim() };
}

let benchName = "bench";
const activeNamespaces = new Set<Namespace>();

export class Namespace {
  private deleted = false;
  private constructor(readonly name: string) {}

  /** Creates kpts-bench-<random>; refuses to go on unless it is a network namespace of its own. */
  static create(): Namespace {
    const name = `kpts-bench-${randomBytes(4).toString("hex")}`;
    const add = sh("ip", ["netns", "add", name]);
    if (add.code !== 0) throw new Error(`ip netns add ${name} failed: ${add.out}`);
    const ns = new Namespace(name);
    activeNamespaces.add(ns);
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
    if (del.code !== 0) console.error(`${benchName}: ip netns del ${this.name} failed: ${del.out}`);
    activeNamespaces.delete(this);
  }
}

function deleteNamespaces(): void {
  for (const ns of [...activeNamespaces]) ns.delete();
}

/** ms of `ip netns exec NS true` (included in every timing taken through the namespace). */
export function netnsExecOverheadMs(ns: Namespace): number {
  const overhead: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    sh("ip", ["netns", "exec", ns.name, "true"]);
    overhead.push(performance.now() - t);
  }
  return median(overhead);
}

/**
 * Runs `main` with every namespace made by Namespace.create deleted at the end, on error, on
 * SIGINT/SIGTERM/SIGHUP and at exit; an error is printed and exits with 2.
 */
export async function runBench(name: string, main: () => Promise<void>): Promise<void> {
  benchName = name;
  const onSignal = (signal: NodeJS.Signals, code: number) =>
    process.on(signal, () => {
      deleteNamespaces();
      console.error(`${name}: ${signal}`);
      process.exit(code);
    });
  onSignal("SIGINT", 130);
  onSignal("SIGTERM", 143);
  onSignal("SIGHUP", 129);
  process.on("exit", deleteNamespaces);
  try {
    await main();
  } catch (err) {
    deleteNamespaces();
    console.error(`${name}: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(2);
  } finally {
    deleteNamespaces();
  }
}

// ---------------------------------------------------------------------------------------------
// Figures

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function ms(x: number): string {
  return x < 100 ? x.toFixed(1) : x.toFixed(0);
}

export function size(payload: string): string {
  const bytes = Buffer.byteLength(payload);
  const text = bytes >= MB ? `${(bytes / MB).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(1)} kB`;
  return `${text} / ${count(payload, "\n")} lines`;
}

export function peakRssBytes(): number {
  return process.resourceUsage().maxRSS * 1024; // kilobytes
}

export const verdict = (ok: boolean): string => (ok ? "met" : "not met");
