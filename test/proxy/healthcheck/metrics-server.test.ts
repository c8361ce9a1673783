import { afterEach, describe, expect, test } from "bun:test";
import { defaultProxyConfig } from "../../../src/config/defaults.ts";
import { nullLogger } from "../../../src/log/logger.ts";
import { kubeProxyConfigz } from "../../../src/proxy/healthcheck/configz.ts";
import type { RunningServer } from "../../../src/proxy/healthcheck/healthz-server.ts";
import { BindError } from "../../../src/proxy/healthcheck/http.ts";
import {
  type MetricsServerOptions,
  startMetricsServer,
} from "../../../src/proxy/healthcheck/metrics-server.ts";
import { Flagz } from "../../../src/proxy/healthcheck/zpages.ts";
import { createMetrics } from "../../../src/proxy/metrics/metrics.ts";
import { get, occupy } from "./support.ts";

const running: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

async function start(overrides: Partial<MetricsServerOptions> = {}): Promise<string> {
  const config = defaultProxyConfig();
  const server = await startMetricsServer({
    bindAddress: "127.0.0.1:0",
    registry: createMetrics().registry,
    proxyMode: "ipvs",
    configz: () => kubeProxyConfigz(config),
    profiling: false,
    logger: nullLogger,
    ...overrides,
  });
  running.push(server);
  return `http://${server.address}`;
}

