// The /debug/state answer and its snapshot, from a real sync controller fed examples/cluster.yaml:
// the answer follows the documented schema, shows each family's service ports and endpoints,
// the syncs (a change afterwards is a partial one) and what is pending; the snapshot read back
// into another controller gives the same view, and holds nothing kube-proxy does not read.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { recordingHandler, renderStateFile } from "../../../src/k8s/object-store.ts";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { createSnapshotSource } from "../../../src/k8s/snapshot-source.ts";
import { parseStateDocuments } from "../../../src/k8s/state-file.ts";
import { SyncHistory } from "../../../src/proxy/debug-state/history.ts";
import { debugStateSchema } from "../../../src/proxy/debug-state/schema.ts";
import { snapshotObjects } from "../../../src/proxy/debug-state/snapshot.ts";
import { debugState } from "../../../src/proxy/debug-state/view.ts";
import type { Proxier } from "../../../src/proxy/proxier.ts";
import { SyncController } from "../../../src/proxy/sync-controller.ts";

const EXAMPLE = parseStateDocuments(readFileSync("examples/cluster.yaml", "utf8"), "examples/cluster.yaml");

/** A proxier for both families that syncs in full the first time, then partially, as the modes do. */
function notingProxier(): Proxier {
  let synced = false;
  return {
    async sync(input) {
      for (const family of ["IPv4", "IPv6"] as const)
        input.note?.family(family, !synced, { count: synced ? 3 : 40, unit: "rules" });
      synced = true;
    },
  };
}

async function loaded(docs = EXAMPLE) {
  const history = new SyncHistory();
  const ctl = new SyncController({
    nodeName: "node-a",
    proxier: notingProxier(),
    minSyncPeriodMs: 0,
    syncPeriodMs: 3_600_000,
    history,
  });
  const { handler, store } = recordingHandler(ctl, { endpointSlices: false });
  await createSnapshotSource(docs, "node-a").start(handler);
  await ctl.syncNow();
  const state = () =>
    debugState({
      nodeName: "node-a",
      mode: "iptables",
      families: ["IPv4", "IPv6"],
      backends: [{ component: "iptables", chosen: "nft", reason: "only iptables-nft is installed" }],
      synced: ctl,
      history,
    });
  const snapshot = () => snapshotObjects(store, ctl.endpointSlices());
  return { ctl, handler, store, state, snapshot };
}

describe("/debug/state view", () => {
  test("the answer follows the schema and shows the synced service ports with their endpoints", async () => {
    const { state } = await loaded();
    const s = debugStateSchema.parse(state());
    expect(s.mode).toBe("iptables");
    expect(s.backends).toEqual([
      { component: "iptables", chosen: "nft", reason: "only iptables-nft is installed" },
    ]);
    expect(s.initialized).toBe(true);
    expect(s.syncInProgress).toBeNull();
    expect(s.services.IPv4?.map((p) => p.name)).toEqual([
      "default/pending:grpc",
      "default/shop:http",
      "default/web:http",
      "ingress/ingress:https",
      "kube-system/dns:dns",
      "kube-system/dns:dns-tcp",
      "monitoring/metrics:metrics",
    ]);
    expect(s.services.IPv6).toEqual([]);
    const web = s.services.IPv4?.find((p) => p.name === "default/web:http");
    expect(web).toMatchObject({ namespace: "default", service: "web", type: "ClusterIP", port: 80 });
    expect(web?.endpoints.map((e) => [e.port, e.local, e.ready])).toEqual([
      [8080, true, true],
      [8080, false, true],
    ]);
    expect(s.syncs).toHaveLength(1);
    expect(s.syncs[0]).toMatchObject({ number: 1, kind: "full", result: "ok", changedServices: 6 });
  });

  test("a change is pending until the next sync, which is a partial one", async () => {
    const { ctl, handler, state } = await loaded();
    const raw = EXAMPLE.endpointSlices.find((s) => s.metadata?.name === "web-abc12") as EndpointSliceObject;
    const moved: EndpointSliceObject = {
      ...raw,
      endpoints: [
        {
          addresses: ["192.0.2.99"],
          nodeName: "node-a",
          conditions: { ready: false, serving: true, terminating: true },
        },
      ],
    };
    handler.onEndpointSliceChange(moved, false);
    expect(state().pending).toEqual({ services: [], endpoints: ["default/web"] });
    await ctl.syncNow();
    const s = state();
    expect(s.pending).toEqual({ services: [], endpoints: [] });
    expect(s.syncs.map((r) => [r.number, r.kind, r.changedEndpoints])).toEqual([
      [2, "partial", 1],
      [1, "full", 5],
    ]);
    expect(s.services.IPv4?.find((p) => p.name === "default/web:http")?.endpoints).toEqual([
      {
        ip: "192.0.2.99",
        port: 8080,
        ready: false,
        serving: true,
        terminating: true,
        local: true,
        nodeName: "node-a",
      },
    ]);
  });

  test("the snapshot read back into another controller gives the same view, in JSON and YAML", async () => {
    const first = await loaded();
    for (const format of ["json", "yaml"] as const) {
      const text = renderStateFile(first.snapshot(), undefined, format);
      const again = await loaded(parseStateDocuments(text, `snapshot.${format}`));
      expect(again.state().services).toEqual(first.state().services);
      // And the snapshot of the copy is the snapshot itself.
      expect(renderStateFile(again.snapshot(), undefined, format)).toBe(text);
    }
  });

  test("the snapshot holds no managedFields, no last-applied copy and no annotation kube-proxy does not read", async () => {
    const web = EXAMPLE.services.find((s) => s.metadata?.name === "web") as ServiceObject;
    const secretive = {
      ...web,
      metadata: {
        ...web.metadata,
        managedFields: [{ manager: "kubectl", operation: "Apply", fieldsV1: { "f:spec": {} } }],
        annotations: {
          "kubectl.kubernetes.io/last-applied-configuration":
            '{"metadata":{"annotations":{"token":"s3cr3t"}}}',
          "example.com/token": "s3cr3t",
          "service.kubernetes.io/topology-mode": "Auto",
        },
      },
    };
    const node = EXAMPLE.nodes[0]!;
    const docs = {
      ...EXAMPLE,
      services: EXAMPLE.services.map((s) => (s === web ? secretive : s)),
      nodes: [
        {
          ...node,
          metadata: {
            ...node.metadata,
            annotations: { "example.com/secret": "s3cr3t" },
            managedFields: [{}],
          },
          status: { ...(node.status as object), images: [{ names: ["registry.example/app@sha256:00"] }] },
        },
      ],
    };
    const { snapshot } = await loaded(docs);
    const text = renderStateFile(snapshot(), undefined, "json");
    expect(text).not.toContain("managedFields");
    expect(text).not.toContain("last-applied-configuration");
    expect(text).not.toContain("s3cr3t");
    expect(text).not.toContain("images");
    const back = parseStateDocuments(text, "snapshot.json");
    const kept = back.services.find((s) => s.metadata?.name === "web")?.metadata;
    expect(kept?.annotations).toEqual({ "service.kubernetes.io/topology-mode": "Auto" });
    expect(back.nodes[0]?.metadata?.labels).toEqual(node.metadata?.labels);
  });
});
