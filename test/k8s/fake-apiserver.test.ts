import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { FakeApiServer, type KObject } from "../support/fake-apiserver.ts";
import { waitFor } from "../support/wait.ts";

interface OpenWatch {
  events: { type: string; object: KObject }[];
  /** "end": the server finished the response; "error": the stream broke. */
  ended: Promise<"end" | "error">;
  close(): void;
}

async function openWatch(
  server: FakeApiServer,
  path: string,
  query: Record<string, string>,
): Promise<OpenWatch> {
  const ctl = new AbortController();
  const url = `${server.url}${path}?${new URLSearchParams({ watch: "true", ...query })}`;
  const res = await fetch(url, { signal: ctl.signal });
  expect(res.status).toBe(200);
  const events: OpenWatch["events"] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const ended = (async (): Promise<"end" | "error"> => {
    let buf = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return "end";
        buf += decoder.decode(value, { stream: true });
        for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
          events.push(JSON.parse(buf.slice(0, nl)));
          buf = buf.slice(nl + 1);
        }
      }
    } catch {
      return "error";
    }
  })();
  return { events, ended, close: () => ctl.abort() };
}

function svc(name: string, labels: Record<string, string> = {}, ns = "default"): KObject {
  return {
    metadata: { name, namespace: ns, labels },
    spec: { clusterIP: "203.0.113.1", ports: [{ port: 80 }] },
  };
}

async function getJson(server: FakeApiServer, path: string, query: Record<string, string> = {}) {
  const res = await fetch(`${server.url}${path}?${new URLSearchParams(query)}`);
  return { status: res.status, body: (await res.json()) as KObject };
}

function names(list: KObject): string[] {
  return (list.items as KObject[]).map((i) => i.metadata!.name!).sort();
}

let server: FakeApiServer;
let watches: OpenWatch[] = [];

beforeEach(async () => {
  server = await FakeApiServer.start();
  watches = [];
});

afterEach(async () => {
  for (const w of watches) w.close();
  await server.close();
});

async function watch(path: string, query: Record<string, string>): Promise<OpenWatch> {
  const w = await openWatch(server, path, query);
  watches.push(w);
  return w;
}

describe("list", () => {
  test("returns a typed list with the current resourceVersion and items without kind", async () => {
    server.create("Service", svc("a"));
    server.create("Service", svc("b", {}, "other"));
    const { status, body } = await getJson(server, "/api/v1/services");
    expect(status).toBe(200);
    expect(body.kind).toBe("ServiceList");
    expect(body.apiVersion).toBe("v1");
    expect(body.metadata!.resourceVersion).toBe(server.resourceVersion);
    expect(names(body)).toEqual(["a", "b"]);
    expect((body.items as KObject[])[0]!.kind).toBeUndefined();
    const ns = await getJson(server, "/api/v1/namespaces/other/services");
    expect(names(ns.body)).toEqual(["b"]);
  });

  test("label selectors: !key, key, key=value, key!=value and comma-AND", async () => {
    server.create("Service", svc("plain"));
    server.create("Service", svc("proxied", { "service.kubernetes.io/service-proxy-name": "other" }));
    server.create("Service", svc("headless", { "service.kubernetes.io/headless": "" }));
    server.create("Service", svc("web", { app: "web" }));
    server.create("Service", svc("db", { app: "db" }));
    const sel = async (labelSelector: string) =>
      names((await getJson(server, "/api/v1/services", { labelSelector })).body);
    expect(await sel("!service.kubernetes.io/service-proxy-name")).toEqual([
      "db",
      "headless",
      "plain",
      "web",
    ]);
    expect(await sel("!service.kubernetes.io/headless,!service.kubernetes.io/service-proxy-name")).toEqual([
      "db",
      "plain",
      "web",
    ]);
    expect(await sel("app")).toEqual(["db", "web"]);
    expect(await sel("app=web")).toEqual(["web"]);
    expect(await sel("app!=web")).toEqual(["db", "headless", "plain", "proxied"]);
    expect(await sel("app in (web,db),app!=db")).toEqual(["web"]);
  });

  test("field selector metadata.name picks one Node; a GET by name works too", async () => {
    server.create("Node", { metadata: { name: "node-a" } });
    server.create("Node", { metadata: { name: "node-b" } });
    const { body } = await getJson(server, "/api/v1/nodes", { fieldSelector: "metadata.name=node-b" });
    expect(names(body)).toEqual(["node-b"]);
    const one = await getJson(server, "/api/v1/nodes/node-a");
    expect(one.body.metadata!.name).toBe("node-a");
    expect((await getJson(server, "/api/v1/nodes/missing")).status).toBe(404);
  });

  test("a resourceVersion older than the history is 410 Expired", async () => {
    server.create("Service", svc("a"));
    const old = server.resourceVersion;
    server.compactHistory();
    const { status, body } = await getJson(server, "/api/v1/services", { resourceVersion: old });
    expect(status).toBe(410);
    expect(body.reason).toBe("Expired");
    expect((await getJson(server, "/api/v1/services", { resourceVersion: "0" })).status).toBe(200);
  });

  test("the request log records method, path and query", async () => {
    await getJson(server, "/apis/discovery.k8s.io/v1/endpointslices", { labelSelector: "x" });
    expect(server.requests).toEqual([
      {
        method: "GET",
        path: "/apis/discovery.k8s.io/v1/endpointslices",
        query: { labelSelector: "x" },
        kind: "EndpointSlice",
        watch: false,
      },
    ]);
    expect(server.requestsFor("EndpointSlice", "list")).toHaveLength(1);
  });
});

