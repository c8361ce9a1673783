// Benchmark of the real run (issue "Scale", item 1): the fake API server serves a synthetic
// cluster over list/watch, the built binary runs in a fresh network namespace, in iptables mode
// (legacy backend, chosen as a node would: the kubelet's KUBE-IPTABLES-HINT chain in the legacy
// mangle table), with --mode=nftables in nftables mode, or with --mode=ipvs in ipvs mode (its
// few iptables rules on the legacy backend too; needs IPVS: run it in scripts/kernel-vm), and
// this prints medians of:
//   - start -> first sync in the kernel (the binary's own "SyncProxyRules complete" log line,
//     read from its stderr: nothing here takes the xtables lock or scrapes while it works), and
//     where that time went (listed, sync started, restore input computed, restored);
//   - one endpoint added over watch -> traffic to it flows (TCP connects from the node namespace,
//     refused until the rule is in);
//   - peak RSS (VmHWM) of the binary, after the first sync and the change, and again after a full
//     resync caused by a Node label change (how long that takes is printed too);
//   - the kernel's floors, measured in the same run: iptables-legacy-restore of the same tables
//     into an empty namespace, and one small --noflush restore on top of them (nftables: nft -f
//     of the binary's own full-sync payload, made here from the same objects by the same proxier
//     code, and of its tables as listed, into an empty namespace; one small transaction in the
//     node's own table, median of 3; ipvs: `ipset save`, `ipvsadm -S -n`, kube-ipvs0's addresses
//     and the iptables tables as the binary left them, restored by ipset, ipvsadm, ip -batch and
//     iptables-legacy-restore into an empty namespace, each timed, from one process inside it;
//     the change: one real server, one set member and the iptables rules on top, median of 3).
// In ipvs mode the phases come from the binary's -v=2 "ipvs sync done" line (read, plan and each
// tool's write), and the full resync is the full reconcile a Node label change causes.
// scripts/bench-nftables runs benchApi() below in nftables mode.
//
//   bash scripts/bench-api [--mode=iptables|nftables|ipvs|iptables,nftables] [--services=1000,10000]
//                          [--endpoints=10] [--runs=3] [--nft=image|suite:NAME|PATH] [--rss-trace]
//                          [--v=N] [--log=FILE] [--changes=N] [--change-gap-ms=MS]
//   scripts/kernel-vm --timeout 5400 --mem 6144 -- bash -c "modprobe nf_conntrack; modprobe ip_vs;
//     node_modules/.bin/bun scripts/bench-api.ts --mode=ipvs --services=1000,10000 --runs=1"
//
// Several modes (comma-separated) are run interleaved, run by run, so their medians come from the
// same stretch of machine time ("nftables' first sync no slower than iptables-legacy's in the same
// run"). --nft picks the nft program of the binary and of the floors: PATH, "image" for the one
// the image ships, or suite:NAME for a Debian suite's (e.g. suite:trixie for nft 1.1.3; see
// test/support/image-nft.ts); the default is the host's.
// --rss-trace also prints the binary's RSS over time (sampled every 100 ms) and its RSS once the
// change is in (the steady state); --v sets the binary's -v (2, the default, is the least: the
// first sync is read from its log; at 2 it also logs its own memory figures after the first
// sync); --log writes the binary's stderr to FILE. --changes=N (0, the default, is none) paces N
// more endpoint changes after the first one, each --change-gap-ms (3000) after the last one's
// traffic flowed and each waited to traffic, as an outside harness does: the peak RSS is then
// printed after the first sync and after the paced changes separately (periodic work, such as
// the iptables mode's stale-chain sweep once per sync period, falls into such a window).
//
// Needs root, iproute2, iptables (legacy), nfacct (nftables: nft; ipvs: ipvsadm, ipset and a
// kernel with IPVS). Only namespaces it creates; all deleted. In the guest its waits are
// stretched 4x, and ipvs mode's --ipvs-sync-period by timeScale() (see ipvsExtraArgs).

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRealExec } from "../src/exec/runner.ts";
import { createNftClient } from "../src/host/nft/client.ts";
import { NftTransaction } from "../src/host/nft/transaction.ts";
import type { EndpointSliceObject, NodeObject, ServiceObject } from "../src/k8s/objects.ts";
import { overNetlink } from "../src/modes/nftables/build.ts";
import { SyncController } from "../src/proxy/sync-controller.ts";
import { tempDir } from "../test/support/binary.ts";
import { startNodeApi } from "../test/support/e2e-apiserver.ts";
import { nodeObject } from "../test/support/e2e-cluster.ts";
import { httpGet, metricValue, parseMetrics } from "../test/support/e2e-http.ts";
import { kubeProxyBinary, NODE_NAME, startKubeProxy } from "../test/support/e2e-kubeproxy.ts";
import { startServer } from "../test/support/e2e-traffic.ts";
import type { KObject } from "../test/support/fake-apiserver.ts";
import { imageNftProgram, pathWithNft, suiteNftProgram } from "../test/support/image-nft.ts";
import { inKernelVm, timeScale } from "../test/support/kernel-vm.ts";
import { ADDR, createTopology, type Topology } from "../test/support/netns.ts";
import { netfilterSocketIn } from "../test/support/netns-enter.ts";
import { capturingNftablesProxier, median, Namespace, runBench } from "./bench-support.ts";

export type BenchMode = "iptables" | "nftables" | "ipvs";

export interface ApiBenchOptions {
  /** The mode of one run; parseOptions sets it to the first of `modes`. */
  mode: BenchMode;
  /** Modes run interleaved (one run of each per round). */
  modes?: BenchMode[];
  /** "image", a path, or undefined for the host's nft. */
  nft?: string;
  services: number[];
  endpoints: number;
  runs: number;
  rssTrace: boolean;
  verbosity: number;
  log: string | undefined;
  /** Endpoint changes paced after the first one (unset or 0: none). */
  changes?: number;
  /** Between two paced changes (3000 unless told). */
  changeGapMs?: number;
}

function parseOptions(argv: readonly string[]): ApiBenchOptions {
  const o: ApiBenchOptions = {
    mode: "iptables",
    services: [1000, 10000],
    endpoints: 10,
    runs: 3,
    rssTrace: false,
    verbosity: 2,
    log: undefined,
    changes: 0,
    changeGapMs: 3000,
  };
  for (const a of argv) {
    const [k, v = ""] = a.split("=", 2);
    if (k === "--mode") {
      const modes = v.split(",");
      if (!modes.every((m): m is BenchMode => m === "iptables" || m === "nftables" || m === "ipvs"))
        throw new Error("--mode: iptables, nftables or ipvs, or several comma-separated");
      o.modes = [...new Set(modes)];
      o.mode = o.modes[0] ?? "iptables";
    } else if (k === "--nft") {
      if (v === "") throw new Error("--nft: image, suite:NAME or the path of an nft program");
      o.nft = v;
    } else if (k === "--services") o.services = v.split(",").map(Number);
    else if (k === "--endpoints") o.endpoints = Number(v);
    else if (k === "--runs") o.runs = Number(v);
    else if (k === "--rss-trace") o.rssTrace = true;
    else if (k === "--v") o.verbosity = Number(v);
    else if (k === "--log") o.log = v;
    else if (k === "--changes") o.changes = Number(v);
    else if (k === "--change-gap-ms") o.changeGapMs = Number(v);
    else
      throw new Error(
        `unknown option ${a} (--mode=iptables|nftables|ipvs[,...] --services=1000,10000 --endpoints=10 --runs=3 --nft=image|suite:NAME|PATH --rss-trace --v=N --log=FILE --changes=N --change-gap-ms=MS)`,
      );
  }
  if (o.services.some((n) => !(Number.isInteger(n) && n > 0 && n <= MAX_SERVICES)))
    throw new Error(`--services: 1..${MAX_SERVICES} each`);
  if (!(Number.isInteger(o.endpoints) && o.endpoints > 0 && o.endpoints <= 100))
    throw new Error("--endpoints: 1..100");
  if (o.services.some((n) => n * o.endpoints > MAX_ENDPOINTS_TOTAL))
    throw new Error(`--services x --endpoints: at most ${MAX_ENDPOINTS_TOTAL} endpoints`);
  if (!(o.runs > 0 && o.runs <= 10)) throw new Error("--runs: 1..10");
  // The first sync is read from a -v=2 log line.
  if (!(Number.isInteger(o.verbosity) && o.verbosity >= 2 && o.verbosity <= 10))
    throw new Error("--v: 2..10");
  if (o.log === "") throw new Error("--log: a file name");
  if (!(Number.isInteger(o.changes) && o.changes! >= 0 && o.changes! <= MAX_PACED))
    throw new Error(`--changes: 0..${MAX_PACED}`);
  if (!(Number.isInteger(o.changeGapMs) && o.changeGapMs! >= 0 && o.changeGapMs! <= 600_000))
    throw new Error("--change-gap-ms: 0..600000");
  return o;
}

