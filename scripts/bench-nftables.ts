// Benchmarks nftables mode on synthetic clusters (by default 1,000 and 10,000 Services x 10
// endpoints), in two parts:
//   1. In process: objects go through the real SyncController and change trackers to the real
//      NftablesProxier, whose nft client only records each transaction's text (no kernel), so
//      the compute time is ours alone: a full sync, then a sync after one endpoint of one
//      Service changed. Then the floor: `nft -f -` (the client's own argv) of the last full
//      payload into an empty network namespace, and of the one-change payload on top of it.
//   2. The real binary (dist/kube-proxy-ts --proxy-mode=nftables) against the fake API server,
//      measured by scripts/bench-api.ts's own code in --mode=nftables: start -> first sync,
//      one endpoint added over watch -> first TCP connect reaching it, peak RSS (VmHWM), and the
//      kernel's floors from the same run.
// Ends with a comparison against the targets at 10,000 x 10. Prints figures, never asserts.
//
// Usage: scripts/bench-nftables [--services=1000,10000] [--endpoints=10] [--runs=5]
//          [--binary-runs=3] [--skip-binary] [--skip-floor] [--nft-timeout=600] [--dump=DIR]
// --dump writes each size's last full and one-change payloads to DIR (for looking at nft itself).
// Needs root, `ip netns` and nft for the floors and the binary. Synthetic in-process addresses
// come from 198.18.0.0/15 (see bench-support.ts); the binary's run uses bench-api's plan.
// Nothing is ever written into the root network namespace's tables.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createNftClient } from "../src/host/nft/client.ts";
import type { NftTransactionLike } from "../src/host/nft/types.ts";
import { type ApiBenchSummary, benchApi } from "./bench-api.ts";
import {
  benchSyncPairs,
  capturingNftablesProxier,
  checkFits,
  count,
  flag,
  ip,
  MB,
  median,
  ms,
  Namespace,
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

interface Options {
  services: number[];
  endpoints: number;
  runs: number;
  binaryRuns: number;
  skipBinary: boolean;
  skipFloor: boolean;
  nftTimeoutS: number;
  dump: string | undefined;
}

function parseOptions(): Options {
  rejectUnknownFlags([
    "services",
    "endpoints",
    "runs",
    "binary-runs",
    "skip-binary",
    "skip-floor",
    "nft-timeout",
    "dump",
  ]);
  return {
    services: positiveInts("services", [1_000, 10_000]),
    endpoints: positiveInt("endpoints", 10),
    runs: positiveInt("runs", 5),
    binaryRuns: positiveInt("binary-runs", 3),
    skipBinary: process.argv.includes("--skip-binary"),
    skipFloor: process.argv.includes("--skip-floor"),
    nftTimeoutS: positiveInt("nft-timeout", 600),
    dump: flag("dump") || undefined,
  };
}

// ---------------------------------------------------------------------------------------------
// Compute: the proxier with an nft client that only records

type ComputeResult = SyncPairs;

async function benchCompute(services: number, perService: number, runs: number): Promise<ComputeResult> {
  const { proxier, nft, config } = capturingNftablesProxier({
    nodeIP: ip(NODE_OFFSET),
    prefix: 15,
    clusterCIDR: "198.18.0.0/15",
  });
  return benchSyncPairs({
    proxier,
    syncPeriodMs: config.nftables.syncPeriod,
    services,
    perService,
    runs,
    takePayloads: () => nft.payloads.splice(0),
    isFull: (payload) => payload.startsWith("add table ip kube-proxy"),
    // A partial sync rewrites the changed Service's chains only.
    isPartial: (payload, address) =>
      payload.includes(address) && count(payload, "add chain ip kube-proxy service-") === 1,
  });
}

// ---------------------------------------------------------------------------------------------
// Floor: nft -f of the captured payloads in network namespaces of our own

interface FloorTimes {
  full: number[];
  change: number[];
  argv: string;
}

const textTx = (text: string): NftTransactionLike => ({ size: 1, render: () => text });

/** Each run: a fresh namespace, the full payload into it, the one-change payload on top. */
async function benchFloor(c: ComputeResult, runs: number, timeoutS: number): Promise<FloorTimes> {
  const out: FloorTimes = { full: [], change: [], argv: "" };
  for (let r = 0; r < runs; r++) {
    const ns = Namespace.create();
    try {
      const exec = ns.exec();
      const client = createNftClient({ exec, family: "ip", table: "kube-proxy", timeoutMs: timeoutS * 1000 });
      let t = performance.now();
      await client.run(textTx(c.fullPayload));
      out.full.push(performance.now() - t);
      out.argv ||= exec.last ? [exec.last.cmd, ...exec.last.args].join(" ") : "";
      t = performance.now();
      await client.run(textTx(c.changePayload));
      out.change.push(performance.now() - t);
      if (r === 0) {
        // Everything the payloads declare is there: one policy chain per port (endpoints are
        // DNATed from it; the change rewrites one of them in place).
        const chains = await client.list("chains");
        const expected = count(c.fullPayload, "add chain ip kube-proxy service-");
        const found = chains.filter((n) => n.startsWith("service-")).length;
        if (found !== expected) {
          throw new Error(`sanity check failed: ${found} service chains in the table, expected ${expected}`);
        }
      }
    } finally {
      ns.delete();
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Figures

interface CaseSummary {
  services: number;
  fullMs: number;
  changeMs: number;
  fullFloorMs: number | undefined;
  changeFloorMs: number | undefined;
  peakRss: number;
}

let printedArgv = false;

async function runCase(services: number, opts: Options, floors: boolean): Promise<CaseSummary> {
  const label = `${services} services x ${opts.endpoints} endpoints`;
  const c = await benchCompute(services, opts.endpoints, opts.runs);
  const fullMs = median(c.fullMs);
  const changeMs = median(c.changeMs);
  const of = `(median of ${opts.runs})`;
  console.log(`${label}: full sync compute ${ms(fullMs)} ms ${of}, payload ${size(c.fullPayload)}`);
  console.log(`${label}: one-change sync compute ${ms(changeMs)} ms ${of}, payload ${size(c.changePayload)}`);
  const computePeakRss = peakRssBytes();
  if (opts.dump) {
    mkdirSync(opts.dump, { recursive: true });
    for (const [kind, text] of [
      ["full", c.fullPayload],
      ["change", c.changePayload],
    ] as const) {
      const file = join(opts.dump, `nftables-${services}x${opts.endpoints}-${kind}.nft`);
      writeFileSync(file, text);
      console.log(`${label}: ${kind} payload written to ${file}`);
    }
  }
  let fullFloorMs: number | undefined;
  let changeFloorMs: number | undefined;
  if (floors) {
    const f = await benchFloor(c, opts.runs, opts.nftTimeoutS);
    fullFloorMs = median(f.full);
    changeFloorMs = median(f.change);
    if (!printedArgv) {
      printedArgv = true;
      console.log(`nft argv (as the nft client runs it, stdin = payload): ${f.argv}`);
    }
    console.log(
      `${label}: nft -f full payload into an empty namespace ${ms(fullFloorMs)} ms, one-change payload on top ${ms(changeFloorMs)} ms ${of}`,
    );
  }
  const peakRss = peakRssBytes();
  console.log(
    `${label}: peak RSS of the benchmark so far ${(peakRss / MB).toFixed(0)} MB (${(computePeakRss / MB).toFixed(0)} MB after the compute)`,
  );
  return { services, fullMs, changeMs, fullFloorMs, changeFloorMs, peakRss };
}

const x = (a: number, b: number) => `${(a / b).toFixed(2)} x`;

function printTargets(cases: CaseSummary[], api: ApiBenchSummary[], opts: Options): void {
  const c = cases.find((k) => k.services === TARGET_SERVICES) ?? cases.at(-1)!;
  const a = api.find((k) => k.services === c.services);
  const note = c.services === TARGET_SERVICES && opts.endpoints === 10 ? "" : " (targets are for 10000 x 10)";
  console.log(`targets at ${c.services} services x ${opts.endpoints} endpoints${note}:`);
  if (a) {
    console.log(
      `  binary: first full sync ${ms(a.firstSyncOwnMs)} ms = ${x(a.firstSyncOwnMs, a.fullFloorMs)} the nft -f floor of its own payload (${ms(a.fullFloorMs)} ms); target <= 1.2 x: ${verdict(a.firstSyncOwnMs <= 1.2 * a.fullFloorMs)} (from process start, with start-up and the API lists: ${ms(a.firstSyncMs)} ms = ${x(a.firstSyncMs, a.fullFloorMs)})`,
    );
    console.log(
      `  binary: one change -> traffic ${ms(a.changeMs)} ms, change floor ${ms(a.changeFloorMs)} ms; target <= 100 ms + floor (${ms(100 + a.changeFloorMs)} ms): ${verdict(a.changeMs <= 100 + a.changeFloorMs)}`,
    );
    console.log(
      `  binary: peak RSS ${Math.round(a.peakRssMiB)} MiB (${((a.peakRssMiB * 1048576) / MB).toFixed(0)} MB); target <= 300 MB: ${verdict((a.peakRssMiB * 1048576) / MB <= 300)}`,
    );
  } else console.log("  binary: not measured (--skip-binary, or not root)");
  if (c.fullFloorMs !== undefined && c.changeFloorMs !== undefined) {
    const total = c.fullMs + c.fullFloorMs;
    console.log(
      `  in process: full sync compute ${ms(c.fullMs)} ms (${((100 * c.fullMs) / c.fullFloorMs).toFixed(1)} % of the floor) + nft -f floor ${ms(c.fullFloorMs)} ms = ${x(total, c.fullFloorMs)} the floor; target <= 1.2 x: ${verdict(total <= 1.2 * c.fullFloorMs)}`,
    );
    console.log(
      `  in process: one-change compute ${ms(c.changeMs)} ms on top of its nft -f floor ${ms(c.changeFloorMs)} ms; target <= 100 ms: ${verdict(c.changeMs <= 100)}`,
    );
  } else {
    console.log(
      `  in process: full sync compute ${ms(c.fullMs)} ms, one change ${ms(c.changeMs)} ms (no floor)`,
    );
  }
  // Not the product's figure: this process keeps every payload it times, and collects garbage
  // at the runtime's pace (the binary's own collections are off here).
  console.log(
    `  in process: peak RSS of this benchmark process ${(c.peakRss / MB).toFixed(0)} MB (the binary's is above)`,
  );
  console.log(
    "  iptables mode for comparison: bash scripts/bench-api --mode=iptables (and scripts/bench-iptables)",
  );
}

function kernelUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return "not root";
  if (sh("ip", ["netns", "list"]).code !== 0) return "ip netns unavailable";
  if (sh("nft", ["--version"]).code !== 0) return "nft unavailable";
  return undefined;
}

async function main(): Promise<void> {
  const opts = parseOptions();
  for (const s of opts.services) checkFits(s, opts.endpoints, opts.runs);
  const why = kernelUnavailable();
  const floors = !why && !opts.skipFloor;
  if (why) console.log(`floors and binary: skipped (${why})`);
  else if (floors) {
    const probe = Namespace.create();
    try {
      console.log(
        `floors run in fresh network namespaces (ip netns exec costs ${ms(netnsExecOverheadMs(probe))} ms, included; timeout ${opts.nftTimeoutS} s)`,
      );
    } finally {
      probe.delete();
    }
  }
  const cases: CaseSummary[] = [];
  for (const services of opts.services) cases.push(await runCase(services, opts, floors));
  let api: ApiBenchSummary[] = [];
  if (!why && !opts.skipBinary) {
    console.log("the binary in nftables mode (scripts/bench-api.ts --mode=nftables):");
    api = await benchApi({
      mode: "nftables",
      services: opts.services,
      endpoints: opts.endpoints,
      runs: opts.binaryRuns,
      rssTrace: false,
      verbosity: 2,
      log: undefined,
    });
  }
  printTargets(cases, api, opts);
}

await runBench("bench-nftables", main);
