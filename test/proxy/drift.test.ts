// The shared part of drift checks: answers of several families merged into one report, the
// checker that counts, logs and repairs what drifted (and only then), the interval from the
// environment, and /debug/drift on the metrics server.

import { afterEach, describe, expect, test } from "bun:test";
import { Registry } from "prom-client";
import { defaultProxyConfig } from "../../src/config/defaults.ts";
import { memoryLogger, nullLogger } from "../../src/log/logger.ts";
import {
  createDriftCounter,
  DEFAULT_DRIFT_INTERVAL_MS,
  type Difference,
  DriftChecker,
  type DriftReport,
  driftIntervalMs,
  driftLogFields,
  mergeDrift,
} from "../../src/proxy/drift.ts";
import { kubeProxyConfigz } from "../../src/proxy/healthcheck/configz.ts";
import type { RunningServer } from "../../src/proxy/healthcheck/healthz-server.ts";
import { startMetricsServer } from "../../src/proxy/healthcheck/metrics-server.ts";
import { createMetrics } from "../../src/proxy/metrics/metrics.ts";
import { get } from "./healthcheck/support.ts";

const GONE: Difference = {
  kind: "real-server",
  what: "TCP 198.51.100.10:80 -> 203.0.113.12:8080",
  expected: "weight 1",
  found: "absent",
};
const EXTRA: Difference = {
  kind: "rule",
  what: "nat KUBE-SVC-X",
  expected: "absent",
  found: "-A KUBE-SVC-X -j DROP",
};

function checker(report: () => Promise<DriftReport>) {
  const registry = new Registry();
  const log = memoryLogger();
  let repairs = 0;
  const c = new DriftChecker({
    check: report,
    repair: () => repairs++,
    counter: createDriftCounter(registry),
    log,
    intervalMs: 0,
  });
  return { c, registry, log, repairs: () => repairs };
}

describe("drift checks", () => {
  test("mergeDrift: differences concatenated, reasons to skip joined", () => {
    expect(
      mergeDrift("ipvs", [{ differences: [GONE] }, { skipped: "IPv6: a full sync is pending" }]),
    ).toEqual({
      mode: "ipvs",
      skipped: "IPv6: a full sync is pending",
      differences: [GONE],
    });
    expect(mergeDrift("nftables", [{ differences: [] }])).toEqual({ mode: "nftables", differences: [] });
  });

  test("a check that finds drift counts each difference by kind, logs one line naming them, repairs", async () => {
    const { c, registry, log, repairs } = checker(async () => ({ mode: "ipvs", differences: [GONE, EXTRA] }));
    await c.checkOnce();
    expect(repairs()).toBe(1);
    const text = await registry.metrics();
    expect(text).toContain('kubeproxy_ts_drift_differences_total{kind="real-server"} 1');
    expect(text).toContain('kubeproxy_ts_drift_differences_total{kind="rule"} 1');
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toContain("Kernel state drifted");
    expect(log.lines[0]).toContain(
      "real-server TCP 198.51.100.10:80 -> 203.0.113.12:8080: missing (weight 1)",
    );
    expect(log.lines[0]).toContain("unexpected (-A KUBE-SVC-X -j DROP)");
  });

  test("two checks asked for at once are one check: counted and repaired once", async () => {
    let calls = 0;
    const { c, registry, repairs } = checker(async () => {
      calls++;
      await new Promise((r) => setTimeout(r, 5));
      return { mode: "ipvs", differences: [GONE] };
    });
    const [a, b] = await Promise.all([c.checkOnce(), c.checkOnce()]);
    expect(a).toBe(b);
    expect([calls, repairs()]).toEqual([1, 1]);
    expect(await registry.metrics()).toContain('kubeproxy_ts_drift_differences_total{kind="real-server"} 1');
    await c.checkOnce();
    expect(calls).toBe(2);
  });

  test("a check that finds nothing neither counts, logs nor repairs; one that fails rejects", async () => {
    const { c, log, repairs } = checker(async () => ({ mode: "ipvs", differences: [] }));
    await c.checkOnce();
    expect([repairs(), log.lines.length]).toEqual([0, 0]);
    const failing = checker(() => Promise.reject(new Error("ipvsadm: not found")));
    await expect(failing.c.checkOnce()).rejects.toThrow("ipvsadm");
    expect(failing.repairs()).toBe(0);
  });

  test("the log line names ten differences and says how many more", () => {
    const many = Array.from({ length: 12 }, (_, i) => ({ ...GONE, what: `vs ${i}` }));
    const fields = driftLogFields(many);
    expect(fields.count).toBe(12);
    expect(fields.kinds).toBe("real-server=12");
    expect(String(fields.differences)).toEndWith("... 2 more");
  });

  test("the interval: default, from the environment, 0 turns it off", () => {
    expect(driftIntervalMs({})).toBe(DEFAULT_DRIFT_INTERVAL_MS);
    expect(driftIntervalMs({ KPTS_DRIFT_CHECK_INTERVAL_MS: "1500" })).toBe(1500);
    expect(driftIntervalMs({ KPTS_DRIFT_CHECK_INTERVAL_MS: "0" })).toBe(0);
    expect(driftIntervalMs({ KPTS_DRIFT_CHECK_INTERVAL_MS: "soon" })).toBe(DEFAULT_DRIFT_INTERVAL_MS);
  });
});

describe("/debug/drift on the metrics server", () => {
  const running: RunningServer[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.close()));
  });

  async function start(drift?: () => Promise<object>): Promise<string> {
    const config = defaultProxyConfig();
    const server = await startMetricsServer({
      bindAddress: "127.0.0.1:0",
      registry: createMetrics().registry,
      proxyMode: "ipvs",
      configz: () => kubeProxyConfigz(config),
      profiling: false,
      logger: nullLogger,
      ...(drift ? { drift } : {}),
    });
    running.push(server);
    return `http://${server.address}`;
  }

  test("answers the report as JSON; 500 when the check failed; 404 without a check", async () => {
    const ok = await start(async () => ({ mode: "ipvs", differences: [GONE] }));
    const res = await get(`${ok}/debug/drift`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await res.json()).toEqual({ mode: "ipvs", differences: [GONE] });
    const failing = await start(() => Promise.reject(new Error("nft: permission denied")));
    const bad = await get(`${failing}/debug/drift`);
    expect(bad.status).toBe(500);
    expect(await bad.text()).toContain("nft: permission denied");
    expect((await get(`${await start()}/debug/drift`)).status).toBe(404);
  });
});
