// The /debug/state handler of a real run: the live view by default, a --state snapshot with
// ?format=snapshot (JSON, or YAML with output=yaml; the host probed unless host=false), 400 for
// anything else; and it answers while a sync is under way, showing that sync as in progress.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { debugStateHandler } from "../../src/app/debug-state.ts";
import { FakeExec, ok } from "../../src/exec/testing/fake.ts";
import { createIpsetClient } from "../../src/host/ipset/client.ts";
import { createFakeKernel } from "../../src/host/kernel/testing/fake.ts";
import { recordingHandler } from "../../src/k8s/object-store.ts";
import { createSnapshotSource } from "../../src/k8s/snapshot-source.ts";
import { parseStateDocuments } from "../../src/k8s/state-file.ts";
import { SyncHistory } from "../../src/proxy/debug-state/history.ts";
import { debugStateSchema } from "../../src/proxy/debug-state/schema.ts";
import { SyncController } from "../../src/proxy/sync-controller.ts";

const EXAMPLE = parseStateDocuments(readFileSync("examples/cluster.yaml", "utf8"), "examples/cluster.yaml");

/** A controller fed the example whose proxier waits, each sync, until released. */
async function setup() {
  const waiting: (() => void)[] = [];
  let entered: () => void = () => {};
  /** Resolves once a sync has reached the proxier (after the maps are folded in). */
  const inProxier = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const history = new SyncHistory();
  const ctl = new SyncController({
    nodeName: "node-a",
    proxier: {
      sync: (input) =>
        new Promise<void>((resolve) => {
          input.note?.family("IPv4", true);
          waiting.push(resolve);
          entered();
        }),
    },
    minSyncPeriodMs: 0,
    syncPeriodMs: 3_600_000,
    history,
  });
  const { handler, store } = recordingHandler(ctl, { endpointSlices: false });
  await createSnapshotSource(EXAMPLE, "node-a").start(handler);
  const exec = new FakeExec()
    .on("iptables-save", () => ok("*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n"))
    .on("iptables", () => ok("iptables v1.8.9 (nf_tables)\n"));
  const answer = debugStateHandler({
    nodeName: "node-a",
    mode: "iptables",
    running: {
      families: ["IPv4"],
      describe: () => [{ component: "iptables", chosen: "nft", reason: "test" }],
    },
    synced: ctl,
    history,
    delivered: store,
    host: { exec, kernel: createFakeKernel({ version: "6.1.0" }), ipset: createIpsetClient({ exec }) },
  });
  const release = () => {
    for (const r of waiting.splice(0)) r();
  };
  return { ctl, answer, release, exec, inProxier };
}

const q = (s: string) => new URLSearchParams(s);

describe("/debug/state handler", () => {
  test("answers while a sync runs, and shows it in progress; then the finished sync", async () => {
    const { ctl, answer, release, inProxier } = await setup();
    const syncing = ctl.syncNow();
    // In progress from the start, before the proxier has been reached...
    const opened = debugStateSchema.parse(JSON.parse((await answer(q(""))).body));
    expect(opened.syncInProgress?.number).toBe(1);
    // ...and while the proxier runs.
    await inProxier;
    const during = await answer(q(""));
    expect(during.status).toBe(200);
    const s = debugStateSchema.parse(JSON.parse(during.body));
    expect(s.syncInProgress?.number).toBe(1);
    expect(s.syncs).toEqual([]);
    expect(s.backends).toEqual([{ component: "iptables", chosen: "nft", reason: "test" }]);
    release();
    await syncing;
    const after = debugStateSchema.parse(JSON.parse((await answer(q("format=state"))).body));
    expect(after.syncInProgress).toBeNull();
    expect(after.syncs.map((r) => [r.number, r.kind, r.result])).toEqual([[1, "full", "ok"]]);
  });

  test("?format=snapshot is a --state file, with the host's state unless host=false", async () => {
    const { answer } = await setup();
    const full = await answer(q("format=snapshot"));
    expect(full.contentType).toBe("application/json");
    const docs = parseStateDocuments(full.body, "snapshot.json");
    expect(docs.services).toHaveLength(EXAMPLE.services.length);
    expect(docs.endpointSlices.map((s) => s.metadata?.name).sort()).toEqual(
      EXAMPLE.endpointSlices.map((s) => s.metadata?.name).sort(),
    );
    expect(docs.hostState?.iptablesSave).toContain("KUBE-SERVICES");
    const yaml = await answer(q("format=snapshot&output=yaml&host=false"));
    expect(yaml.contentType).toBe("application/yaml");
    const back = parseStateDocuments(yaml.body, "snapshot.yaml");
    expect(back.hostState).toBeUndefined();
    expect(back.services).toHaveLength(EXAMPLE.services.length);
  });

  test("snapshots asked for together share one probe of the host", async () => {
    const { answer, exec } = await setup();
    const answers = await Promise.all([1, 2, 3].map(() => answer(q("format=snapshot"))));
    expect(answers.every((a) => a.body === answers[0]?.body)).toBe(true);
    expect(exec.callsTo("iptables-save")).toHaveLength(1);
    await answer(q("format=snapshot"));
    expect(exec.callsTo("iptables-save")).toHaveLength(2);
  });

  test("an unknown format or output is a 400 that names the choices", async () => {
    const { answer } = await setup();
    const bad = await answer(q("format=xml"));
    expect([bad.status, bad.body]).toEqual([400, 'unknown format "xml": state or snapshot\n']);
    const badOut = await answer(q("format=snapshot&output=toml"));
    expect([badOut.status, badOut.body]).toEqual([400, 'unknown output "toml": json or yaml\n']);
  });
});
