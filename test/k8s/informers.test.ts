// The real informer stack (createApiSource over the client library's HTTP and auth) against
// the fake API server: delivery, filtering, sync signals, and survival of disconnects, 410s
// and outages without ever reporting a live object as deleted.

import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createApiRecorder } from "../../src/k8s/api-recorder.ts";
import { createApiSource } from "../../src/k8s/informers.ts";
import { loadKubeConfig } from "../../src/k8s/kubeconfig.ts";
import type { ClusterSource } from "../../src/k8s/source.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { FakeApiServer, type KObject, kubeconfigFor } from "../support/fake-apiserver.ts";
import { type RecordingHandler, recordingHandler } from "../support/recording-handler.ts";
import { settle, waitFor } from "../support/wait.ts";

const NODE = "node-a";
const PROXY_NAME = "service.kubernetes.io/service-proxy-name";
const HEADLESS = "service.kubernetes.io/headless";

function svc(name: string, labels: Record<string, string> = {}, port = 80): KObject {
  return {
    metadata: { name, namespace: "default", labels },
    spec: { clusterIP: "198.51.100.10", ports: [{ port }] },
  };
}

function slice(name: string, labels: Record<string, string> = {}, ip = "203.0.113.5"): KObject {
  return {
    metadata: {
      name,
      namespace: "default",
      labels: { "kubernetes.io/service-name": name.split("-")[0]!, ...labels },
    },
    addressType: "IPv4",
    endpoints: [{ addresses: [ip], conditions: { ready: true } }],
    ports: [{ port: 8080, protocol: "TCP" }],
  };
}

function node(name: string, zone = "z1"): KObject {
  return {
    metadata: { name, labels: { "topology.kubernetes.io/zone": zone } },
    spec: { podCIDR: "203.0.113.0/26" },
    status: { addresses: [{ type: "InternalIP", address: "192.0.2.10" }] },
  };
}

let server: FakeApiServer;
let source: ClusterSource | undefined;
let h: RecordingHandler;
let log: ReturnType<typeof memoryLogger>;

beforeEach(async () => {
  server = await FakeApiServer.start();
  h = recordingHandler();
  log = memoryLogger({ verbosity: 4 });
  source = undefined;
});

afterEach(async () => {
  await source?.stop();
  await server.close();
});

function kubeConfig(token?: string) {
  const loaded = loadKubeConfig({ kubeconfigPath: kubeconfigFor(server, token ? { token } : {}), env: {} });
  if (!loaded.ok) throw loaded.error;
  return loaded.kubeConfig;
}

async function startSource(token?: string): Promise<ClusterSource> {
  source = createApiSource({
    kubeConfig: kubeConfig(token),
    nodeName: NODE,
    logger: log,
    backoff: { initialMs: 20, maxMs: 200 },
  });
  await source.start(h);
  return source;
}

/** Every delete delivered, of any kind. */
function deletes(calls: readonly string[]): string[] {
  return calls.filter((c) => /^(svc|slice)- /.test(c) || c === "node-");
}

async function synced(): Promise<void> {
  await waitFor(
    () => h.calls.includes("svc synced") && h.calls.includes("slice synced"),
    5000,
    "both synced",
  );
}

