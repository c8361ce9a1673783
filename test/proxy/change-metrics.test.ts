// kubeproxy_sync_proxy_rules_{service,endpoint}_changes_{total,pending}, fed by the trackers with
// upstream's semantics (pkg/proxy/servicechangetracker.go, endpointschangetracker.go).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createSnapshotSource } from "../../src/k8s/snapshot-source.ts";
import { parseStateDocuments } from "../../src/k8s/state-file.ts";
import { trackerMetrics } from "../../src/proxy/change-metrics.ts";
import { EndpointsMap } from "../../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../../src/proxy/endpoints-tracker.ts";
import { createMetrics, type Metrics } from "../../src/proxy/metrics/metrics.ts";
import { KubeRegistry } from "../../src/proxy/metrics/registry.ts";
import type { Proxier } from "../../src/proxy/proxier.ts";
import { ServiceMap } from "../../src/proxy/service-map.ts";
import { ServiceChangeTracker } from "../../src/proxy/service-tracker.ts";
import { SyncController } from "../../src/proxy/sync-controller.ts";
import { FakeClock } from "../../src/util/testing/fake-clock.ts";
import { ep, service, slice } from "./builders.ts";

async function read(metric: Metrics[keyof Metrics]): Promise<number> {
  const m = metric as { get(): Promise<{ values: { value: number }[] }> };
  return (await m.get()).values[0]?.value ?? Number.NaN;
}

const fresh = () => createMetrics(new KubeRegistry());

describe("service change metrics", () => {
  test("total counts every call with an object; pending is the waiting Services; checkout zeroes it", async () => {
    const m = fresh();
    const tracker = new ServiceChangeTracker({ metrics: trackerMetrics(m).services });
    const state = async () => [await read(m.serviceChangesTotal), await read(m.serviceChangesPending)];
    const web = service("web", { clusterIP: "198.51.100.10" });
    const dns = service("dns", { clusterIP: "198.51.100.53" });

    tracker.serviceChanged(undefined, web);
    expect(await state()).toEqual([1, 1]);
    tracker.serviceChanged(web, web); // a resync changes nothing, yet counts
    expect(await state()).toEqual([2, 1]);
    tracker.serviceChanged(undefined, dns);
    expect(await state()).toEqual([3, 2]);
    tracker.serviceChanged(web, undefined); // added and deleted before a sync: no longer pending
    expect(await state()).toEqual([4, 1]);
    tracker.serviceChanged(undefined, undefined); // nothing at all: not a change
    expect(await state()).toEqual([4, 1]);
    tracker.serviceChanged(undefined, { metadata: {} }); // unusable, but an object: counted
    expect(await state()).toEqual([5, 1]);

    new ServiceMap().update(tracker);
    expect(await state()).toEqual([5, 0]);
  });
});

describe("endpoint change metrics", () => {
  test("total counts usable slices; pending grows per needed change; checkout zeroes it", async () => {
    const m = fresh();
    const tracker = new EndpointsChangeTracker({ nodeName: "node-a", metrics: trackerMetrics(m).endpoints });
    const state = async () => [await read(m.endpointChangesTotal), await read(m.endpointChangesPending)];
    const a1 = slice("web-a", [ep("192.0.2.1")]);
    const a2 = slice("web-a", [ep("192.0.2.1"), ep("192.0.2.2")]);

    tracker.endpointSliceChanged(a1, false);
    expect(await state()).toEqual([1, 1]);
    tracker.endpointSliceChanged(a1, false); // same content: counted, nothing more pending
    expect(await state()).toEqual([2, 1]);
    tracker.endpointSliceChanged(a2, false); // another change of the same slice adds to pending
    expect(await state()).toEqual([3, 2]);
    tracker.endpointSliceChanged(slice("web-f", [ep("192.0.2.3")], { addressType: "FQDN" }), false);
    tracker.endpointSliceChanged(slice("orphan", [ep("192.0.2.4")], { labels: {} }), false);
    expect(await state()).toEqual([3, 2]); // unsupported family / no service label: not counted

    new EndpointsMap().update(tracker);
    expect(await state()).toEqual([3, 0]);
    tracker.endpointSliceChanged(a2, true);
    expect(await state()).toEqual([4, 1]);
  });
});

describe("sync controller feeds the change metrics", () => {
  test("the initial list counts each Service and EndpointSlice once; the first sync clears pending", async () => {
    const docs = parseStateDocuments(readFileSync("examples/cluster.yaml", "utf8"), "examples/cluster.yaml");
    expect(docs.services.length).toBeGreaterThan(0);
    expect(docs.endpointSlices.length).toBeGreaterThan(0);
    const m = fresh();
    const clock = new FakeClock(0);
    const proxier: Proxier = { async sync() {} };
    const ctl = new SyncController({
      nodeName: "node-a",
      proxier,
      minSyncPeriodMs: 1000,
      syncPeriodMs: 30_000,
      clock,
      metrics: trackerMetrics(m),
    });
    ctl.start();
    await createSnapshotSource(docs, "node-a").start(ctl);
    expect(await read(m.serviceChangesTotal)).toBe(docs.services.length);
    expect(await read(m.endpointChangesTotal)).toBe(docs.endpointSlices.length);
    await clock.advanceAsync(0);
    expect(ctl.syncCount).toBe(1);
    expect(await read(m.serviceChangesPending)).toBe(0);
    expect(await read(m.endpointChangesPending)).toBe(0);
    await ctl.stop();
  });
});
