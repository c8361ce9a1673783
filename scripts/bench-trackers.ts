// Benchmarks the change trackers the way the informers drive them: 10,000 Services with 10
// endpoints each are fed in (serviceChanged + endpointSliceChanged, then one update of each
// map), then one endpoint changes and the maps update again. Prints medians over several runs.
//
// Usage: scripts/bench-trackers [--services N] [--endpoints N] [--runs N]
// Synthetic addresses come from 198.18.0.0/15 (RFC 2544 benchmarking range): Service IPs from
// 198.18.0.0, endpoint IPs from 198.18.64.0 upward.

import type { EndpointSliceObject, ServiceObject } from "../src/k8s/objects.ts";
import { EndpointsMap } from "../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../src/proxy/endpoints-tracker.ts";
import { ServiceMap } from "../src/proxy/service-map.ts";
import { ServiceChangeTracker } from "../src/proxy/service-tracker.ts";

const BASE = (198 << 24) + (18 << 16);
const RANGE = 2 ** 17;
const ENDPOINT_OFFSET = 64 * 256;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} needs a positive integer`);
  return v;
}

function ip(offset: number): string {
  if (offset >= RANGE) throw new Error("synthetic cluster too large for 198.18.0.0/15");
  const n = BASE + offset;
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

function makeService(i: number): ServiceObject {
  return {
    metadata: { namespace: `ns-${i % 50}`, name: `svc-${i}`, uid: `uid-${i}` },
    spec: { type: "ClusterIP", clusterIP: ip(i), ports: [{ name: "http", port: 80, protocol: "TCP" }] },
  };
}

function makeSlice(i: number, perService: number, version = 0): EndpointSliceObject {
  const endpoints = Array.from({ length: perService }, (_, j) => ({
    addresses: [ip(ENDPOINT_OFFSET + i * perService + j)],
    nodeName: `node-${(i + j) % 100}`,
    zone: `zone-${j % 3}`,
    conditions: { ready: !(version > 0 && j === 0), serving: true, terminating: false },
  }));
  return {
    metadata: {
      namespace: `ns-${i % 50}`,
      name: `svc-${i}-abcde`,
      labels: { "kubernetes.io/service-name": `svc-${i}` },
      resourceVersion: String(version + 1),
    },
    addressType: "IPv4",
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    endpoints,
  };
}

interface RunResult {
  ingestMs: number;
  changeMs: number;
  heapMB: number;
  rssMB: number;
}

// A full collection before measuring, so the numbers are live data, not leftover garbage
// (node exposes gc with --expose-gc; Bun through its global object).
function collectGarbage(): void {
  const g = globalThis as { gc?: () => void; Bun?: { gc(force: boolean): void } };
  if (g.gc) g.gc();
  else g.Bun?.gc(true);
}

function runOnce(
  services: ServiceObject[],
  slices: EndpointSliceObject[],
  changed: EndpointSliceObject,
): RunResult {
  collectGarbage();
  const svcTracker = new ServiceChangeTracker();
  const epTracker = new EndpointsChangeTracker({ nodeName: "node-0" });
  const serviceMap = new ServiceMap();
  const endpointsMap = new EndpointsMap();

  const t0 = performance.now();
  for (const s of services) svcTracker.serviceChanged(undefined, s);
  for (const s of slices) epTracker.endpointSliceChanged(s, false);
  serviceMap.update(svcTracker);
  endpointsMap.update(epTracker);
  const ingestMs = performance.now() - t0;

  collectGarbage();
  const mem = process.memoryUsage();

  const t1 = performance.now();
  epTracker.endpointSliceChanged(changed, false);
  const result = endpointsMap.update(epTracker);
  const changeMs = performance.now() - t1;

  if (serviceMap.size !== services.length || result.updatedServices.size !== 1) {
    throw new Error("benchmark sanity check failed: the trackers lost or invented changes");
  }
  return { ingestMs, changeMs, heapMB: mem.heapUsed / 2 ** 20, rssMB: mem.rss / 2 ** 20 };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function main(): void {
  const nServices = arg("services", 10000);
  const perService = arg("endpoints", 10);
  const runs = arg("runs", 5);
  const services = Array.from({ length: nServices }, (_, i) => makeService(i));
  const slices = Array.from({ length: nServices }, (_, i) => makeSlice(i, perService));
  const changed = makeSlice(Math.floor(nServices / 2), perService, 1);

  const results: RunResult[] = [];
  for (let r = 0; r < runs; r++) results.push(runOnce(services, slices, changed));
  const m = (pick: (r: RunResult) => number) => median(results.map(pick));
  const label = `${nServices} services x ${perService} endpoints`;
  console.log(`ingest ${label}: ${m((r) => r.ingestMs).toFixed(0)} ms (median of ${runs})`);
  console.log(`one endpoint change: ${m((r) => r.changeMs).toFixed(2)} ms (median of ${runs})`);
  console.log(
    `memory after ingest: heap ${m((r) => r.heapMB).toFixed(0)} MiB, rss ${m((r) => r.rssMB).toFixed(0)} MiB (median of ${runs})`,
  );
}

try {
  main();
} catch (err) {
  console.error(`bench-trackers: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
}