/**
 * The xtables lock guards one host's tables, but its file is shared by every namespace: a lock
 * file of the bench's own keeps anything else on the machine (another bench, a test) from
 * stalling the binary or the floors, and the bench from stalling them.
 */
const LOCK_ENV = { XTABLES_LOCKFILE: `/run/kpts-bench-api-${process.pid}.lock` };

/** Dotted IPv4 of a 32-bit number. */
const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
/**
 * Never-routed ranges, each one axis, so no address is two things: ClusterIPs from 198.18/16 and
 * externalIPs from 198.19/16 (RFC 2544, benchmarking), endpoints from 100.64/10 (RFC 6598,
 * shared address space: 4 million, enough for upstream's 5,000 x 50 and 45,000 x 1 clusters).
 * Only the probe's pod and VIP (documentation ranges) ever carry traffic.
 */
const clusterIP = (i: number) => dotted(((198 << 24) >>> 0) + (18 << 16) + i + 1);
const externalIP = (i: number) => dotted(((198 << 24) >>> 0) + (19 << 16) + i + 1);
const endpointIP = (k: number) => dotted(((100 << 24) >>> 0) + (64 << 16) + k + 1);
/** Upper bounds that keep every range above within its size. */
const MAX_SERVICES = 60_000;
const MAX_ENDPOINTS_TOTAL = 4_000_000;
const PROBE_POD = { name: "p1", ip: "203.0.113.11" };
const PROBE_VIP = "198.51.100.200";
/** The paced changes' Services: VIPs 198.51.100.201 on, each refused until its change is in. */
const MAX_PACED = 50;
const pacedVip = (k: number) => `198.51.100.${201 + k}`;

/** Service i: mostly ClusterIP, every 50th a NodePort, every 100th a LoadBalancer (ETP Local). */
function syntheticService(i: number, endpoints: number): { service: KObject; slice: KObject } {
  const name = `svc-${i}`;
  const type = i % 100 === 0 ? "LoadBalancer" : i % 50 === 0 ? "NodePort" : "ClusterIP";
  const port: Record<string, unknown> = { name: "http", port: 80, protocol: "TCP", targetPort: 8080 };
  if (type !== "ClusterIP") port.nodePort = 30000 + (i % 2700);
  const spec: Record<string, unknown> = {
    type,
    clusterIP: clusterIP(i),
    clusterIPs: [clusterIP(i)],
    ipFamilies: ["IPv4"],
    ipFamilyPolicy: "SingleStack",
    ports: [port],
  };
  if (type === "LoadBalancer") spec.externalTrafficPolicy = "Local";
  if (i % 200 === 1) spec.externalIPs = [externalIP(i)];
  const eps = Array.from({ length: endpoints }, (_, j) => ({
    addresses: [endpointIP(i * endpoints + j)],
    conditions: { ready: true, serving: true, terminating: false },
    nodeName: j === 0 ? NODE_NAME : "node-b",
  }));
  return {
    service: { apiVersion: "v1", kind: "Service", metadata: { name, namespace: "default" }, spec },
    slice: {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: `${name}-1`, namespace: "default", labels: { "kubernetes.io/service-name": name } },
      addressType: "IPv4",
      endpoints: eps,
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    },
  };
}

function must(topo: Topology, argv: string[], stdin?: string) {
  return topo.run("node", argv, {
    timeoutMs: 600_000,
    env: LOCK_ENV,
    ...(stdin !== undefined ? { stdin } : {}),
  });
}

