// Memory of a full resync in ipvs mode, against the stateful fakes: N Services x M endpoints are
// synced once, then a Node label change makes every port be replanned and the whole kernel be
// read (the path planContext() takes when its key changes). Prints the JS heap and RSS after the
// first sync, the resync's peak RSS (Linux VmHWM, which is reset at each checkpoint, so a peak
// inside a synchronous step is seen too; a timer samples between the proxier's time slices) and
// after it. The three whole-table listings come through the real runner (from files, by `cat`)
// as on a node. The fakes hold the kernel's tables too: compare the deltas, not the totals, with
// a real node's. Collections are on, as in the daemon. A build of the proxier may report
// checkpoints of its own with globalThis.__memMark?.("label") (temporary instrumentation).
//
//   bun test/modes/ipvs/resync-memory.ts [services] [--endpoints=10]
//   (default: 10000)

import { heapStats } from "bun:jsc";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRealExec } from "../../../src/exec/runner.ts";
import { LIST_ARGS } from "../../../src/host/ipvs/client.ts";
import { enableGarbageCollections } from "../../../src/runtime.ts";
import { populate } from "./bench.ts";
import { setup } from "./harness.ts";

const MiB = 1 << 20;
const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`;

interface Sample {
  readonly rss: number;
  readonly heap: number;
  readonly extra: number;
  /** Highest RSS since the last sample (Linux VmHWM, reset after each sample), 0 if unknown. */
  readonly hwm: number;
}

/** The kernel's high-water mark of this process's RSS, reset: the peak between two samples. */
function highWaterMark(): number {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    writeFileSync("/proc/self/clear_refs", "5");
    return Number(kb ?? 0) * 1024;
  } catch {
    return 0;
  }
}

function now(): Sample {
  const hwm = highWaterMark();
  const h = heapStats();
  return { rss: process.memoryUsage.rss(), heap: h.heapSize, extra: h.extraMemorySize, hwm };
}

function show(label: string, s: Sample): void {
  console.log(
    `  ${label.padEnd(28)} rss ${mib(s.rss)} (peak since last ${mib(s.hwm)}), heap ${mib(s.heap)} (+ extra ${mib(s.extra)})`,
  );
}

/** Checkpoints a build of the proxier may report (temporary instrumentation calls this). */
const marks: [string, Sample][] = [];
(globalThis as { __memMark?: (label: string) => void }).__memMark = (label) => marks.push([label, now()]);

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const services = Number(args.find((a) => /^\d+$/.test(a)) ?? 10_000);
  const endpoints = Number(args.find((a) => a.startsWith("--endpoints="))?.slice(12) ?? 10);
  enableGarbageCollections();
  const s = setup();
  populate(s, services, endpoints);
  await s.sync();
  const table = s.host.ipvs.services();
  console.log(
    `${services} Services x ${endpoints} endpoints: ${table.length} virtual servers, ` +
      `${table.reduce((n, v) => n + v.reals.length, 0)} real servers`,
  );
  // The fakes make their listings from their tables, with much garbage on the way; a real node
  // reads them from a child. So the whole-table listings of the resync are made now, written to
  // files, and read through the real runner (`cat`) as a real node reads ipvsadm's.
  const listings = new Map<string, string>();
  const dir = mkdtempSync(join(tmpdir(), "resync-memory-"));
  const runner = createRealExec();
  for (const [cmd, args] of [
    ["ipvsadm", LIST_ARGS],
    ["ipset", ["save"]],
    ["ip", ["-o", "addr", "show"]],
  ] as const) {
    const res = await s.host.exec.run({ cmd, args });
    const file = join(dir, cmd);
    writeFileSync(file, res.stdout);
    listings.set(`${cmd} ${args.join(" ")}`, file);
  }
  for (const [cmd, tool] of [
    ["ipvsadm", s.host.ipvs],
    ["ipset", s.host.ipset],
    ["ip", s.host.net],
  ] as const) {
    s.host.exec.on(cmd, (req) => {
      const file = listings.get(`${cmd} ${req.args.join(" ")}`);
      return file ? runner.run({ ...req, cmd: "cat", args: [file] }) : tool.handle(req);
    });
  }
  console.log(
    `  listings (read by the real runner from files): ${[...listings].map(([k, f]) => `${k} ${mib(statSync(f).size)}`).join(", ")}`,
  );
  Bun.gc(true);
  // The runtime hands freed pages back a little after a collection.
  await Bun.sleep(1000);
  const settled = now();
  show("after first sync (+gc)", settled);
  const maxBefore = process.resourceUsage().maxRSS * 1024;

  // A Node label change: planContext()'s key changes, every port is replanned.
  s.cluster.node = { ...s.cluster.node!, labels: { "topology.kubernetes.io/zone": "z1" } };
  marks.length = 0;
  highWaterMark();
  let peak = now();
  let peakHeap = peak;
  const timer = setInterval(() => {
    const x = now();
    if (x.rss > peak.rss) peak = x;
    if (x.heap > peakHeap.heap) peakHeap = x;
  }, 2);
  const t0 = performance.now();
  await s.sync();
  clearInterval(timer);
  const stats = s.proxier.lastSyncStats()!;
  const after = now();
  console.log(
    `  resync: ${(performance.now() - t0).toFixed(0)} ms, reconcile ${stats.reconcile}, ` +
      `${stats.recomputedPorts} ports replanned, ${stats.ipvsRestoreLines} ipvs lines`,
  );
  for (const [label, x] of marks) show(`mark ${label}`, x);
  show("sampled peak rss", peak);
  show("sampled peak heap", peakHeap);
  show("after resync", after);
  Bun.gc(true);
  show("after resync (+gc)", now());
  const resyncPeak = Math.max(peak.rss, after.hwm, ...marks.map(([, x]) => x.hwm));
  console.log(`  max rss of the process before the resync: ${mib(maxBefore)}`);
  console.log(
    `  resync peak rss ${mib(resyncPeak)}: +${mib(resyncPeak - settled.rss)} over the settled rss; ` +
      `sampled heap peak +${mib(peakHeap.heap - settled.heap)}`,
  );
  s.proxier.stop();
  rmSync(dir, { recursive: true, force: true });
}

await main();
