import { afterEach, describe, expect, test } from "bun:test";
import { Registry } from "prom-client";
import { memoryLogger, nullLogger } from "../../../src/log/logger.ts";
import { createHealthMetrics } from "../../../src/proxy/healthcheck/health-metrics.ts";
import { type RunningServer, startHealthzServer } from "../../../src/proxy/healthcheck/healthz-server.ts";
import { BindError } from "../../../src/proxy/healthcheck/http.ts";
import { ProxierHealth, TO_BE_DELETED_TAINT } from "../../../src/proxy/healthcheck/proxier-health.ts";
import { FakeClock } from "../../../src/util/testing/fake-clock.ts";
import { get, occupy } from "./support.ts";

const START = Date.UTC(2024, 4, 1, 10, 0, 0);
const running: RunningServer[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

async function start(health: ProxierHealth, registry?: Registry) {
  const server = await startHealthzServer({
    bindAddress: "127.0.0.1:0",
    health,
    logger: nullLogger,
    ...(registry ? { metrics: createHealthMetrics(registry) } : {}),
  });
  running.push(server);
  return `http://${server.address}`;
}

describe("healthz server", () => {
  test("serves /healthz and /livez with upstream's bodies and headers", async () => {
    const clock = new FakeClock(START);
    const url = await start(new ProxierHealth({ healthTimeoutMs: 20_000, clock }));
    const now = "2024-05-01T10:00:00Z";

    const healthz = await get(`${url}/healthz`);
    expect(healthz.status).toBe(200);
    expect(healthz.headers.get("content-type")).toBe("application/json");
    expect(healthz.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await healthz.text()).toBe(
      `{"lastUpdated":"${now}","currentTime":"${now}","nodeEligible":true,"healthy":true}`,
    );

    const livez = await get(`${url}/livez?ignored=1`);
    expect(livez.status).toBe(200);
    expect(await livez.text()).toBe(`{"lastUpdated":"${now}","currentTime":"${now}","healthy":true}`);
  });

  test("a late sync makes both 503", async () => {
    const clock = new FakeClock(START);
    const health = new ProxierHealth({ healthTimeoutMs: 20_000, clock });
    const url = await start(health);
    health.updated("IPv4");
    health.queuedUpdate("IPv4");
    clock.advance(30_000);
    expect((await get(`${url}/healthz`)).status).toBe(503);
    expect((await get(`${url}/livez`)).status).toBe(503);
    health.updated("IPv4");
    expect((await get(`${url}/healthz`)).status).toBe(200);
  });

  test("a node being deleted fails /healthz but not /livez", async () => {
    const health = new ProxierHealth({ healthTimeoutMs: 20_000, clock: new FakeClock(START) });
    const url = await start(health);
    health.syncNode({ spec: { taints: [{ key: TO_BE_DELETED_TAINT }] } });
    const healthz = await get(`${url}/healthz`);
    expect(healthz.status).toBe(503);
    expect(JSON.parse(await healthz.text()).nodeEligible).toBe(false);
    expect((await get(`${url}/livez`)).status).toBe(200);
  });

  test("other paths are 404 like Go's mux", async () => {
    const url = await start(new ProxierHealth({ healthTimeoutMs: 20_000, clock: new FakeClock(START) }));
    for (const path of ["/", "/metrics", "/healthz/", "/livezz"]) {
      const res = await get(`${url}${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
      expect(await res.text()).toBe("404 page not found\n");
    }
  });

  test("answers are counted by status code", async () => {
    const registry = new Registry();
    const health = new ProxierHealth({ healthTimeoutMs: 20_000, clock: new FakeClock(START) });
    const url = await start(health, registry);
    await get(`${url}/healthz`);
    await get(`${url}/livez`);
    health.syncNode({ metadata: { deletionTimestamp: "2024-05-01T10:00:00Z" } });
    await get(`${url}/healthz`);
    const text = await registry.metrics();
    expect(text).toContain('kubeproxy_proxy_healthz_total{code="200"} 1');
    expect(text).toContain('kubeproxy_proxy_healthz_total{code="503"} 1');
    expect(text).toContain('kubeproxy_proxy_livez_total{code="200"} 1');
  });

  test("a taken port is a BindError naming the address, for main to judge", async () => {
    const held = await occupy();
    try {
      const bindAddress = `127.0.0.1:${held.port}`;
      const err = await startHealthzServer({
        bindAddress,
        health: new ProxierHealth({ healthTimeoutMs: 1000 }),
        logger: nullLogger,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BindError);
      const bind = err as BindError;
      expect(bind.address).toBe(bindAddress);
      expect(bind.code).toBe("EADDRINUSE");
      expect(bind.message).toBe(
        `failed to start proxier healthz on ${bindAddress}: listen tcp ${bindAddress}: bind: address already in use`,
      );
      // The holder still answers: the failed attempt left nothing half-bound.
      expect(await (await get(`http://${bindAddress}/`)).text()).toBe("someone else");
    } finally {
      await held.close();
    }
  });

  test("a malformed address is a BindError too", async () => {
    const err = await startHealthzServer({
      bindAddress: "localhost",
      health: new ProxierHealth({ healthTimeoutMs: 1000 }),
      logger: nullLogger,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BindError);
    expect((err as BindError).message).toContain("localhost");
  });

  test("an unspecified IP listens on every address, and the start is logged at -v=3", async () => {
    const logger = memoryLogger({ verbosity: 3 });
    const server = await startHealthzServer({
      bindAddress: "0.0.0.0:0",
      health: new ProxierHealth({ healthTimeoutMs: 1000 }),
      logger,
    });
    running.push(server);
    const port = server.address.slice(server.address.lastIndexOf(":") + 1);
    expect((await get(`http://127.0.0.1:${port}/livez`)).status).toBe(200);
    expect(logger.lines.some((l) => l.includes("Starting healthz HTTP server"))).toBe(true);
  });
});