function statusKiB(pid: number, field: "VmHWM" | "VmRSS"): number | undefined {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

const hwmKiB = (pid: number) => statusKiB(pid, "VmHWM");

/** VmRSS every 100 ms from `start`: [ms since start, MiB] pairs, until stopped. */
function traceRss(pid: number, start: number): { stop(): [number, number][] } {
  const samples: [number, number][] = [];
  const timer = setInterval(() => {
    const kib = statusKiB(pid, "VmRSS");
    if (kib !== undefined) samples.push([Date.now() - start, kib / 1024]);
  }, 100);
  return {
    stop() {
      clearInterval(timer);
      return samples;
    },
  };
}

/** The trace, thinned to one line per second ("12s 300 MiB": the highest sample in second 12). */
function formatTrace(samples: readonly [number, number][]): string {
  const perSecond = new Map<number, number>();
  for (const [t, mib] of samples) {
    const s = Math.floor(t / 1000);
    perSecond.set(s, Math.max(perSecond.get(s) ?? 0, mib));
  }
  return [...perSecond].map(([s, mib]) => `    ${s}s ${Math.round(mib)} MiB`).join("\n");
}

/** Time of `argv` (stdin fed) in a fresh namespace of its own, deleted after. */
function timedInFreshNs(steps: { argv: string[]; stdin?: string; timed?: boolean }[]): number {
  // Deleted below, and on errors and signals by runBench.
  const ns = Namespace.create();
  try {
    let ms = 0;
    for (const s of steps) {
      const t = performance.now();
      const r = spawnSync("ip", ["netns", "exec", ns.name, ...s.argv], {
        input: s.stdin ?? "",
        env: { ...process.env, ...LOCK_ENV },
        timeout: 900_000,
        maxBuffer: 1 << 30,
      });
      if (r.status !== 0) throw new Error(`${s.argv.join(" ")}: ${r.stderr?.toString().slice(0, 500)}`);
      if (s.timed) ms += performance.now() - t;
    }
    return ms;
  } finally {
    ns.delete();
  }
}

/** Where the first sync's time went, from the binary's own -v=2 log (klog times, UTC). */
interface Phases {
  /** Process start -> both lists delivered (startup, API lists, ingest). */
  listedMs: number;
  /** -> the IPv4 proxier starts its sync (tracker checkout, runner). */
  syncStartMs: number;
  /** -> the restore input is computed (jump rules, iptables-save, rule computation). */
  computedMs: number;
  /** -> the IPv4 restore is done. */
  restoredMs: number;
}

/** ms since UTC midnight of a klog header "I1124 21:32:26.301000". */
function klogMs(line: string): number | undefined {
  const m = /^[IWE]\d{4} (\d\d):(\d\d):(\d\d)\.(\d{3})/.exec(line);
  return m ? ((Number(m[1]) * 60 + Number(m[2])) * 60 + Number(m[3])) * 1000 + Number(m[4]) : undefined;
}

function msOfDay(epochMs: number): number {
  const d = new Date(epochMs);
  return (
    ((d.getUTCHours() * 60 + d.getUTCMinutes()) * 60 + d.getUTCSeconds()) * 1000 + d.getUTCMilliseconds()
  );
}

function phasesFrom(log: string, startedAt: number, mode: BenchMode): Phases | undefined {
  const lines = log.split("\n");
  const at = (re: RegExp) => {
    const line = lines.find((l) => re.test(l));
    return line ? klogMs(line) : undefined;
  };
  const listed = at(/"Services and EndpointSlices listed; syncing"/);
  // The IPv4 sync's own lines (nftables mode syncs IPv6 first).
  const v4 = lines.findIndex((l) => l.includes(`"Syncing ${mode} rules" ipFamily="IPv4" fullSync=true`));
  if (v4 < 0) return undefined;
  const after = lines.slice(v4);
  const syncStart = klogMs(lines[v4]!);
  const computedLine = after.find((l) => l.includes(`"Reloading service ${mode} data"`));
  const restoredLine = after.find((l) => l.includes('"SyncProxyRules complete"'));
  const computed = computedLine ? klogMs(computedLine) : undefined;
  const restored = restoredLine ? klogMs(restoredLine) : undefined;
  if ([listed, syncStart, computed, restored].some((t) => t === undefined)) return undefined;
  const d = new Date(startedAt);
  const start =
    ((d.getUTCHours() * 60 + d.getUTCMinutes()) * 60 + d.getUTCSeconds()) * 1000 + d.getUTCMilliseconds();
  return {
    listedMs: listed! - start,
    syncStartMs: syncStart! - listed!,
    computedMs: computed! - syncStart!,
    restoredMs: restored! - computed!,
  };
}

/** The change's sync, from the same log: what it waited for, computed, restored. */
interface ChangePhases {
  /** The change made on the API server -> the first sync that starts after it. */
  syncStartMs: number;
  computedMs: number;
  restoredMs: number;
}

function changePhasesFrom(log: string, changedAt: number, mode: BenchMode): ChangePhases | undefined {
  const changed = msOfDay(changedAt);
  const lines = log.split("\n").filter((l) => (klogMs(l) ?? -1) >= changed);
  const start = lines.findIndex((l) => l.includes(`"Syncing ${mode} rules" ipFamily="IPv4"`));
  if (start < 0) return undefined;
  const after = lines.slice(start);
  const computed = after.find((l) => l.includes(`"Reloading service ${mode} data"`));
  const restored = after.find((l) => l.includes('"SyncProxyRules complete"'));
  if (!computed || !restored) return undefined;
  const t0 = klogMs(lines[start]!)!;
  return {
    syncStartMs: t0 - changed,
    computedMs: klogMs(computed)! - t0,
    restoredMs: klogMs(restored)! - klogMs(computed)!,
  };
}

/** A Node label change at `since` -> the end of the full sync it causes, from the binary's log. */
async function fullResyncMs(kp: ReturnType<typeof startKubeProxy>, since: number, mode: BenchMode) {
  const from = msOfDay(since);
  for (;;) {
    if (kp.exitCode() !== undefined) throw new Error(`kube-proxy-ts exited:\n${kp.stderr().slice(-2000)}`);
    if (Date.now() - since > 900_000) throw new Error("no full resync within 900 s of the Node label change");
    const lines = kp
      .stderr()
      .split("\n")
      .filter((l) => (klogMs(l) ?? -1) >= from);
    const start = lines.findIndex((l) => l.includes(`"Syncing ${mode} rules" ipFamily="IPv4" fullSync=true`));
    const done =
      start < 0 ? undefined : lines.slice(start).find((l) => l.includes('"SyncProxyRules complete"'));
    if (done) return klogMs(done)! - from;
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface RunResult {
  phases: Phases | undefined;
  changePhases: ChangePhases | undefined;
  /** Process start -> first sync done (start-up and the API lists included). */
  firstSyncMs: number;
  /** The first (IPv4) sync alone: its start -> done. */
  firstSyncOwnMs: number;
  changeMs: number;
  /** VmHWM once the first sync is done (before any change). */
  firstSyncPeakRssMiB: number;
  /** VmHWM after the first sync and the change. */
  peakRssMiB: number;
  /** Each paced change's ms to traffic (none without --changes). */
  pacedMs: number[];
  /** VmHWM after the paced changes too (as peakRssMiB without --changes). */
  pacedPeakRssMiB: number;
  /** VmRSS once the change is in. */
  steadyRssMiB: number;
  /** A Node label change -> its full sync done. */
  resyncMs: number;
  /** VmHWM once that full resync is done too. */
  resyncPeakRssMiB: number;
  fullFloorMs: number;
  changeFloorMs: number;
  /** nftables: the floor of the table as `nft list` prints it (NaN in iptables mode). */
  listedFloorMs: number;
  /** nftables: the same small change sent over netlink, as partial syncs are (NaN otherwise). */
  netlinkChangeFloorMs: number;
  /** ipvs mode: the floors by tool, and the binary's own steps of the first sync and the change. */
  ipvs?: { floors: IpvsFloors; firstSteps?: IpvsSteps; changeSteps?: IpvsSteps };
}

async function scrapeLastSync(topo: Topology): Promise<number | undefined> {
  const r = await httpGet(topo, "node", "http://127.0.0.1:10249/metrics", { timeoutMs: 5000 });
  if (r.status !== 200 || !r.body) return undefined;
  // 0 until the first successful sync sets it.
  const v = metricValue(parseMetrics(r.body), "kubeproxy_sync_proxy_rules_last_timestamp_seconds");
  return v !== undefined && v > 0 ? v : undefined;
}

interface Floors {
  fullFloorMs: number;
  changeFloorMs: number;
  listedFloorMs?: number;
  netlinkChangeFloorMs?: number;
}

/** iptables-legacy-restore of the node's tables into an empty namespace; one small restore on top. */
async function iptablesFloors(topo: Topology): Promise<Floors> {
  const nat = (await must(topo, ["iptables-legacy-save", "-t", "nat"])).stdout;
  const filter = (await must(topo, ["iptables-legacy-save", "-t", "filter"])).stdout;
  const counters = ["ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts"];
  const setup = counters.map((c) => ({ argv: ["nfacct", "add", c] }));
  // In nat, the big table: a legacy --noflush restore rewrites the whole table it touches.
  const small = "*nat\n:KUBE-BENCH-CHANGE - [0:0]\n-A KUBE-BENCH-CHANGE -j RETURN\nCOMMIT\n";
  const restore = ["iptables-legacy-restore", "-w", "5", "--noflush", "--counters"];
  const fullFloorMs = timedInFreshNs([...setup, { argv: restore, stdin: filter + nat, timed: true }]);
  const changeFloorMs = timedInFreshNs([
    ...setup,
    { argv: restore, stdin: filter + nat },
    { argv: restore, stdin: small, timed: true },
  ]);
  return { fullFloorMs, changeFloorMs };
}

/**
 * The binary's full-sync transaction as its nftables proxier writes it, made here from the API
 * server's objects through the same SyncController and proxier code (only nft is left out): the
 * payload whose `nft -f` is the floor of the binary's own first sync.
 */
async function ownNftPayload(server: {
  list(kind: "Service" | "EndpointSlice"): KObject[];
  get(kind: "Node", ns: undefined, name: string): KObject | undefined;
}): Promise<string> {
  const { proxier, nft } = capturingNftablesProxier({
    nodeIP: ADDR.node,
    prefix: 26,
    clusterCIDR: "203.0.113.0/24",
  });
  const controller = new SyncController({
    nodeName: NODE_NAME,
    proxier,
    minSyncPeriodMs: 1000,
    syncPeriodMs: 30_000,
  });
  for (const svc of server.list("Service")) controller.onServiceChange(undefined, svc as ServiceObject);
  for (const slice of server.list("EndpointSlice"))
    controller.onEndpointSliceChange(slice as EndpointSliceObject, false);
  controller.onNodeChange(server.get("Node", undefined, NODE_NAME) as NodeObject | undefined);
  controller.onServicesSynced();
  controller.onEndpointSlicesSynced();
  await controller.syncNow();
  const payload = nft.payloads[0];
  if (!payload?.startsWith("add table ip kube-proxy"))
    throw new Error("no full nftables payload was computed");
  return payload;
}

/**
 * The floors: the binary's own full-sync payload (see ownNftPayload), and the table it wrote as
 * nft lists it, each into an empty namespace; one small change on top of the listed table.
 */
async function nftFloors(topo: Topology, server: Parameters<typeof ownNftPayload>[0]): Promise<Floors> {
  let tables = "";
  for (const family of ["ip", "ip6"]) {
    const listed = await topo.run("node", ["nft", "-s", "list", "table", family, "kube-proxy"], {
      timeoutMs: 600_000,
    });
    if (listed.code === 0) tables += listed.stdout;
  }
  if (!tables.includes("table ip kube-proxy"))
    throw new Error("nft lists no table ip kube-proxy on the node");
  // What one new endpoint of a new Service adds in the 1.37 layout: its service chain with the
  // DNAT, one map element.
  const t = "ip kube-proxy";
  const small = [
    `add chain ${t} service-bench`,
    `add rule ${t} service-bench meta l4proto tcp dnat to 198.19.255.202:8080`,
    `add element ${t} service-ips { 198.19.255.201 . tcp . 80 : goto service-bench }`,
    "",
  ].join("\n");
  const nft = ["nft", "-f", "-"];
  const listedFloorMs = timedInFreshNs([{ argv: nft, stdin: tables, timed: true }]);
  // The change's floor in the node's own table, as the binary left it (its ip6 table too): the
  // same kernel state the change met. Median of 3, each one's objects removed after it.
  const changeTimes: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    const r = await must(topo, nft, small.replaceAll("-bench", `-bench${i}`));
    changeTimes.push(performance.now() - t);
    if (r.code !== 0) throw new Error(`change floor: ${r.stderr.slice(0, 500)}`);
    const undo = [
      `delete element ip kube-proxy service-ips { 198.19.255.201 . tcp . 80 }`,
      `flush chain ip kube-proxy service-bench${i}`,
      `delete chain ip kube-proxy service-bench${i}`,
      "",
    ].join("\n");
    const u = await must(topo, nft, undo);
    if (u.code !== 0) throw new Error(`change floor cleanup: ${u.stderr.slice(0, 500)}`);
  }
  const changeFloorMs = median(changeTimes);
  const netlinkChangeFloorMs = await netlinkChangeFloor(topo);
  const fullFloorMs = timedInFreshNs([{ argv: nft, stdin: await ownNftPayload(server), timed: true }]);
  return { fullFloorMs, changeFloorMs, listedFloorMs, netlinkChangeFloorMs };
}

/**
 * The same small change as one netlink batch into the node's table, as the binary sends a
 * partial sync (its client, a socket opened in the node's namespace): what is left is the
 * kernel's own commit. Median of 3, each one's objects removed after it.
 */
async function netlinkChangeFloor(topo: Topology): Promise<number> {
  const socket = await netfilterSocketIn(topo.nsName("node"));
  try {
    const plain = createNftClient({ exec: createRealExec(), family: "ip", table: "kube-proxy" });
    const client = overNetlink(plain, "IPv4", socket);
    const key = ["198.19.255.201", "tcp", "80"];
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const chain = `service-bench-nl${i}`;
      const tx = new NftTransaction("ip", "kube-proxy", { keepOperations: true })
        .add({ kind: "chain", name: chain })
        .add({ kind: "rule", chain, rule: "meta l4proto tcp dnat to 198.19.255.202:8080" })
        .add({ kind: "element", container: "service-ips", key, value: [`goto ${chain}`] });
      const t = performance.now();
      await client.run(tx);
      times.push(performance.now() - t);
      await client.run(
        new NftTransaction("ip", "kube-proxy", { keepOperations: true })
          .delete({ kind: "element", container: "service-ips", key })
          .flush({ kind: "chain", name: chain })
          .delete({ kind: "chain", name: chain }),
      );
    }
    if (client.sent.nft !== 0) throw new Error("netlink change floor: a batch went to nft");
    return median(times);
  } finally {
    socket.close();
  }
}

/** The paced changes' Services, without endpoints: created before the binary starts. */
function createPacedServices(server: { create(kind: "Service", obj: KObject): unknown }, n: number): void {
  for (let k = 0; k < n; k++) {
    server.create("Service", {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: `paced-${k}`, namespace: "default" },
      spec: {
        type: "ClusterIP",
        clusterIP: pacedVip(k),
        clusterIPs: [pacedVip(k)],
        ports: [{ name: "http", port: 80, protocol: "TCP", targetPort: 8080 }],
      },
    });
  }
}

