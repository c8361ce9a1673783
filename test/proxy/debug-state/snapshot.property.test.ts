// Property: the /debug/state snapshot reproduces the node's view whatever the API objects hold.
// Generated (often damaged) Services, EndpointSlices, a Node and ServiceCIDRs
// (test/support/hostile-objects.ts) go into one sync controller; its snapshot, rendered as a
// --state file and read back into a second controller, gives the same service ports and
// endpoints in the /debug/state view; and each rebuilt EndpointSlice parses back to the slice
// it was rebuilt from. Fixed seed, modest run counts.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { recordingHandler, renderStateFile } from "../../../src/k8s/object-store.ts";
import type { NodeObject } from "../../../src/k8s/objects.ts";
import { createSnapshotSource } from "../../../src/k8s/snapshot-source.ts";
import { parseStateDocuments, type StateDocuments } from "../../../src/k8s/state-file.ts";
import { SyncHistory } from "../../../src/proxy/debug-state/history.ts";
import { rebuiltSlice, snapshotObjects } from "../../../src/proxy/debug-state/snapshot.ts";
import { debugState } from "../../../src/proxy/debug-state/view.ts";
import { parseSlice } from "../../../src/proxy/endpoint-slice.ts";
import { ProblemList } from "../../../src/proxy/problems.ts";
import { SyncController } from "../../../src/proxy/sync-controller.ts";
import { clusterArb, PROPERTY_SEED } from "../../support/hostile-objects.ts";
import type { ClusterObjects } from "../../support/hostile-sync.ts";

const NODE = "node-a";
const RUNS = 40;

async function controllerOf(docs: StateDocuments) {
  const ctl = new SyncController({
    nodeName: NODE,
    proxier: { sync: async () => {} },
    minSyncPeriodMs: 0,
    syncPeriodMs: 3_600_000,
  });
  const { handler, store } = recordingHandler(ctl, { endpointSlices: false });
  await createSnapshotSource(docs, NODE).start(handler);
  await ctl.syncNow();
  const view = () =>
    debugState({
      nodeName: NODE,
      mode: "iptables",
      families: ["IPv4", "IPv6"],
      backends: [],
      synced: ctl,
      history: new SyncHistory(),
    }).services;
  return { ctl, store, view };
}

function documents(c: ClusterObjects): StateDocuments {
  // The hostile Node is this node, whatever name it was generated with.
  const node = c.node
    ? ({ ...c.node, metadata: { ...(c.node.metadata as object), name: NODE } } as NodeObject)
    : undefined;
  return {
    services: [...c.services],
    endpointSlices: [...c.slices],
    nodes: node ? [node] : [],
    serviceCIDRs: [...c.serviceCIDRs],
    ignored: [],
  } as unknown as StateDocuments;
}

describe("/debug/state snapshot (property)", () => {
  test("read back into another controller, the snapshot gives the same view", async () => {
    await fc.assert(
      fc.asyncProperty(clusterArb, async (c) => {
        const first = await controllerOf(documents(c));
        const text = renderStateFile(
          snapshotObjects(first.store, first.ctl.endpointSlices()),
          undefined,
          "json",
        );
        const again = await controllerOf(parseStateDocuments(text, "snapshot.json"));
        expect(again.view()).toEqual(first.view());
      }),
      { numRuns: RUNS, seed: PROPERTY_SEED },
    );
  }, 60_000);

  test("each rebuilt slice parses back to the slice it was rebuilt from", async () => {
    await fc.assert(
      fc.asyncProperty(clusterArb, async (c) => {
        const { ctl } = await controllerOf(documents(c));
        for (const held of ctl.endpointSlices()) {
          const obj = rebuiltSlice(held);
          if (!obj) {
            expect(held.slice.endpoints).toEqual([]);
            continue;
          }
          const family = obj.addressType as "IPv4" | "IPv6";
          const problems = new ProblemList({ kind: "EndpointSlice", name: held.name });
          const again = parseSlice(obj, { family, problems, serviceRef: problems.ref, nodeName: NODE });
          expect(again.fingerprint).toBe(held.slice.fingerprint);
          expect(again.endpoints.map((e) => e.isLocal)).toEqual(held.slice.endpoints.map((e) => e.isLocal));
        }
      }),
      { numRuns: RUNS, seed: PROPERTY_SEED },
    );
  }, 60_000);
});