describe("initial sync", () => {
  test("delivers the filtered initial objects, then each synced signal exactly once", async () => {
    server.create("Service", svc("web"));
    server.create("Service", svc("other-proxy", { [PROXY_NAME]: "cilium" }));
    server.create("Service", svc("dns", { [HEADLESS]: "" }));
    // Headless without the label: only the field selector keeps it out.
    server.create("Service", { ...svc("headless"), spec: { clusterIP: "None", ports: [{ port: 80 }] } });
    server.create("EndpointSlice", slice("web-abc"));
    server.create("EndpointSlice", slice("dns-xyz", { [HEADLESS]: "" }));
    server.create("EndpointSlice", slice("other-1", { [PROXY_NAME]: "cilium" }));
    server.create("Node", node(NODE));
    server.create("Node", node("node-b"));

    await startSource();
    await synced();
    await waitFor(() => h.node !== undefined, 5000, "node");

    const svcCalls = h.matching("svc");
    expect(svcCalls).toEqual(["svc+ default/web", "svc synced"]);
    expect(h.matching("slice")).toEqual(["slice~ default/web-abc", "slice synced"]);
    expect(h.matching("node")).toEqual([`node~ ${NODE}`]);
    // Plain API JSON reaches the handler, kind filled in even though list items lack it.
    const web = h.services.get("default/web")!;
    expect(web.kind).toBe("Service");
    expect(typeof web.metadata?.creationTimestamp).toBe("string");
    expect(web.spec?.ports).toEqual([{ port: 80 }]);
    // The selectors went to the server, as upstream sends them.
    const list = server.requestsFor("Service", "list")[0]!;
    expect(list.query.labelSelector).toBe(`!${HEADLESS},!${PROXY_NAME}`);
    expect(list.query.fieldSelector).toBe("spec.clusterIP!=None");
    expect(server.requestsFor("EndpointSlice", "list")[0]!.query.labelSelector).toBe(
      `!${HEADLESS},!${PROXY_NAME}`,
    );
    expect(server.requestsFor("Node", "list")[0]!.query.fieldSelector).toBe(`metadata.name=${NODE}`);
    await settle(100);
    expect(h.calls.filter((c) => c.endsWith("synced"))).toHaveLength(2);
  });

  test("synced comes even when there is nothing to list", async () => {
    await startSource();
    await synced();
    expect(h.calls).toEqual(expect.arrayContaining(["svc synced", "slice synced"]));
    expect(h.calls.filter((c) => !c.endsWith("synced"))).toEqual([]);
  });
});

describe("ServiceCIDRs (networking.k8s.io/v1)", () => {
  test("listed and watched cluster-wide, unfiltered: add, update and delete arrive", async () => {
    const cidr = (name: string, cidrs: string[]) => ({
      apiVersion: "networking.k8s.io/v1",
      kind: "ServiceCIDR",
      metadata: { name },
      spec: { cidrs },
    });
    server.create("ServiceCIDR", cidr("kubernetes", ["198.51.100.0/24"]));
    await startSource();
    await synced();
    await waitFor(() => h.calls.includes("cidr~ kubernetes"), 5000, "the listed ServiceCIDR");
    expect(server.requestsFor("ServiceCIDR", "list")[0]!.query.labelSelector).toBeUndefined();
    await waitFor(() => server.openWatches === 4, 5000, "four watches");
    server.create("ServiceCIDR", cidr("extra", ["203.0.113.0/24"]));
    server.delete("ServiceCIDR", cidr("extra", ["203.0.113.0/24"]));
    await waitFor(() => h.calls.includes("cidr- extra"), 5000, "the deleted ServiceCIDR");
    expect(h.matching("cidr")).toEqual(["cidr~ kubernetes", "cidr~ extra", "cidr- extra"]);
  });
});