/** ms from `since` until a new TCP connect to vip:80 from the node succeeds (tried every 10 ms). */
async function trafficAfter(topo: Topology, vip: string, since: number): Promise<number> {
  const probe = `const net=require("net");
const once=()=>new Promise((res)=>{const s=net.connect({host:"${vip}",port:80});
const t=setTimeout(()=>{s.destroy();res(false)},300);
s.on("connect",()=>{clearTimeout(t);s.destroy();res(true)});s.on("error",()=>{clearTimeout(t);res(false)})});
for(let i=0;i<30000;i++){if(await once()){console.log(Date.now());process.exit(0)}
if(Date.now()-${since}>300000)break;await new Promise((r)=>setTimeout(r,10))}
process.exit(1)`;
  const flowed = await topo.run("node", [process.execPath, "-e", probe], { timeoutMs: 320_000 });
  if (flowed.code !== 0) throw new Error(`traffic never flowed to ${vip}: ${flowed.stderr}`);
  return Number(flowed.stdout.trim()) - since;
}

/**
 * The paced changes: the k-th gives paced-k its endpoint (the probe pod), gapMs after the last
 * one's traffic flowed, and waits for its own traffic. Returns each change's ms to traffic.
 */
async function pacedChanges(
  topo: Topology,
  server: { create(kind: "EndpointSlice", obj: KObject): unknown },
  n: number,
  gapMs: number,
): Promise<number[]> {
  const times: number[] = [];
  for (let k = 0; k < n; k++) {
    await new Promise((r) => setTimeout(r, gapMs));
    const changed = Date.now();
    server.create("EndpointSlice", {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: `paced-${k}-1`,
        namespace: "default",
        labels: { "kubernetes.io/service-name": `paced-${k}` },
      },
      addressType: "IPv4",
      endpoints: [{ addresses: [PROBE_POD.ip], conditions: { ready: true }, nodeName: NODE_NAME }],
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    });
    times.push(await trafficAfter(topo, pacedVip(k), changed));
  }
  return times;
}

// ---------------------------------------------------------------------------------------------
// ipvs mode (run it in scripts/kernel-vm: the host kernel may have no IPVS)

/**
 * Bounds on the waits for the first sync, the change and the resync: a guest with an emulated
 * CPU (scripts/kernel-vm without KVM) runs 10-50x slower.
 */
const WAIT_SCALE = inKernelVm() ? 4 : 1;

/**
 * ipvs mode compares the whole kernel at least once per --ipvs-sync-period (30 s); in the
 * guest that period is stretched as its waits are (timeScale: 20x without KVM), so that a
 * sync is due for it as often, in guest time, as on a real node.
 */
