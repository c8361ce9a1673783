// The whole mode-independent pipeline against the fake API server: real informers, trackers,
// the sync controller and its runner. Proves that watch disconnects and 410 relists never
// produce a sync that is missing a Service that still exists, and that the binary's dry run
// reads the cluster from the API server.

import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createApiSource } from "../../src/k8s/informers.ts";
import { loadKubeConfig } from "../../src/k8s/kubeconfig.ts";
import type { ClusterSource } from "../../src/k8s/source.ts";
import { parseStateDocuments } from "../../src/k8s/state-file.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import type { Proxier, SyncInput } from "../../src/proxy/proxier.ts";
import { SyncController } from "../../src/proxy/sync-controller.ts";
import { runBinaryAsync, tempDir } from "../support/binary.ts";
import { FakeApiServer, type FakeKind, type KObject, kubeconfigFor } from "../support/fake-apiserver.ts";
import { waitFor } from "../support/wait.ts";

const example = parseStateDocuments(readFileSync("examples/cluster.yaml", "utf8"), "examples/cluster.yaml");

function load(server: FakeApiServer): void {
  const put = (kind: FakeKind, objs: readonly object[]) => {
    for (const o of objs) server.create(kind, structuredClone(o) as KObject);
  };
  put("Service", example.services);
  put("EndpointSlice", example.endpointSlices);
  put("Node", example.nodes);
}

/** Records the set of service ports each sync programmed. */
function syncLog(): Proxier & { syncs: string[][] } {
  const p = {
    syncs: [] as string[][],
    async sync(input: SyncInput) {
      p.syncs.push([...input.services.keys()].sort());
    },
  };
  return p;
}

let server: FakeApiServer;
let source: ClusterSource | undefined;
let controller: SyncController | undefined;

beforeEach(async () => {
  server = await FakeApiServer.start();
  load(server);
});

afterEach(async () => {
  await source?.stop();
  await controller?.stop();
  await server.close();
});

async function startPipeline() {
  const loaded = loadKubeConfig({ kubeconfigPath: kubeconfigFor(server), env: {} });
  if (!loaded.ok) throw loaded.error;
  const proxier = syncLog();
  const log = memoryLogger();
  controller = new SyncController({
    nodeName: "node-a",
    proxier,
    minSyncPeriodMs: 10,
    syncPeriodMs: 60_000,
    logger: log,
  });
  controller.start();
  source = createApiSource({
    kubeConfig: loaded.kubeConfig,
    nodeName: "node-a",
    logger: log,
    backoff: { initialMs: 20, maxMs: 200 },
  });
  await source.start(controller);
  await waitFor(() => proxier.syncs.length > 0, 5000, "first sync");
  return proxier;
}

describe("API server -> informers -> trackers -> syncs", () => {
  test("the first sync already holds every service port (no partial first sync)", async () => {
    const proxier = await startPipeline();
    expect(proxier.syncs[0]?.length).toBe(7);
  });

  test("create, update and delete reach the proxier", async () => {
    const proxier = await startPipeline();
    server.create("Service", {
      metadata: { name: "extra", namespace: "default" },
      spec: {
        type: "ClusterIP",
        clusterIP: "198.51.100.60",
        clusterIPs: ["198.51.100.60"],
        ports: [{ name: "p", port: 81 }],
      },
    });
    await waitFor(() => proxier.syncs.at(-1)?.includes("default/extra:p") === true, 5000, "extra added");
    const web = structuredClone(example.services[0]) as KObject & { spec: { ports: { name: string }[] } };
    web.spec.ports[0]!.name = "www";
    server.update("Service", web);
    await waitFor(() => proxier.syncs.at(-1)?.includes("default/web:www") === true, 5000, "web renamed port");
    expect(proxier.syncs.at(-1)).not.toContain("default/web:http");
    server.delete("Service", { metadata: { name: "extra", namespace: "default" } });
    await waitFor(() => proxier.syncs.at(-1)?.includes("default/extra:p") === false, 5000, "extra deleted");
  });

  test("a disconnect and then a 410 relist never sync a view missing a live service", async () => {
    const proxier = await startPipeline();
    server.disconnectWatches();
    server.create("Service", {
      metadata: { name: "after-disconnect", namespace: "default" },
      spec: {
        type: "ClusterIP",
        clusterIP: "198.51.100.61",
        clusterIPs: ["198.51.100.61"],
        ports: [{ name: "p", port: 82 }],
      },
    });
    await waitFor(
      () => proxier.syncs.at(-1)?.includes("default/after-disconnect:p") === true,
      5000,
      "after disconnect",
    );
    const listsBefore = server.requestsFor("Service", "list").length;
    server.compactHistory();
    server.disconnectWatches();
    server.create("Service", {
      metadata: { name: "after-410", namespace: "default" },
      spec: {
        type: "ClusterIP",
        clusterIP: "198.51.100.62",
        clusterIPs: ["198.51.100.62"],
        ports: [{ name: "p", port: 83 }],
      },
    });
    await waitFor(() => proxier.syncs.at(-1)?.includes("default/after-410:p") === true, 5000, "after 410");
    expect(server.requestsFor("Service", "list").length).toBeGreaterThan(listsBefore);
    // Every sync after the first holds all seven original service ports.
    for (const s of proxier.syncs) expect(s.filter((id) => !id.includes("after-")).length).toBe(7);
  });
});

describe("dist/kube-proxy-ts --dry-run against the API server", () => {
  test("lists the service ports read from the API and dumps the state it saw", async () => {
    const dir = tempDir();
    const dump = join(dir, "dump.yaml");
    const r = await runBinaryAsync([
      "--dry-run",
      `--kubeconfig=${kubeconfigFor(server)}`,
      "--hostname-override=node-a",
      "--output=json",
      `--dump-state=${dump}`,
    ]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.checks.find((c: { name: string }) => c.name === "cluster state").detail).toContain(
      "6 Services, 5 EndpointSlices listed",
    );
    expect(report.services.length).toBe(7);
    const shop = report.services.find((s: { name: string }) => s.name === "default/shop:http");
    expect(shop.nodePort).toBe(30080);
    expect(shop.endpoints.find((e: { local: boolean }) => e.local).endpoint).toBe("203.0.113.30:8080");
    const dumped = parseStateDocuments(readFileSync(dump, "utf8"), dump);
    expect(dumped.services.length).toBe(6);
    expect(dumped.nodes[0]?.metadata?.name).toBe("node-a");
    expect(dumped.hostState?.kernelVersion).toBeTruthy();
  });

  test("an unreachable API server fails the cluster-state check (exit 3), nothing is synced", async () => {
    const dir = tempDir();
    const kc = join(dir, "kc.yaml");
    writeFileSync(kc, readFileSync(kubeconfigFor(server), "utf8"));
    await server.close();
    server = await FakeApiServer.start(); // a fresh one on another port; the old address is dead
    const r = await runBinaryAsync(["--dry-run", `--kubeconfig=${kc}`, "--output=json"], {
      timeoutMs: 60_000,
    });
    expect(r.code).toBe(3);
    const report = JSON.parse(r.stdout);
    const check = report.checks.find((c: { name: string }) => c.name === "cluster state");
    expect(check.ok).toBe(false);
    expect(check.detail).toContain("initial lists not complete");
    expect(report.services).toEqual([]);
  }, 90_000);
});
