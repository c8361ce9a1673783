// The API client's observer hook feeding rest_client_requests_total and
// rest_client_request_duration_seconds, against the in-process fake API server.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { kubeApiClient, serverHost } from "../../src/k8s/api-client.ts";
import { loadKubeConfig } from "../../src/k8s/kubeconfig.ts";
import { KubeRegistry } from "../../src/proxy/metrics/registry.ts";
import { createRestClientMetrics } from "../../src/proxy/metrics/rest-client.ts";
import { FakeApiServer, kubeconfigFor } from "../support/fake-apiserver.ts";

let server: FakeApiServer;
beforeEach(async () => {
  server = await FakeApiServer.start();
});
afterEach(async () => {
  await server.close();
});

function client(registry: KubeRegistry) {
  const loaded = loadKubeConfig({ kubeconfigPath: kubeconfigFor(server), env: {} });
  if (!loaded.ok) throw loaded.error;
  return kubeApiClient(loaded.kubeConfig, undefined, createRestClientMetrics(registry));
}

const line = (text: string, prefix: string) => text.split("\n").find((l) => l.startsWith(prefix));

describe("REST client metrics", () => {
  test("lists, gets, posts and watches are counted by code, method and host; watches report no latency", async () => {
    const registry = new KubeRegistry();
    const api = client(registry);
    const host = new URL(server.url).host;

    const list = await api.request({ method: "GET", path: "/api/v1/services" });
    expect(list.status).toBe(200);
    expect(JSON.parse(await list.text()).kind).toBe("ServiceList");
    expect((await api.request({ method: "GET", path: "/api/v1/nodes/missing" })).status).toBe(404);
    const post = await api.request({
      method: "POST",
      path: "/apis/events.k8s.io/v1/namespaces/default/events",
      body: { metadata: { name: "e1", namespace: "default" } },
    });
    expect(post.status).toBe(201);
    const stop = new AbortController();
    const watch = await api.request({
      method: "GET",
      path: "/api/v1/services",
      query: { watch: "true" },
      signal: stop.signal,
    });
    expect(watch.status).toBe(200);
    stop.abort();

    const text = await registry.metrics();
    expect(line(text, `rest_client_requests_total{code="200",host="${host}",method="GET"}`)).toEndWith(" 2");
    expect(line(text, `rest_client_requests_total{code="404",host="${host}",method="GET"}`)).toEndWith(" 1");
    expect(line(text, `rest_client_requests_total{code="201",host="${host}",method="POST"}`)).toEndWith(" 1");
    // The list and the 404 GET, not the watch.
    expect(line(text, `rest_client_request_duration_seconds_count{host="${host}",verb="GET"}`)).toEndWith(
      " 2",
    );
    expect(line(text, `rest_client_request_duration_seconds_count{host="${host}",verb="POST"}`)).toEndWith(
      " 1",
    );
    expect(text).toContain("# TYPE rest_client_request_duration_seconds histogram\n");
  });

  test("no response at all is code <error>", async () => {
    const registry = new KubeRegistry();
    const api = client(registry);
    const host = new URL(server.url).host;
    await server.close();
    await expect(api.request({ method: "GET", path: "/api/v1/services" })).rejects.toThrow();
    const text = await registry.metrics();
    expect(line(text, `rest_client_requests_total{code="<error>",host="${host}",method="GET"}`)).toEndWith(
      " 1",
    );
    expect(line(text, `rest_client_request_duration_seconds_count{host="${host}",verb="GET"}`)).toEndWith(
      " 1",
    );
    server = await FakeApiServer.start(); // for afterEach
  });

  test("host is the server URL's host[:port] as Go keeps it", () => {
    expect(serverHost("https://192.0.2.1:6443")).toBe("192.0.2.1:6443");
    expect(serverHost("https://api.example:443/prefix")).toBe("api.example:443");
    expect(serverHost("https://[2001:db8::1]:6443")).toBe("[2001:db8::1]:6443");
    expect(serverHost("https://user:pw@api.example")).toBe("api.example");
    expect(serverHost("not a url")).toBe("none");
  });
});