function ipvsExtraArgs(mode: BenchMode): string[] {
  return mode === "ipvs" && timeScale() > 1 ? [`--ipvs-sync-period=${30 * timeScale()}s`] : [];
}

/** The steps of one ipvs sync, from the binary's -v=2 "ipvs sync done" line (ms each). */
const IPVS_STEPS = ["baseline", "read", "plan", "ipset", "ipvs", "bind", "iptables"] as const;
type IpvsSteps = Record<(typeof IPVS_STEPS)[number], number>;

interface IpvsSync {
  /** klog time (ms of the UTC day) the sync ended. */
  doneAt: number;
  totalMs: number;
  fullSync: boolean;
  reconcile: string;
  steps: IpvsSteps;
}

/** The IPv4 proxier's "ipvs sync done" lines logged at or after `from` (ms of the UTC day). */
function ipvsSyncs(log: string, from = 0): IpvsSync[] {
  const out: IpvsSync[] = [];
  for (const line of log.split("\n")) {
    if (!line.includes('"ipvs sync done"') || !line.includes('ipFamily="IPv4"')) continue;
    const at = klogMs(line);
    if (at === undefined || at < from) continue;
    const num = (k: string) => Number(new RegExp(` ${k}=(\\d+)`).exec(line)?.[1] ?? Number.NaN);
    const steps = Object.fromEntries(IPVS_STEPS.map((k) => [k, num(`${k}Ms`)])) as IpvsSteps;
    out.push({
      doneAt: at,
      totalMs: num("totalMs"),
      fullSync: / fullSync=true/.test(line),
      reconcile: /reconcile="?(\w+)/.exec(line)?.[1] ?? "",
      steps,
    });
  }
  return out;
}

const formatSteps = (steps: Record<string, number>) =>
  Object.entries(steps)
    .map(([k, v]) => `${k} ${Math.round(v)}`)
    .join(", ");

/** The first sync's phases in ipvs mode: the first full IPv4 sync's line. */
function ipvsPhasesFrom(log: string, startedAt: number): { phases: Phases; steps: IpvsSteps } | undefined {
  const listedLine = log.split("\n").find((l) => l.includes('"Services and EndpointSlices listed; syncing"'));
  const listed = listedLine ? klogMs(listedLine) : undefined;
  const first = ipvsSyncs(log).find((x) => x.fullSync);
  if (listed === undefined || !first) return undefined;
  const syncStart = first.doneAt - first.totalMs;
  const writeMs = first.steps.ipset + first.steps.ipvs + first.steps.bind + first.steps.iptables;
  return {
    phases: {
      listedMs: listed - msOfDay(startedAt),
      syncStartMs: syncStart - listed,
      computedMs: first.totalMs - writeMs,
      restoredMs: writeMs,
    },
    steps: first.steps,
  };
}

/** The change's sync in ipvs mode: the first IPv4 sync that ends after the change was made. */
function ipvsChangePhasesFrom(
  log: string,
  changedAt: number,
): { phases: ChangePhases; steps: IpvsSteps } | undefined {
  const changed = msOfDay(changedAt);
  const sync = ipvsSyncs(log, changed).find((x) => x.doneAt - x.totalMs >= changed - 5);
  if (!sync) return undefined;
  const writeMs = sync.steps.ipset + sync.steps.ipvs + sync.steps.bind + sync.steps.iptables;
  return {
    phases: {
      syncStartMs: sync.doneAt - sync.totalMs - changed,
      computedMs: sync.totalMs - writeMs,
      restoredMs: writeMs,
    },
    steps: sync.steps,
  };
}

/**
 * A Node label change at `since` -> the end of the sync that compares everything with the
 * kernel again (ipvs mode replans every port on a new label set; it is not a "full sync" in its
 * own sense, which re-ensures the dummy device and chains, but a full reconcile).
 */