describe("live changes", () => {
  test("create, update (with the previous object) and delete of Services and slices arrive", async () => {
    await startSource();
    await synced();
    await waitFor(() => server.openWatches === 4, 5000, "four watches");

    server.create("Service", svc("web"));
    server.create("EndpointSlice", slice("web-abc"));
    const created = server.get("Service", "default", "web")!;
    server.update("Service", svc("web", {}, 8080));
    const updated = server.get("Service", "default", "web")!;
    server.update("EndpointSlice", slice("web-abc", {}, "203.0.113.6"));
    server.delete("EndpointSlice", slice("web-abc"));
    server.delete("Service", svc("web"));

    await waitFor(() => h.calls.includes("svc- default/web"), 5000, "service delete");
    await waitFor(() => h.calls.includes("slice- default/web-abc"), 5000, "slice delete");
    const rv = (o: KObject) => o.metadata!.resourceVersion;
    expect(h.matching("svc").filter((c) => !c.endsWith("synced"))).toEqual([
      "svc+ default/web",
      `svc~ default/web rv ${rv(created)}->${rv(updated)}`,
      "svc- default/web",
    ]);
    expect(h.matching("slice").filter((c) => !c.endsWith("synced"))).toEqual([
      "slice~ default/web-abc",
      "slice~ default/web-abc",
      "slice- default/web-abc",
    ]);
  });

  test("filtered objects never arrive; a Service that gains the proxy-name label is deleted", async () => {
    server.create("Service", svc("web"));
    await startSource();
    await synced();
    await waitFor(() => server.openWatches === 4, 5000, "four watches");

    server.create("Service", svc("mine-not", { [PROXY_NAME]: "other" }));
    server.create("EndpointSlice", slice("dns-1", { [HEADLESS]: "" }));
    server.update("Service", svc("web", { [PROXY_NAME]: "other" }));
    await waitFor(() => h.calls.includes("svc- default/web"), 5000, "web leaves the selection");
    await settle(100);
    expect(h.calls.some((c) => c.includes("mine-not") || c.includes("dns-1"))).toBe(false);
  });

  test("this node's Node is followed through update and delete; other nodes are not", async () => {
    server.create("Node", node(NODE));
    await startSource();
    await waitFor(() => h.node !== undefined, 5000, "node");
    await waitFor(() => server.openWatches === 4, 5000, "four watches");

    server.create("Node", node("node-b"));
    server.update("Node", node(NODE, "z2"));
    await waitFor(
      () => h.node?.metadata?.labels?.["topology.kubernetes.io/zone"] === "z2",
      5000,
      "zone change",
    );
    server.delete("Node", node(NODE));
    await waitFor(() => h.calls.includes("node-"), 5000, "node delete");
    expect(h.matching("node")).toEqual([`node~ ${NODE}`, `node~ ${NODE}`, "node-"]);
  });
});