describe("metrics server", () => {
  test("/metrics is the registry in Prometheus text format", async () => {
    const metrics = createMetrics();
    metrics.syncProxyRulesLatency.observe(0.05);
    const url = await start({ registry: metrics.registry });
    const res = await get(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = await res.text();
    expect(text).toContain("# TYPE kubeproxy_sync_proxy_rules_duration_seconds histogram");
    expect(text).toContain("kubeproxy_sync_proxy_rules_duration_seconds_count 1");
  });

  test("/healthz is the apiserver ping check", async () => {
    const url = await start();
    const plain = await get(`${url}/healthz`);
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await plain.text()).toBe("ok");
    expect(await (await get(`${url}/healthz?verbose`)).text()).toBe("[+]ping ok\nhealthz check passed\n");
    expect(await (await get(`${url}/healthz?verbose&exclude=ping&exclude=etcd`)).text()).toBe(
      '[+]ping excluded: ok\nwarn: some health checks cannot be excluded: no matches for "etcd"\nhealthz check passed\n',
    );
    expect(await (await get(`${url}/healthz/ping`)).text()).toBe("ok");
  });

  test("/metrics/slis: each run of the ping check behind /healthz; DELETE resets; not on /metrics", async () => {
    const metrics = createMetrics();
    const url = await start({ registry: metrics.registry });
    expect(await (await get(`${url}/metrics/slis`)).text()).toBe("");
    await get(`${url}/healthz`);
    await get(`${url}/healthz?verbose`);
    await get(`${url}/healthz?exclude=ping`); // excluded: not run, not recorded
    await get(`${url}/healthz/ping`); // the per-check route records nothing upstream either
    const res = await get(`${url}/metrics/slis`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(await res.text()).toBe(
      "# HELP kubernetes_healthcheck [BETA] This metric records the result of a single healthcheck.\n" +
        "# TYPE kubernetes_healthcheck gauge\n" +
        'kubernetes_healthcheck{name="ping",type="healthz"} 1\n' +
        "# HELP kubernetes_healthchecks_total [BETA] This metric records the results of all healthcheck.\n" +
        "# TYPE kubernetes_healthchecks_total counter\n" +
        'kubernetes_healthchecks_total{name="ping",status="success",type="healthz"} 2\n',
    );
    expect(await (await get(`${url}/metrics`)).text()).not.toContain("kubernetes_healthcheck");
    const reset = await fetch(`${url}/metrics/slis`, { method: "DELETE" });
    expect(reset.status).toBe(200);
    expect(await reset.text()).toBe("metrics reset\n");
    expect(await (await get(`${url}/metrics/slis`)).text()).toBe("");
  });

  test("/proxyMode is the bare mode name", async () => {
    const url = await start({ proxyMode: "iptables" });
    const res = await get(`${url}/proxyMode`);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await res.text()).toBe("iptables");
  });

  test("/configz nests the v1alpha1 config, kind and apiVersion included, under its API group (1.36+)", async () => {
    const url = await start();
    const res = await get(`${url}/configz`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const body = (await res.json()) as Record<string, Record<string, unknown>>;
    expect(Object.keys(body)).toEqual(["kubeproxy.config.k8s.io"]);
    const cfg = body["kubeproxy.config.k8s.io"]!;
    expect(Object.keys(cfg).slice(0, 2)).toEqual(["kind", "apiVersion"]);
    expect(cfg.kind).toBe("KubeProxyConfiguration");
    expect(cfg.apiVersion).toBe("kubeproxy.config.k8s.io/v1alpha1");
    expect(cfg.healthzBindAddress).toBe("0.0.0.0:10256");
    expect(cfg.metricsBindAddress).toBe("127.0.0.1:10249");
    expect(cfg.mode).toBe("iptables");
    expect(cfg.iptables).toMatchObject({
      masqueradeBit: 14,
      masqueradeAll: false,
      syncPeriod: "30s",
      minSyncPeriod: "1s",
    });
    expect(cfg.configSyncPeriod).toBe("15m0s");
    expect((cfg.logging as Record<string, unknown>).flushFrequency).toBe("5s");
  });

  test("/statusz and /flagz answer only when given (their gates on); otherwise 404", async () => {
    const off = await start();
    expect((await get(`${off}/statusz`)).status).toBe(404);
    expect((await get(`${off}/flagz`)).status).toBe(404);
    const on = await start({
      flagz: new Flagz({ v: "2" }),
      statusz: () => ({
        startTimeMs: Date.now(),
        nowMs: Date.now(),
        runtime: "bun",
        binaryVersion: "v0",
        emulationVersion: "1.37",
      }),
    });
    const status = await get(`${on}/statusz`);
    expect(status.status).toBe(200);
    expect(await status.text()).toMatch(
      /^Paths(:|: |=| ) \/configz \/flagz \/healthz \/metrics \/proxyMode$/m,
    );
    expect(await (await get(`${on}/flagz`)).text()).toMatch(/^v(:|: |=| )2$/m);
  });

  test("/debug/state answers what the run's handler makes of the query; 404 without one; GET only", async () => {
    const off = await start();
    expect((await get(`${off}/debug/state`)).status).toBe(404);
    const queries: string[] = [];
    const on = await start({
      debugState: async (query) => {
        queries.push(query.toString());
        return { status: 200, contentType: "application/json", body: '{"kind":"DebugState"}\n' };
      },
    });
    const res = await get(`${on}/debug/state?format=snapshot&host=false`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await res.text()).toBe('{"kind":"DebugState"}\n');
    expect(queries).toEqual(["format=snapshot&host=false"]);
    expect((await fetch(`${on}/debug/state`, { method: "POST" })).status).toBe(405);
    expect(queries).toHaveLength(1);
    // Not on /statusz's list, which stays upstream's.
    const withStatusz = await start({
      debugState: async () => ({ status: 200, contentType: "text/plain", body: "" }),
      statusz: () => ({
        startTimeMs: Date.now(),
        nowMs: Date.now(),
        runtime: "bun",
        binaryVersion: "v0",
        emulationVersion: "1.37",
      }),
    });
    expect(await (await get(`${withStatusz}/statusz`)).text()).toMatch(
      /^Paths(:|: |=| ) \/configz \/healthz \/metrics \/proxyMode$/m,
    );
  });

  test("/configz escapes like Go's json.Marshal", async () => {
    const url = await start({ configz: () => ({ Kubeconfig: "/etc/<k>&" }) });
    expect(await (await get(`${url}/configz`)).text()).toBe(
      '{"kubeproxy.config.k8s.io":{"Kubeconfig":"/etc/\\u003ck\\u003e\\u0026"}}',
    );
  });

  test("a failing configz source is a 500, not a crash", async () => {
    const url = await start({
      configz: () => {
        throw new Error("config unavailable");
      },
    });
    const res = await get(`${url}/configz`);
    expect(res.status).toBe(500);
    expect(await res.text()).toContain("config unavailable");
    expect((await get(`${url}/healthz`)).status).toBe(200);
  });

  test("unknown paths, /livez and /debug without profiling are 404", async () => {
    const url = await start();
    for (const path of ["/", "/livez", "/nope", "/debug/pprof/", "/metricsx"]) {
      const res = await get(`${url}${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
      expect(await res.text()).toBe("404 page not found\n");
    }
  });

  test("with profiling on, pprof routes answer 501 and say why", async () => {
    const url = await start({ profiling: true });
    for (const path of ["/debug/pprof", "/debug/pprof/", "/debug/pprof/heap", "/debug/flags/v"]) {
      const res = await get(`${url}${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 501 });
      expect(await res.text()).toContain("cannot serve Go pprof");
    }
  });

  test("a taken port is a BindError", async () => {
    const held = await occupy();
    try {
      const err = await start({ bindAddress: `127.0.0.1:${held.port}` }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BindError);
      expect((err as BindError).message).toBe(
        `starting metrics server failed: listen tcp 127.0.0.1:${held.port}: bind: address already in use`,
      );
    } finally {
      await held.close();
    }
  });
});