async function ipvsResyncMs(kp: ReturnType<typeof startKubeProxy>, since: number): Promise<number> {
  const from = msOfDay(since);
  for (;;) {
    if (kp.exitCode() !== undefined) throw new Error(`kube-proxy-ts exited:\n${kp.stderr().slice(-2000)}`);
    if (Date.now() - since > 900_000 * WAIT_SCALE)
      throw new Error("no full reconcile after the Node label change");
    // A sync in flight at the label change does not count: one that starts after it.
    const done = ipvsSyncs(kp.stderr(), from).find(
      (x) => x.reconcile === "full" && x.doneAt - x.totalMs >= from,
    );
    if (done) return done.doneAt - from;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One command of a floor: its argv, its stdin (a file), and the step it is timed as (if any). */
interface FloorStep {
  argv: string[];
  stdin?: string;
  timed?: string;
}

/**
 * Runs `steps` in a fresh namespace of its own from one process inside it, which spawns and
 * times each command as the binary does (no `ip netns exec` per command in the times); returns
 * each timed step's ms (a step timed more than once: the list of its times).
 */
function timedStepsInFreshNs(steps: FloorStep[]): Map<string, number[]> {
  const dir = tempDir("kpts-bench-floor-");
  // Deleted below, and on errors and signals by runBench.
  const ns = Namespace.create();
  try {
    const plan = join(dir, "plan.json");
    writeFileSync(plan, JSON.stringify(steps));
    // Bounded per command; the first failure stops it.
    const runner = `const { spawnSync } = require("node:child_process");
const { readFileSync } = require("node:fs");
const out = [];
for (const s of JSON.parse(readFileSync(${JSON.stringify(plan)}, "utf8"))) {
  const input = s.stdin ? readFileSync(s.stdin) : "";
  const t = performance.now();
  const r = spawnSync(s.argv[0], s.argv.slice(1), { input, timeout: ${3_600_000}, maxBuffer: 1 << 30 });
  const ms = performance.now() - t;
  if (r.status !== 0) { console.error(s.argv.join(" ") + ": " + String(r.stderr).slice(0, 500)); process.exit(1); }
  if (s.timed) out.push([s.timed, ms]);
}
console.log(JSON.stringify(out));`;
    const r = spawnSync("ip", ["netns", "exec", ns.name, process.execPath, "-e", runner], {
      env: { ...process.env, ...LOCK_ENV },
      timeout: 3_600_000,
      maxBuffer: 1 << 28,
    });
    if (r.status !== 0) throw new Error(`floor: ${r.stderr?.toString().slice(0, 800)}`);
    const times = new Map<string, number[]>();
    for (const [name, ms] of JSON.parse(r.stdout.toString()) as [string, number][])
      times.set(name, [...(times.get(name) ?? []), ms]);
    return times;
  } finally {
    ns.delete();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface IpvsFloors extends Floors {
  /** The full floor by tool: ipset, ipvs (ipvsadm), bind (ip -batch), iptables. */
  fullSteps: Record<string, number>;
  /** The change floor by tool (medians of 3). */
  changeSteps: Record<string, number>;
  /** ipset + ipvsadm alone, the full floor without the address binds and iptables rules. */
  coreFloorMs: number;
  coreChangeFloorMs: number;
}

/**
 * The kernel's floor for what ipvs mode wrote, as the node holds it after the run: `ipset save`,
 * `ipvsadm -S -n`, kube-ipvs0's addresses and the iptables tables (legacy, as the hint chose),
 * each restored with the tool the binary uses into a fresh namespace (kube-ipvs0 made there
 * first, untimed). The change's floor, on top of that, 3 times: what one new local endpoint
 * costs the binary's tools: one real server (ipvsadm), one KUBE-LOOP-BACK entry (ipset), and the
 * iptables-restore every ipvs sync writes.
 */
async function ipvsFloors(topo: Topology): Promise<IpvsFloors> {
  const dir = tempDir("kpts-bench-ipvs-");
  try {
    const save = async (argv: string[]) => {
      const r = await must(topo, argv);
      if (r.code !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr.slice(0, 500)}`);
      return r.stdout;
    };
    const sets = await save(["ipset", "save"]);
    const ipvs = await save(["ipvsadm", "-S", "-n"]);
    const addrs = await save(["ip", "-o", "-4", "addr", "show", "dev", "kube-ipvs0"]);
    const tables =
      (await save(["iptables-legacy-save", "-t", "filter"])) +
      (await save(["iptables-legacy-save", "-t", "nat"]));
    const binds = addrs
      .split("\n")
      .map((l) => /\binet (\S+)/.exec(l)?.[1])
      .filter((a): a is string => a !== undefined)
      .map((a) => `address add ${a} dev kube-ipvs0\n`)
      .join("");
    const file = (name: string, text: string) => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    };
    const restoreIpt = ["iptables-legacy-restore", "-w", "5", "--noflush", "--counters"];
    const steps: FloorStep[] = [
      { argv: ["ip", "link", "add", "kube-ipvs0", "type", "dummy"] },
      // IPVS takes a NAT real server only at an address it can route (unicast): a default route,
      // as the node has.
      { argv: ["ip", "link", "add", "eth0", "type", "dummy"] },
      { argv: ["ip", "link", "set", "eth0", "up"] },
      { argv: ["ip", "addr", "add", `${ADDR.node}/24`, "dev", "eth0"] },
      { argv: ["ip", "route", "add", "default", "dev", "eth0"] },
      { argv: ["ipset", "restore", "-exist"], stdin: file("sets", sets), timed: "ipset" },
      { argv: ["ipvsadm", "--restore"], stdin: file("ipvs", ipvs), timed: "ipvs" },
      { argv: ["ip", "-force", "-batch", "-"], stdin: file("binds", binds), timed: "bind" },
      { argv: restoreIpt, stdin: file("tables", tables), timed: "iptables" },
    ];
    const loopBack = sets.split("\n").some((l) => l.startsWith("create KUBE-LOOP-BACK "));
    for (let i = 0; i < 3; i++) {
      const pod = `203.0.113.${200 + i}`;
      steps.push({
        argv: ["ipvsadm", "--restore"],
        stdin: file(`ipvs-change-${i}`, `-a -t ${PROBE_VIP}:80 -r ${pod}:8080 -m -w 1\n`),
        timed: "change:ipvs",
      });
      if (loopBack)
        steps.push({
          argv: ["ipset", "restore", "-exist"],
          stdin: file(`ipset-change-${i}`, `add KUBE-LOOP-BACK ${pod},tcp:8080,${pod}\n`),
          timed: "change:ipset",
        });
      steps.push({ argv: restoreIpt, stdin: file("tables", tables), timed: "change:iptables" });
    }
    const times = timedStepsInFreshNs(steps);
    const fullSteps: Record<string, number> = {};
    const changeSteps: Record<string, number> = {};
    for (const [name, ms] of times) {
      if (name.startsWith("change:")) changeSteps[name.slice(7)] = median(ms);
      else fullSteps[name] = median(ms);
    }
    const sum = (r: Record<string, number>, keys: string[]) => keys.reduce((a, k) => a + (r[k] ?? 0), 0);
    const all = ["ipset", "ipvs", "bind", "iptables"];
    return {
      fullFloorMs: sum(fullSteps, all),
      changeFloorMs: sum(changeSteps, all),
      coreFloorMs: sum(fullSteps, ["ipset", "ipvs"]),
      coreChangeFloorMs: sum(changeSteps, ["ipset", "ipvs"]),
      fullSteps,
      changeSteps,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function oneRun(services: number, endpoints: number, o: ApiBenchOptions): Promise<RunResult> {
  const topo = await createTopology({ pods: [PROBE_POD], client: false });
  const dir = tempDir("kpts-bench-api-");
  let api: Awaited<ReturnType<typeof startNodeApi>> | undefined;
  let kp: ReturnType<typeof startKubeProxy> | undefined;
  let trace: ReturnType<typeof traceRss> | undefined;
  try {
    await startServer(topo, PROBE_POD.name, { tcp: [8080] });
    // The kubelet's hint: this node uses the legacy backend (ipvs mode's few rules too).
    if (o.mode !== "nftables") {
      await topo.must("node", ["iptables-legacy", "-t", "mangle", "-N", "KUBE-IPTABLES-HINT"], {
        env: LOCK_ENV,
      });
    }
    api = await startNodeApi(topo, dir);
    api.server.create(
      "Node",
      nodeObject({ name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR }) as KObject,
    );
    for (let i = 0; i < services; i++) {
      const { service, slice } = syntheticService(i, endpoints);
      api.server.create("Service", service);
      api.server.create("EndpointSlice", slice);
    }
    // The Service the change goes to: no endpoints yet, so connects are refused.
    api.server.create("Service", {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "probe", namespace: "default" },
      spec: {
        type: "ClusterIP",
        clusterIP: PROBE_VIP,
        clusterIPs: [PROBE_VIP],
        ports: [{ name: "http", port: 80, protocol: "TCP", targetPort: 8080 }],
      },
    });
    createPacedServices(api.server, o.changes ?? 0);
    const started = Date.now();
    kp = startKubeProxy(topo, {
      kubeconfig: api.kubeconfig,
      mode: o.mode,
      // At -v=2 (the least --v allows) a few lines per sync give the phases of the first one.
      extraArgs: [`--bind-address=${ADDR.node}`, `-v=${o.verbosity}`, ...ipvsExtraArgs(o.mode)],
      env: LOCK_ENV,
    });
    if (o.rssTrace) trace = traceRss(kp.pid, started);
    // The binary's own log line, read from its stderr as it arrives: polling /metrics every
    // 100 ms (each scrape runs nfacct twice) took CPU from the very restore being timed. The
    // first sync is over when every family's is: the line the run logs once after it.
    let firstSyncLine: string | undefined;
    while (firstSyncLine === undefined) {
      if (kp.exitCode() !== undefined) throw new Error(`kube-proxy-ts exited:\n${kp.stderr().slice(-2000)}`);
      if (Date.now() - started > 900_000 * WAIT_SCALE)
        throw new Error(`no first sync within ${900 * WAIT_SCALE} s`);
      firstSyncLine = kp
        .stderr()
        .split("\n")
        .find((l) => l.includes('"Memory after the first sync"'));
      if (firstSyncLine === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    // "SyncProxyRules complete" is logged after a failed sync too (as upstream does).
    const failed = kp
      .stderr()
      .split("\n")
      .find(
        (l) =>
          l.includes('"Sync failed; the next sync is a full one"') ||
          l.includes('"Sync failed; retrying with a full sync"'),
      );
    if (failed) throw new Error(`the first sync failed:\n${kp.stderr().slice(-3000)}`);
    const firstSyncMs = klogMs(firstSyncLine)! - msOfDay(started);
    const firstSyncPeakRssMiB = (hwmKiB(kp.pid) ?? Number.NaN) / 1024;
    // The metric agrees (set by the same sync, or by the IPv6 one just after it).
    const lastSync = await scrapeLastSync(topo);
    if (lastSync === undefined) throw new Error("first sync logged, but /metrics has no last-sync timestamp");

    // One endpoint over watch -> the first connect that reaches the pod. The probe is started,
    // and refused once, before the change: its own start-up (most of a second in an emulated
    // guest) is not the change's.
    // New connections (new conntrack flows) every 10 ms, refused until the rule is in.
    const probe = `const net=require("net");const began=Date.now();let told=false;
const once=()=>new Promise((res)=>{const s=net.connect({host:"${PROBE_VIP}",port:80});
const t=setTimeout(()=>{s.destroy();res(false)},300);
s.on("connect",()=>{clearTimeout(t);s.destroy();res(true)});s.on("error",()=>{clearTimeout(t);res(false)})});
for(let i=0;i<30000;i++){if(await once()){console.log(Date.now());process.exit(0)}
if(!told){told=true;console.log("refused")}
if(Date.now()-began>${300_000 * WAIT_SCALE})break;await new Promise((r)=>setTimeout(r,10))}
process.exit(1)`;
    const prober = topo.spawnDaemon("node", [process.execPath, "-e", probe]);
    await prober.waitForOutput(/^refused$/m, 120_000 * WAIT_SCALE);
    const changed = Date.now();
    api.server.create("EndpointSlice", {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: "probe-1", namespace: "default", labels: { "kubernetes.io/service-name": "probe" } },
      addressType: "IPv4",
      endpoints: [{ addresses: [PROBE_POD.ip], conditions: { ready: true }, nodeName: NODE_NAME }],
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    });
    if ((await prober.exited) !== 0)
      throw new Error(`traffic never flowed to the new endpoint: ${prober.stderr()}`);
    const changeMs = Number(prober.stdout().trim().split("\n").at(-1)) - changed;
    const peakRssMiB = (hwmKiB(kp.pid) ?? Number.NaN) / 1024;
    const steadyRssMiB = (statusKiB(kp.pid, "VmRSS") ?? Number.NaN) / 1024;
    const pacedMs = await pacedChanges(topo, api.server, o.changes ?? 0, o.changeGapMs ?? 3000);
    const pacedPeakRssMiB = (hwmKiB(kp.pid) ?? Number.NaN) / 1024;

    // A full resync, as every hour or after a Node label change (the trigger here): by now every
    // chain exists, so nftables mode flushes and refills each one, the largest transaction a
    // long-running process writes.
    const resynced = Date.now();
    const node = api.server.get("Node", undefined, NODE_NAME)!;
    const meta = node.metadata as { labels?: Record<string, string> };
    api.server.update("Node", {
      ...node,
      metadata: { ...meta, labels: { ...meta.labels, "bench.kube-proxy-ts/resync": "1" } },
    } as KObject);
    const resync =
      o.mode === "ipvs" ? await ipvsResyncMs(kp, resynced) : await fullResyncMs(kp, resynced, o.mode);
    const resyncPeakRssMiB = (hwmKiB(kp.pid) ?? Number.NaN) / 1024;
    const samples = trace?.stop();
    trace = undefined;
    if (samples)
      console.log(`  RSS of the binary over time (max per second since start):\n${formatTrace(samples)}`);

    // Floors: the same tables into an empty namespace, then one small change on top.
    const ipvsFloorsRun = o.mode === "ipvs" ? await ipvsFloors(topo) : undefined;
    const { fullFloorMs, changeFloorMs, listedFloorMs, netlinkChangeFloorMs }: Floors =
      ipvsFloorsRun ??
      (o.mode === "iptables" ? await iptablesFloors(topo) : await nftFloors(topo, api.server));
    const ipvsFirst = o.mode === "ipvs" ? ipvsPhasesFrom(kp.stderr(), started) : undefined;
    const ipvsChange = o.mode === "ipvs" ? ipvsChangePhasesFrom(kp.stderr(), changed) : undefined;
    const phases = o.mode === "ipvs" ? ipvsFirst?.phases : phasesFrom(kp.stderr(), started, o.mode);
    // The first sync itself, as sync_proxy_rules_duration times one: from the IPv4 sync's start
    // (nftables mode syncs IPv6 first, an empty table at start) to its end.
    const firstSyncOwnMs = phases ? phases.computedMs + phases.restoredMs : Number.NaN;
    const changePhases =
      o.mode === "ipvs" ? ipvsChange?.phases : changePhasesFrom(kp.stderr(), changed, o.mode);
    return {
      phases,
      changePhases,
      firstSyncMs,
      firstSyncOwnMs,
      changeMs,
      firstSyncPeakRssMiB,
      peakRssMiB,
      pacedMs,
      pacedPeakRssMiB,
      steadyRssMiB,
      resyncMs: resync,
      resyncPeakRssMiB,
      fullFloorMs,
      changeFloorMs,
      listedFloorMs: listedFloorMs ?? Number.NaN,
      netlinkChangeFloorMs: netlinkChangeFloorMs ?? Number.NaN,
      ...(ipvsFloorsRun
        ? {
            ipvs: {
              floors: ipvsFloorsRun,
              ...(ipvsFirst ? { firstSteps: ipvsFirst.steps } : {}),
              ...(ipvsChange ? { changeSteps: ipvsChange.steps } : {}),
            },
          }
        : {}),
    };
  } finally {
    trace?.stop();
    await kp?.kill(5000);
    if (o.log && kp) writeFileSync(o.log, kp.stderr());
    await api?.close();
    await topo.destroy();
    rmSync(dir, { recursive: true, force: true });
    rmSync(LOCK_ENV.XTABLES_LOCKFILE, { force: true });
  }
}

/** One ipvs run's steps: the binary's (from its log) and the floors' (by tool). */
function printIpvsRun(res: RunResult): void {
  const x = res.ipvs!;
  const p = res.phases;
  if (p)
    console.log(
      `    first sync phases: start -> listed ${p.listedMs} ms, -> sync start ${p.syncStartMs} ms, -> sync done ${p.computedMs + p.restoredMs} ms (writes ${p.restoredMs} ms)`,
    );
  if (x.firstSteps) console.log(`    first sync steps (ms): ${formatSteps(x.firstSteps)}`);
  const c = res.changePhases;
  if (c)
    console.log(
      `    change phases: created -> sync start ${c.syncStartMs} ms, -> sync done ${c.computedMs + c.restoredMs} ms (writes ${c.restoredMs} ms)`,
    );
  if (x.changeSteps) console.log(`    change sync steps (ms): ${formatSteps(x.changeSteps)}`);
  const f = x.floors;
  console.log(
    `    floors (ms): full ${formatSteps(f.fullSteps)} = ${Math.round(f.fullFloorMs)} (ipset + ipvsadm ${Math.round(f.coreFloorMs)}); change ${formatSteps(f.changeSteps)} = ${Math.round(f.changeFloorMs)} (ipset + ipvsadm ${Math.round(f.coreChangeFloorMs)})`,
  );
}

/** The ipvs acceptance figures: medians against both floors. */
function printIpvsSummary(services: number, o: ApiBenchOptions, runs: readonly RunResult[]): void {
  const m = (f: (r: RunResult) => number) => median(runs.map(f));
  const first = m((r) => r.firstSyncMs);
  const own = m((r) => r.firstSyncOwnMs);
  const full = m((r) => r.fullFloorMs);
  const core = m((r) => r.ipvs!.floors.coreFloorMs);
  const change = m((r) => r.changeMs);
  const changeFloor = m((r) => r.changeFloorMs);
  const coreChange = m((r) => r.ipvs!.floors.coreChangeFloorMs);
  console.log(
    `${services} x ${o.endpoints} ipvs (median of ${o.runs}): first sync from start ${Math.round(first)} ms = ${(first / full).toFixed(2)} x the full floor ${Math.round(full)} ms, ${(first / core).toFixed(2)} x ipset + ipvsadm ${Math.round(core)} ms; the sync itself ${Math.round(own)} ms = ${(own / full).toFixed(2)} x, ${(own / core).toFixed(2)} x; change -> traffic ${Math.round(change)} ms = floor ${Math.round(changeFloor)} ms + ${Math.round(change - changeFloor)} ms (ipset + ipvsadm ${Math.round(coreChange)} ms + ${Math.round(change - coreChange)} ms)`,
  );
}

/** Medians of one size's runs in one mode. */
export interface ApiBenchSummary {
  mode: BenchMode;
  services: number;
  firstSyncMs: number;
  firstSyncOwnMs: number;
  changeMs: number;
  peakRssMiB: number;
  steadyRssMiB: number;
  resyncMs: number;
  resyncPeakRssMiB: number;
  fullFloorMs: number;
  changeFloorMs: number;
}

/**
 * Puts the chosen nft first on PATH for everything this process starts (the binary under test
 * and the floors), and returns its `nft --version`.
 */
function chooseNft(choice: string | undefined): string {
  if (choice !== undefined) {
    const suite = /^suite:([a-z][a-z0-9-]*)$/.exec(choice)?.[1];
    const program = choice === "image" ? imageNftProgram() : suite ? suiteNftProgram(suite) : choice;
    process.env.PATH = pathWithNft(program);
  }
  const v = spawnSync("nft", ["--version"], { encoding: "utf8" });
  if (v.status !== 0) throw new Error(`nft --version: ${v.stderr || v.error?.message}`);
  return v.stdout.trim();
}

function printRun(mode: BenchMode, services: number, r: number, res: RunResult, o: ApiBenchOptions): void {
  const label = `  ${mode} ${services} x ${o.endpoints} run ${r + 1}`;
  console.log(
    `${label}: first sync ${Math.round(res.firstSyncMs)} ms (floor ${Math.round(res.fullFloorMs)} ms${mode === "nftables" ? ` for its own payload, ${Math.round(res.listedFloorMs)} ms for the table as listed` : ""}), change ${Math.round(res.changeMs)} ms (floor ${Math.round(res.changeFloorMs)} ms${mode === "nftables" ? ` through nft, ${Math.round(res.netlinkChangeFloorMs)} ms over netlink` : ""}), peak RSS ${Math.round(res.peakRssMiB)} MiB`,
  );
  const p = res.phases;
  if (res.ipvs) printIpvsRun(res);
  else if (p)
    console.log(
      `    first sync phases: start -> listed ${p.listedMs} ms, -> sync start ${p.syncStartMs} ms, -> ${mode === "iptables" ? `computed ${p.computedMs} ms, -> restored` : `nft started ${p.computedMs} ms, -> rules computed as nft read them, nft -f done`} ${p.restoredMs} ms`,
    );
  const c = res.changePhases;
  if (c && !res.ipvs)
    console.log(
      `    change phases: created -> sync start ${c.syncStartMs} ms, -> computed ${c.computedMs} ms, -> ${mode === "iptables" ? "restored" : "written"} ${c.restoredMs} ms`,
    );
  if (o.rssTrace) console.log(`  steady RSS (after the change) ${Math.round(res.steadyRssMiB)} MiB`);
  if (o.changes)
    console.log(
      `    peak RSS after the first sync ${Math.round(res.firstSyncPeakRssMiB)} MiB; ${o.changes} paced changes (${o.changeGapMs} ms apart) -> traffic ${res.pacedMs.map(Math.round).join(", ")} ms; peak RSS after them ${Math.round(res.pacedPeakRssMiB)} MiB`,
    );
  console.log(
    `    full resync (Node label change -> synced) ${Math.round(res.resyncMs)} ms; peak RSS with it ${Math.round(res.resyncPeakRssMiB)} MiB`,
  );
}

function summarise(
  mode: BenchMode,
  services: number,
  runs: readonly RunResult[],
  o: ApiBenchOptions,
): ApiBenchSummary {
  const m = (k: Exclude<keyof RunResult, "phases" | "changePhases" | "pacedMs" | "ipvs">) =>
    median(runs.map((x) => x[k]));
  const floorName =
    mode === "iptables"
      ? "full-restore floor"
      : mode === "ipvs"
        ? "floor (ipset + ipvsadm + ip -batch + iptables restores)"
        : "nft -f floor of its own payload";
  console.log(
    `${mode} ${services} x ${o.endpoints} (median of ${runs.length}): first sync ${Math.round(m("firstSyncMs"))} ms from start = ${(m("firstSyncMs") / m("fullFloorMs")).toFixed(2)} x the ${floorName} ${Math.round(m("fullFloorMs"))} ms, the sync itself ${Math.round(m("firstSyncOwnMs"))} ms = ${(m("firstSyncOwnMs") / m("fullFloorMs")).toFixed(2)} x; one change -> traffic ${Math.round(m("changeMs"))} ms (change floor ${Math.round(m("changeFloorMs"))} ms${mode === "nftables" ? ` through nft, ${Math.round(m("netlinkChangeFloorMs"))} ms over netlink` : ""}); peak RSS ${Math.round(m("peakRssMiB"))} MiB; full resync ${Math.round(m("resyncMs"))} ms, peak RSS with it ${Math.round(m("resyncPeakRssMiB"))} MiB`,
  );
  if (mode === "ipvs") printIpvsSummary(services, o, runs);
  if (o.changes)
    console.log(
      `${mode} ${services} x ${o.endpoints} paced (median of ${runs.length}): peak RSS after the first sync ${Math.round(m("firstSyncPeakRssMiB"))} MiB, after ${o.changes} changes ${o.changeGapMs} ms apart ${Math.round(m("pacedPeakRssMiB"))} MiB; a paced change -> traffic ${Math.round(median(runs.flatMap((x) => x.pacedMs)))} ms (median of all)`,
    );
  return {
    mode,
    services,
    firstSyncMs: m("firstSyncMs"),
    firstSyncOwnMs: m("firstSyncOwnMs"),
    changeMs: m("changeMs"),
    peakRssMiB: m("peakRssMiB"),
    steadyRssMiB: m("steadyRssMiB"),
    resyncMs: m("resyncMs"),
    resyncPeakRssMiB: m("resyncPeakRssMiB"),
    fullFloorMs: m("fullFloorMs"),
    changeFloorMs: m("changeFloorMs"),
  };
}

/**
 * Every size, o.runs rounds each; a round runs every mode once, the order turning from round to
 * round so no mode always runs first. Prints each run and the medians, and returns the medians.
 */
export async function benchApi(o: ApiBenchOptions): Promise<ApiBenchSummary[]> {
  const bin = kubeProxyBinary();
  if (!existsSync(bin)) throw new Error(`${bin} missing: run bash scripts/build`);
  const modes = o.modes ?? [o.mode];
  const nft = modes.includes("nftables") ? `, ${chooseNft(o.nft)}` : "";
  console.log(
    `bench-api: ${bin}, mode=${modes.join(",")}, runs=${o.runs}, endpoints/Service=${o.endpoints}${nft}`,
  );
  const out: ApiBenchSummary[] = [];
  for (const services of o.services) {
    const runs = new Map<BenchMode, RunResult[]>(modes.map((m) => [m, []]));
    for (let r = 0; r < o.runs; r++) {
      for (let i = 0; i < modes.length; i++) {
        const mode = modes[(i + r) % modes.length] ?? o.mode;
        const res = await oneRun(services, o.endpoints, { ...o, mode });
        runs.get(mode)?.push(res);
        printRun(mode, services, r, res, o);
      }
    }
    for (const mode of modes) out.push(summarise(mode, services, runs.get(mode) ?? [], o));
  }
  console.log(`(${join(process.cwd(), "dist/kube-proxy-ts")})`);
  return out;
}

if (import.meta.main) {
  await runBench("bench-api", async () => {
    await benchApi(parseOptions(process.argv.slice(2)));
  });
}