describe("surviving the API server", () => {
  test("a dropped watch is resumed from its resourceVersion: no relist, no deletes, later changes arrive", async () => {
    server.create("Service", svc("a"));
    server.create("Service", svc("b"));
    server.create("EndpointSlice", slice("a-1"));
    await startSource();
    await synced();
    await waitFor(() => server.openWatches === 4, 5000, "four watches");
    const watchesBefore = server.requestsFor("Service", "watch").length;

    server.disconnectWatches();
    // Changed while no watch is open: the resumed watch must replay it.
    server.update("Service", svc("a", {}, 81));
    await waitFor(() => server.requestsFor("Service", "watch").length > watchesBefore, 5000, "re-watch");
    await waitFor(() => h.calls.some((c) => c.startsWith("svc~ default/a")), 5000, "replayed update");
    server.create("Service", svc("c"));
    await waitFor(() => h.calls.includes("svc+ default/c"), 5000, "later create");

    expect(server.requestsFor("Service", "list")).toHaveLength(1);
    const rewatch = server.requestsFor("Service", "watch").at(-1)!;
    expect(Number(rewatch.query.resourceVersion)).toBeGreaterThan(0);
    expect(deletes(h.calls)).toEqual([]);
    expect(log.lines.some((l) => l.includes("Watch failed, will resume"))).toBe(true);
  });

  test("410 after compaction relists with a consistent read; live objects are not deleted", async () => {
    server.create("Service", svc("a"));
    server.create("EndpointSlice", slice("a-1"));
    await startSource();
    await synced();
    await waitFor(() => server.openWatches === 4, 5000, "four watches");

    server.compactHistory();
    server.disconnectWatches();
    await waitFor(() => server.requestsFor("Service", "list").length === 2, 5000, "service relist");
    await waitFor(() => server.requestsFor("EndpointSlice", "list").length === 2, 5000, "slice relist");
    await waitFor(() => server.openWatches === 4, 5000, "watches back");
    expect(server.requestsFor("Service", "list")[0]!.query.resourceVersion).toBe("0");
    expect(server.requestsFor("Service", "list")[1]!.query.resourceVersion).toBe("");

    server.update("Service", svc("a", {}, 90));
    await waitFor(() => h.calls.some((c) => c.startsWith("svc~ default/a")), 5000, "update after relist");
    expect(deletes(h.calls)).toEqual([]);
    expect(h.calls.filter((c) => c.endsWith("synced"))).toHaveLength(2);
  });

  test("after an outage with compaction, only objects deleted meanwhile are reported deleted", async () => {
    server.create("Service", svc("keep"));
    server.create("Service", svc("change"));
    server.create("Service", svc("gone"));
    server.create("EndpointSlice", slice("keep-1"));
    server.create("EndpointSlice", slice("gone-1"));
    await startSource();
    await synced();
    await waitFor(() => server.openWatches === 4, 5000, "four watches");
    const before = h.calls.length;

    server.setOutage(true);
    server.delete("Service", svc("gone"));
    server.delete("EndpointSlice", slice("gone-1"));
    server.update("Service", svc("change", {}, 99));
    server.create("Service", svc("new"));
    server.compactHistory();
    await waitFor(
      () => server.requests.filter((r) => r.kind === "Service").length > 3,
      5000,
      "retries in outage",
    );
    expect(h.calls.length).toBe(before);
    server.setOutage(false);

    await waitFor(() => h.calls.includes("svc- default/gone"), 5000, "gone deleted");
    await waitFor(() => h.calls.includes("slice- default/gone-1"), 5000, "slice deleted");
    await waitFor(() => h.calls.includes("svc+ default/new"), 5000, "new added");
    const after = h.calls.slice(before);
    expect(deletes(after).sort()).toEqual(["slice- default/gone-1", "svc- default/gone"]);
    expect(after.some((c) => c.startsWith("svc~ default/change"))).toBe(true);
    expect(after.some((c) => c.includes("keep"))).toBe(false);
    expect([...h.services.keys()].sort()).toEqual(["default/change", "default/keep", "default/new"]);
    expect(h.services.get("default/change")!.spec?.ports?.[0]?.port).toBe(99);
  });

  test("an ERROR 410 event on an open watch relists too", async () => {
    server.create("Service", svc("a"));
    await startSource();
    await synced();
    await waitFor(() => server.openWatches === 4, 5000, "four watches");
    server.expireNextWatch();
    server.disconnectWatches();
    // Whichever watch reconnects first gets the 410 and relists; the others resume.
    const lists = () => server.requests.filter((r) => r.method === "GET" && !r.watch).length;
    await waitFor(() => lists() === 4, 5000, "one relist");
    await waitFor(() => server.openWatches === 4, 5000, "watches back");
    expect(deletes(h.calls)).toEqual([]);
    expect(log.lines.some((l) => l.includes("Watch expired, relisting"))).toBe(true);
  });

  test("the API server being down at start: synced arrives once it is back", async () => {
    server.create("Service", svc("a"));
    server.setOutage(true);
    await startSource();
    expect(h.calls).toEqual([]);
    expect(log.lines.some((l) => l.includes("Failed to list"))).toBe(true);
    server.setOutage(false);
    await synced();
    expect(h.matching("svc")).toEqual(["svc+ default/a", "svc synced"]);
  });

  test("a throwing handler does not stop later deliveries", async () => {
    await startSource();
    await synced();
    await waitFor(() => server.openWatches === 4, 5000, "four watches");
    const original = h.onServiceChange;
    h.onServiceChange = (prev, cur) => {
      original(prev, cur);
      if (cur?.metadata?.name === "boom") throw new Error("handler bug");
    };
    server.create("Service", svc("boom"));
    server.create("Service", svc("after"));
    await waitFor(() => h.calls.includes("svc+ default/after"), 5000, "delivery after the throw");
    expect(log.lines.some((l) => l.includes("Event handler failed") && l.includes("handler bug"))).toBe(true);
  });

  test("stop closes every watch and no handler runs afterwards", async () => {
    await startSource();
    await synced();
    await waitFor(() => server.openWatches === 4, 5000, "four watches");
    await source!.stop();
    const count = h.calls.length;
    server.create("Service", svc("late"));
    await waitFor(() => server.openWatches === 0, 5000, "watches closed");
    await settle(100);
    expect(h.calls.length).toBe(count);
  });

  test("a bearer token from the kubeconfig is sent", async () => {
    await server.close();
    server = await FakeApiServer.start({ token: "t0ken" });
    server.create("Service", svc("a"));
    await startSource("t0ken");
    await synced();
    expect(h.calls).toContain("svc+ default/a");
  });
});