describe("watch", () => {
  test("from a resourceVersion: replays only later changes, then streams live ones", async () => {
    server.create("Service", svc("before"));
    const rv = server.resourceVersion;
    server.create("Service", svc("after"));
    const w = await watch("/api/v1/services", { resourceVersion: rv });
    await waitFor(() => w.events.length === 1, 2000, "replay");
    server.update("Service", svc("before", { changed: "yes" }));
    server.delete("Service", svc("after"));
    await waitFor(() => w.events.length === 3, 2000, "live events");
    expect(w.events.map((e) => `${e.type} ${e.object.metadata!.name}`)).toEqual([
      "ADDED after",
      "MODIFIED before",
      "DELETED after",
    ]);
    const rvs = w.events.map((e) => Number(e.object.metadata!.resourceVersion));
    expect(rvs).toEqual([...rvs].sort((a, b) => a - b));
    expect(w.events[2]!.object.kind).toBe("Service");
  });

  test("without a resourceVersion the current state arrives as ADDED events", async () => {
    server.create("EndpointSlice", { metadata: { name: "s1" }, addressType: "IPv4", endpoints: [] });
    const w = await watch("/apis/discovery.k8s.io/v1/endpointslices", {});
    await waitFor(() => w.events.length === 1, 2000, "synthetic ADDED");
    expect(w.events[0]!.type).toBe("ADDED");
    expect(w.events[0]!.object.metadata!.name).toBe("s1");
  });

  test("an object whose labels leave the selection is DELETED for that watcher", async () => {
    server.create("Service", svc("a"));
    const w = await watch("/api/v1/services", {
      resourceVersion: server.resourceVersion,
      labelSelector: "!service.kubernetes.io/service-proxy-name",
    });
    server.update("Service", svc("a", { "service.kubernetes.io/service-proxy-name": "x" }));
    server.update("Service", svc("a"));
    await waitFor(() => w.events.length === 2, 2000, "leave and re-enter");
    expect(w.events.map((e) => e.type)).toEqual(["DELETED", "ADDED"]);
  });

  test("bookmarks go only to watches that allow them", async () => {
    const withBm = await watch("/api/v1/services", {
      resourceVersion: server.resourceVersion,
      allowWatchBookmarks: "true",
    });
    const without = await watch("/api/v1/services", { resourceVersion: server.resourceVersion });
    await waitFor(() => server.openWatches === 2, 2000, "both watches open");
    server.create("Node", { metadata: { name: "n" } });
    server.sendBookmarks();
    await waitFor(() => withBm.events.length === 1, 2000, "bookmark");
    expect(withBm.events[0]!.type).toBe("BOOKMARK");
    expect(withBm.events[0]!.object.metadata!.resourceVersion).toBe(server.resourceVersion);
    expect(without.events).toEqual([]);
  });

  test("a compacted resourceVersion gets an ERROR 410 Expired event and the stream ends", async () => {
    server.create("Service", svc("a"));
    const old = server.resourceVersion;
    server.compactHistory();
    const w = await watch("/api/v1/services", { resourceVersion: old });
    expect(await w.ended).toBe("end");
    expect(w.events).toHaveLength(1);
    expect(w.events[0]!.type).toBe("ERROR");
    expect(w.events[0]!.object).toMatchObject({ kind: "Status", code: 410, reason: "Expired" });
  });

  test("the history window is bounded: resuming from before it is Expired", async () => {
    await server.close();
    server = await FakeApiServer.start({ historyLimit: 2 });
    server.create("Service", svc("a"));
    const old = server.resourceVersion;
    for (let i = 0; i < 3; i++) server.update("Service", svc("a", { n: String(i) }));
    const w = await watch("/api/v1/services", { resourceVersion: old });
    await w.ended;
    expect(w.events[0]!.type).toBe("ERROR");
  });

  test("expireNextWatch expires exactly one watch", async () => {
    server.expireNextWatch();
    const first = await watch("/api/v1/nodes", { resourceVersion: server.resourceVersion });
    expect(await first.ended).toBe("end");
    expect(first.events[0]!.object.code).toBe(410);
    const second = await watch("/api/v1/nodes", { resourceVersion: server.resourceVersion });
    await waitFor(() => server.openWatches === 1, 2000, "second watch open");
    expect(second.events).toEqual([]);
  });

  test("disconnectWatches breaks every open stream", async () => {
    const a = await watch("/api/v1/services", { resourceVersion: server.resourceVersion });
    const b = await watch("/api/v1/nodes", { resourceVersion: server.resourceVersion });
    await waitFor(() => server.openWatches === 2, 2000, "watches open");
    server.disconnectWatches();
    expect(await a.ended).toBe("error");
    expect(await b.ended).toBe("error");
    expect(server.openWatches).toBe(0);
  });

  test("timeoutSeconds ends the stream cleanly", async () => {
    const w = await watch("/api/v1/services", {
      resourceVersion: server.resourceVersion,
      timeoutSeconds: "1",
    });
    const started = Date.now();
    expect(await w.ended).toBe("end");
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });
});

