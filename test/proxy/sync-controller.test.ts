import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { ServiceObject } from "../../src/k8s/objects.ts";
import { createSnapshotSource } from "../../src/k8s/snapshot-source.ts";
import { parseStateDocuments } from "../../src/k8s/state-file.ts";
import type { Proxier, SyncInput } from "../../src/proxy/proxier.ts";
import { SyncController } from "../../src/proxy/sync-controller.ts";
import { FakeClock } from "../../src/util/testing/fake-clock.ts";

interface Seen {
  at: number;
  servicePorts: string[];
  updated: string[];
  node?: string;
}

function recordingProxier(clock: FakeClock, failFirst = 0): Proxier & { seen: Seen[]; attempts: number } {
  const p = {
    seen: [] as Seen[],
    attempts: 0,
    async sync(input: SyncInput) {
      p.attempts++;
      if (p.attempts <= failFirst) throw new Error("iptables-restore: line 3 failed");
      p.seen.push({
        at: clock.now(),
        servicePorts: [...input.services.keys()].sort(),
        updated: [...input.serviceUpdate.updatedServices, ...input.endpointsUpdate.updatedServices].sort(),
        ...(input.node ? { node: input.node.name } : {}),
      });
    },
  };
  return p;
}

const docs = parseStateDocuments(readFileSync("examples/cluster.yaml", "utf8"), "examples/cluster.yaml");

function svc(name: string, ip: string, port = 80): ServiceObject {
  return {
    metadata: { name, namespace: "default" },
    spec: {
      type: "ClusterIP",
      clusterIP: ip,
      clusterIPs: [ip],
      ports: [{ name: "http", port, protocol: "TCP" }],
    },
  };
}

function setup(failFirst = 0) {
  const clock = new FakeClock(0);
  const proxier = recordingProxier(clock, failFirst);
  const ctl = new SyncController({
    nodeName: "node-a",
    proxier,
    minSyncPeriodMs: 1000,
    syncPeriodMs: 30_000,
    clock,
  });
  ctl.start();
  return { clock, proxier, ctl };
}

describe("sync controller", () => {
  test("no sync happens before Services and EndpointSlices are both listed", async () => {
    const { clock, proxier, ctl } = setup();
    ctl.onServiceChange(undefined, svc("a", "198.51.100.1"));
    ctl.onServicesSynced();
    await clock.advanceAsync(60_000); // periodic runs included: still nothing
    await ctl.syncNow(); // even an explicit sync refuses
    expect(proxier.seen).toEqual([]);
    ctl.onEndpointSlicesSynced();
    await clock.advanceAsync(0);
    expect(proxier.seen.length).toBe(1);
    expect(proxier.seen[0]?.servicePorts).toEqual(["default/a:http"]);
    await ctl.stop();
  });

  test("the first sync carries the whole snapshot in one go", async () => {
    const { clock, proxier, ctl } = setup();
    await createSnapshotSource(docs, "node-a").start(ctl);
    await clock.advanceAsync(0);
    expect(proxier.seen.length).toBe(1);
    expect(proxier.seen[0]?.servicePorts).toEqual([
      "default/pending:grpc",
      "default/shop:http",
      "default/web:http",
      "ingress/ingress:https",
      "kube-system/dns:dns",
      "kube-system/dns:dns-tcp",
      "monitoring/metrics:metrics",
    ]);
    await ctl.stop();
  });

  test("a burst of changes coalesces, and the min sync period holds", async () => {
    const { clock, proxier, ctl } = setup();
    ctl.onServicesSynced();
    ctl.onEndpointSlicesSynced();
    await clock.advanceAsync(0);
    for (let i = 1; i <= 50; i++) ctl.onServiceChange(undefined, svc(`s${i}`, `198.51.100.${i}`));
    await clock.advanceAsync(0);
    for (let i = 51; i <= 60; i++) ctl.onServiceChange(undefined, svc(`s${i}`, `198.51.100.${i}`));
    await clock.advanceAsync(2000);
    expect(proxier.seen.map((s) => s.at)).toEqual([0, 0, 1000]);
    expect(proxier.seen[1]?.servicePorts.length).toBe(50);
    expect(proxier.seen[2]?.updated.length).toBe(10);
    await ctl.stop();
  });

  test("an add and delete within one window is no change and triggers nothing more", async () => {
    const { clock, proxier, ctl } = setup();
    ctl.onServicesSynced();
    ctl.onEndpointSlicesSynced();
    await clock.advanceAsync(0);
    ctl.onServiceChange(undefined, svc("tmp", "198.51.100.9"));
    ctl.onServiceChange(svc("tmp", "198.51.100.9"), undefined);
    await clock.advanceAsync(1000);
    expect(proxier.seen.every((s) => s.updated.length === 0)).toBe(true);
    await ctl.stop();
  });

  test("node label changes trigger a sync; the node reaches the proxier", async () => {
    const { clock, proxier, ctl } = setup();
    ctl.onServicesSynced();
    ctl.onEndpointSlicesSynced();
    await clock.advanceAsync(0);
    ctl.onNodeChange({ metadata: { name: "node-a", labels: { "topology.kubernetes.io/zone": "zone-a" } } });
    await clock.advanceAsync(1000);
    expect(proxier.seen.at(-1)?.node).toBe("node-a");
    const before = proxier.seen.length;
    ctl.onNodeChange({ metadata: { name: "node-a", labels: { "topology.kubernetes.io/zone": "zone-a" } } });
    await clock.advanceAsync(1000);
    expect(proxier.seen.length).toBe(before);
    await ctl.stop();
  });

  test("a failed sync is retried with backoff and the next success sees the changes", async () => {
    const { clock, proxier, ctl } = setup(2);
    ctl.onServiceChange(undefined, svc("a", "198.51.100.1"));
    ctl.onServicesSynced();
    ctl.onEndpointSlicesSynced();
    await clock.advanceAsync(10_000);
    expect(proxier.attempts).toBe(3);
    expect(proxier.seen.length).toBe(1);
    expect(proxier.seen[0]?.servicePorts).toEqual(["default/a:http"]);
    await ctl.firstSync();
    expect(ctl.syncCount).toBe(1);
    await ctl.stop();
  });

  test("hooks hear every requested sync and every success", async () => {
    const clock = new FakeClock(0);
    const proxier = recordingProxier(clock, 1);
    const events: string[] = [];
    const ctl = new SyncController({
      nodeName: "node-a",
      proxier,
      minSyncPeriodMs: 1000,
      syncPeriodMs: 30_000,
      clock,
      hooks: { queued: () => events.push("queued"), synced: () => events.push("synced") },
    });
    ctl.start();
    ctl.onServicesSynced();
    ctl.onEndpointSlicesSynced();
    await clock.advanceAsync(5000);
    ctl.onServiceChange(undefined, svc("a", "198.51.100.1"));
    await clock.advanceAsync(5000);
    expect(events).toEqual(["queued", "synced", "queued", "synced"]);
    expect(proxier.attempts).toBe(3);
    await ctl.stop();
  });
});