describe("events", () => {
  test("the birth cry is posted as an events.k8s.io/v1 Event on the Node", async () => {
    const recorder = createApiRecorder({ kubeConfig: kubeConfig(), nodeName: NODE, logger: log });
    expect(await recorder.postBirthCry(NODE)).toBe(true);
    const [ev] = server.postedEvents;
    expect(ev).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { namespace: "default" },
      reason: "Starting",
      action: "StartKubeProxy",
      type: "Normal",
      reportingController: "kube-proxy",
      reportingInstance: `kube-proxy-${NODE}`,
      regarding: { kind: "Node", apiVersion: "v1", name: NODE, uid: NODE },
    });
    // Upstream's note is empty, and Go's omitempty leaves it out of the body.
    expect(ev).not.toHaveProperty("note");
    expect(ev!.metadata!.name!.startsWith(`${NODE}.`)).toBe(true);
    expect(ev!.eventTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  test("a forbidden birth cry is logged at v(2), not as an error, and record() never throws", async () => {
    server.denyEvents = true;
    const recorder = createApiRecorder({ kubeConfig: kubeConfig(), nodeName: NODE, logger: log });
    expect(await recorder.postBirthCry(NODE)).toBe(false);
    recorder.record({
      ref: { kind: "Service", namespace: "default", name: "web" },
      type: "Warning",
      reason: "InvalidIP",
      action: "Sync",
      message: "bad",
    });
    await recorder.flush();
    expect(server.postedEvents).toEqual([]);
    expect(log.lines.filter((l) => l.includes("Not permitted to post events"))).toHaveLength(2);
    expect(log.lines.some((l) => l.startsWith("E"))).toBe(false);
  });

  test("an unreachable API server makes record() log and move on", async () => {
    const kc = kubeConfig();
    await server.close();
    const recorder = createApiRecorder({ kubeConfig: kc, nodeName: NODE, logger: log });
    expect(await recorder.postBirthCry(NODE)).toBe(false);
    expect(log.lines.some((l) => l.includes("Could not post event"))).toBe(true);
    server = await FakeApiServer.start();
  });
});

describe("resync (configSyncPeriod)", () => {
  test("re-delivers every cached Service and Node as an update of itself, without a new list", async () => {
    server.create("Service", svc("web"));
    server.create("EndpointSlice", slice("web-abc"));
    server.create("Node", node(NODE));
    source = createApiSource({
      kubeConfig: kubeConfig(),
      nodeName: NODE,
      logger: log,
      backoff: { initialMs: 20, maxMs: 200 },
      resyncPeriodMs: 100,
    });
    await source.start(h);
    await synced();
    const lists = server.requests.filter((r) => !r.watch).length;
    await waitFor(
      () => h.calls.filter((c) => c.startsWith("svc~ default/web")).length >= 2,
      5000,
      "two resyncs",
    );
    const svcResync = h.calls.find((c) => c.startsWith("svc~ default/web"))!;
    // Same object on both sides: the same resourceVersion.
    const [, from, to] = /rv (\S+)->(\S+)/.exec(svcResync)!;
    expect(from).toBe(to);
    // EndpointSlices are not: their cache keeps only what a deletion needs (cached-forms.ts),
    // which must never reach the proxy as a slice's current state.
    expect(h.calls.filter((c) => c === "slice~ default/web-abc").length).toBe(1);
    expect(h.calls.filter((c) => c === `node~ ${NODE}`).length).toBeGreaterThanOrEqual(2);
    expect(server.requests.filter((r) => !r.watch).length).toBe(lists);
    await source.stop();
    const after = h.calls.length;
    await settle(300);
    expect(h.calls.length).toBe(after);
    source = undefined;
  });
});
