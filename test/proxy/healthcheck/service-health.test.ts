import { afterEach, describe, expect, test } from "bun:test";
import { memoryRecorder } from "../../../src/k8s/events.ts";
import { memoryLogger, nullLogger } from "../../../src/log/logger.ts";
import {
  ServiceHealthServer,
  type ServiceHealthServerOptions,
} from "../../../src/proxy/healthcheck/service-health.ts";
import { freePort, get, occupy, reachable } from "./support.ts";

const servers: ServiceHealthServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function make(overrides: Partial<ServiceHealthServerOptions> = {}) {
  const proxier = { healthy: true, isHealthy: () => proxier.healthy };
  const recorder = memoryRecorder();
  const logger = memoryLogger();
  const server = new ServiceHealthServer({
    nodeName: "node-1",
    nodeAddresses: ["127.0.0.1"],
    health: proxier,
    logger,
    recorder,
    ...overrides,
  });
  servers.push(server);
  return { server, proxier, recorder, logger };
}

const url = (port: number) => `http://127.0.0.1:${port}/`;

async function probe(port: number) {
  const res = await get(url(port));
  return { status: res.status, body: JSON.parse(await res.text()), res };
}

describe("ServiceHealthServer", () => {
  test("empty syncs open nothing; endpoints for unknown services are dropped", async () => {
    const { server } = make();
    await server.syncServices(new Map());
    await server.syncEndpoints(new Map([["a/b", 93]]));
    expect(server.listeners().size).toBe(0);
  });

  test("answers upstream's body and headers; 200 only with local endpoints", async () => {
    const { server } = make();
    const port = await freePort();
    await server.syncServices(new Map([["ns-a/svc-b", port]]));

    const empty = await get(url(port));
    expect(empty.status).toBe(503);
    expect(empty.headers.get("content-type")).toBe("application/json");
    expect(empty.headers.get("x-content-type-options")).toBe("nosniff");
    expect(empty.headers.get("x-load-balancing-endpoint-weight")).toBe("0");
    expect(await empty.text()).toBe(
      '{\n\t"service": {\n\t\t"namespace": "ns-a",\n\t\t"name": "svc-b"\n\t},\n\t"localEndpoints": 0,\n\t"serviceProxyHealthy": true\n}',
    );

    await server.syncEndpoints(new Map([["ns-a/svc-b", 18]]));
    const some = await probe(port);
    expect(some.status).toBe(200);
    expect(some.body.localEndpoints).toBe(18);
    expect(some.res.headers.get("x-load-balancing-endpoint-weight")).toBe("18");

    // Any path on the port is the health check, as upstream serves one handler per port.
    expect((await get(`${url(port)}healthz`)).status).toBe(200);

    await server.syncEndpoints(new Map([["ns-a/svc-b", 0]]));
    expect((await probe(port)).status).toBe(503);
    await server.syncEndpoints(new Map([["ns-a/svc-b", 11]]));
    await server.syncEndpoints(new Map());
    expect((await probe(port)).body.localEndpoints).toBe(0);
  });

  test("an unhealthy proxier turns endpoints into 503", async () => {
    const { server, proxier } = make();
    const port = await freePort();
    await server.syncServices(new Map([["a/b", port]]));
    await server.syncEndpoints(new Map([["a/b", 7]]));
    proxier.healthy = false;
    const bad = await probe(port);
    expect(bad.status).toBe(503);
    expect(bad.body).toEqual({
      service: { namespace: "a", name: "b" },
      localEndpoints: 7,
      serviceProxyHealthy: false,
    });
    proxier.healthy = true;
    expect((await probe(port)).status).toBe(200);
  });

  test("ports open and close as the service set changes", async () => {
    const { server } = make();
    const [p1, p2, p3, p3b, p4] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    await server.syncServices(
      new Map([
        ["a/b", p1],
        ["c/d", p2],
        ["e/f", p3],
      ]),
    );
    await server.syncEndpoints(
      new Map([
        ["a/b", 9],
        ["c/d", 3],
        ["e/f", 7],
      ]),
    );
    expect([...server.listeners().keys()].sort()).toEqual(["a/b", "c/d", "e/f"]);

    // Remove a/b, keep c/d, move e/f to a new port, add g/h.
    await server.syncServices(
      new Map([
        ["c/d", p2],
        ["e/f", p3b],
        ["g/h", p4],
      ]),
    );
    expect(await reachable(url(p1))).toBe(false);
    expect(await reachable(url(p3))).toBe(false);
    const kept = await probe(p2);
    expect(kept.status).toBe(200);
    expect(kept.body.localEndpoints).toBe(3);
    // A moved or new listener starts at 0 until the next endpoint sync, as upstream.
    expect((await probe(p3b)).body.localEndpoints).toBe(0);
    expect((await probe(p4)).status).toBe(503);
    expect(server.listeners().get("e/f")).toEqual({
      port: p3b,
      addresses: [`127.0.0.1:${p3b}`],
      localEndpoints: 0,
    });

    await server.syncServices(new Map());
    for (const p of [p2, p3b, p4]) expect(await reachable(url(p))).toBe(false);
  });

  test("syncs apply in call order even when not awaited", async () => {
    const { server } = make();
    const port = await freePort();
    void server.syncServices(new Map([["a/b", port]]));
    await server.syncEndpoints(new Map([["a/b", 2]]));
    expect((await probe(port)).status).toBe(200);
  });

  test("two services on one port: the second is reported and retried, nothing crashes", async () => {
    const { server, recorder, logger } = make();
    const port = await freePort();
    await server.syncServices(
      new Map([
        ["ns/first", port],
        ["ns/second", port],
      ]),
    );
    expect([...server.listeners().keys()]).toEqual(["ns/first"]);
    expect(recorder.events).toEqual([
      {
        ref: { kind: "Service", namespace: "ns", name: "second", uid: "ns/second" },
        type: "Warning",
        reason: "FailedToStartServiceHealthcheck",
        action: "Listen",
        message: `node node-1 failed to start healthcheck "ns/second" on port ${port}: listen tcp 127.0.0.1:${port}: bind: address already in use`,
      },
    ]);
    expect(logger.lines.some((l) => l.startsWith("E") && l.includes("Failed to start healthcheck"))).toBe(
      true,
    );
    expect((await probe(port)).body.service.name).toBe("first");

    // Once the first goes away, the next sync gives the port to the second.
    await server.syncServices(new Map([["ns/second", port]]));
    expect((await probe(port)).body.service.name).toBe("second");
  });

  test("a port held by another process is retried on every sync until it frees up", async () => {
    const { server, recorder } = make();
    const held = await occupy();
    await server.syncServices(new Map([["a/b", held.port]]));
    await server.syncServices(new Map([["a/b", held.port]]));
    expect(server.listeners().size).toBe(0);
    expect(recorder.events.length).toBe(2);
    expect(await (await get(url(held.port))).text()).toBe("someone else");

    await held.close();
    await server.syncServices(new Map([["a/b", held.port]]));
    expect(server.listeners().get("a/b")?.port).toBe(held.port);
    expect((await probe(held.port)).status).toBe(503);
  });

  test("a failure on one node address releases the others", async () => {
    const held = await occupy();
    const { server } = make({ nodeAddresses: ["127.0.0.2", "127.0.0.1"] });
    await server.syncServices(new Map([["a/b", held.port]]));
    expect(server.listeners().size).toBe(0);
    // 127.0.0.2 bound first and must have been closed again.
    expect(await reachable(`http://127.0.0.2:${held.port}/`)).toBe(false);
    await held.close();
  });

  test("node addresses absent: listens on every local address", async () => {
    const { server } = make({ nodeAddresses: undefined });
    const port = await freePort();
    await server.syncServices(new Map([["a/b", port]]));
    await server.syncEndpoints(new Map([["a/b", 1]]));
    expect((await probe(port)).status).toBe(200);
  });

  test("an empty node address list (nothing matches nodePortAddresses) listens nowhere", async () => {
    const { server } = make({ nodeAddresses: [] });
    const port = await freePort();
    await server.syncServices(new Map([["a/b", port]]));
    await server.syncEndpoints(new Map([["a/b", 1]]));
    expect(server.listeners().get("a/b")?.addresses).toEqual([]);
    expect(await reachable(url(port))).toBe(false);
  });

  test("close() closes every listener and later syncs do nothing", async () => {
    const { server } = make({ logger: nullLogger });
    const [p1, p2] = await Promise.all([freePort(), freePort()]);
    await server.syncServices(
      new Map([
        ["a/b", p1],
        ["c/d", p2],
      ]),
    );
    await server.close();
    expect(await reachable(url(p1))).toBe(false);
    expect(await reachable(url(p2))).toBe(false);
    await server.syncServices(new Map([["a/b", p1]]));
    expect(await reachable(url(p1))).toBe(false);
  });
});