describe("events and access", () => {
  test("Events posted through either API are stored; denyEvents answers 403", async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
    const ev = { metadata: { name: "n1.abc" }, reason: "Starting", note: "hi" };
    expect((await post("/apis/events.k8s.io/v1/namespaces/default/events", ev)).status).toBe(201);
    const core = { metadata: { name: "n1.def" }, reason: "Starting", message: "hi" };
    expect((await post("/api/v1/namespaces/kube-system/events", core)).status).toBe(201);
    expect(
      server.postedEvents.map((e) => `${e.apiVersion} ${e.metadata!.namespace}/${e.metadata!.name}`),
    ).toEqual(["events.k8s.io/v1 default/n1.abc", "v1 kube-system/n1.def"]);
    server.denyEvents = true;
    const denied = await post("/apis/events.k8s.io/v1/namespaces/default/events", {
      metadata: { name: "x" },
    });
    expect(denied.status).toBe(403);
    expect(server.postedEvents).toHaveLength(2);
  });

  test("a bearer token, when configured, is required", async () => {
    await server.close();
    server = await FakeApiServer.start({ token: "s3cret" });
    expect((await fetch(`${server.url}/api/v1/services`)).status).toBe(401);
    const ok = await fetch(`${server.url}/api/v1/services`, { headers: { Authorization: "Bearer s3cret" } });
    expect(ok.status).toBe(200);
  });

  test("an outage answers 503 until it ends", async () => {
    server.setOutage(true);
    expect((await fetch(`${server.url}/api/v1/services`)).status).toBe(503);
    server.setOutage(false);
    expect((await fetch(`${server.url}/api/v1/services`)).status).toBe(200);
  });
});
