import { describe, expect, test } from "bun:test";
import { defaultProxyConfig } from "../../../src/config/defaults.ts";
import { healthTimeoutMs } from "../../../src/modes/registry.ts";
import { ProxierHealth, TO_BE_DELETED_TAINT } from "../../../src/proxy/healthcheck/proxier-health.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { FakeClock } from "../../../src/util/testing/fake-clock.ts";

const TIMEOUT = 20_000;
const START = Date.UTC(2024, 4, 1, 10, 0, 0);

interface Ctx {
  health: ProxierHealth;
  clock: FakeClock;
  step: number;
}
type Step = (ctx: Ctx) => void;

const queued =
  (family: IPFamily): Step =>
  ({ health }) =>
    health.queuedUpdate(family);
const updated =
  (family: IPFamily): Step =>
  ({ health }) =>
    health.updated(family);
const advance =
  (ms: number): Step =>
  ({ clock }) =>
    clock.advance(ms);
const healthy =
  (want: boolean): Step =>
  ({ health, step }) =>
    expect({ step, healthy: health.isHealthy() }).toEqual({ step, healthy: want });

function run(steps: readonly Step[]): void {
  const clock = new FakeClock(START);
  const health = new ProxierHealth({ healthTimeoutMs: TIMEOUT, clock });
  steps.forEach((s, step) => {
    s({ health, clock, step });
  });
}

describe("ProxierHealth state machine", () => {
  const cases: [string, Step[]][] = [
    ["fresh start is healthy", [healthy(true)]],
    [
      "startup: a queued change before the first sync never fails (upstream judges synced families only)",
      [queued("IPv4"), advance(10 * TIMEOUT), healthy(true)],
    ],
    ["synced and idle stays healthy", [updated("IPv4"), advance(10 * TIMEOUT), healthy(true)]],
    [
      "queued within the timeout is healthy",
      [updated("IPv4"), queued("IPv4"), advance(TIMEOUT - 1), healthy(true)],
    ],
    [
      "queued for exactly the timeout is unhealthy",
      [updated("IPv4"), queued("IPv4"), advance(TIMEOUT), healthy(false)],
    ],
    [
      "a successful sync clears the late change",
      [
        updated("IPv4"),
        queued("IPv4"),
        advance(TIMEOUT + 5000),
        healthy(false),
        updated("IPv4"),
        healthy(true),
      ],
    ],
    [
      "the oldest queued change counts, not the newest",
      [updated("IPv4"), queued("IPv4"), advance(15_000), queued("IPv4"), advance(15_000), healthy(false)],
    ],
    [
      "per family: a late IPv6 is not cured by an IPv4 sync",
      [
        updated("IPv4"),
        updated("IPv6"),
        queued("IPv6"),
        advance(TIMEOUT + 5000),
        healthy(false),
        updated("IPv4"),
        healthy(false),
        updated("IPv6"),
        healthy(true),
      ],
    ],
    [
      "per family: both late need both syncs",
      [
        updated("IPv4"),
        updated("IPv6"),
        queued("IPv4"),
        queued("IPv6"),
        advance(TIMEOUT + 5000),
        updated("IPv4"),
        healthy(false),
        updated("IPv6"),
        healthy(true),
      ],
    ],
    [
      "per family: a family that never synced is ignored while the other is fine",
      [updated("IPv4"), queued("IPv6"), advance(2 * TIMEOUT), healthy(true)],
    ],
  ];
  test.each(cases)("%s", (_name, steps) => run(steps));
});

describe("ProxierHealth responses (1.33+: JSON with each family's state)", () => {
  test("200 bodies echo the current time as lastUpdated; no family has synced: no status", () => {
    const clock = new FakeClock(START + 500);
    const health = new ProxierHealth({ healthTimeoutMs: TIMEOUT, clock });
    const now = "2024-05-01T10:00:00.5Z";
    expect(health.healthzResponse()).toEqual({
      status: 200,
      body: `{"lastUpdated":"${now}","currentTime":"${now}","nodeEligible":true,"healthy":true}`,
    });
    expect(health.livezResponse()).toEqual({
      status: 200,
      body: `{"lastUpdated":"${now}","currentTime":"${now}","healthy":true}`,
    });
  });

  test("503 bodies report the failing family's last sync, and each family's own state", () => {
    const clock = new FakeClock(START);
    const health = new ProxierHealth({ healthTimeoutMs: TIMEOUT, clock });
    health.updated("IPv4");
    health.updated("IPv6");
    health.queuedUpdate("IPv6");
    clock.advance(25_000);
    health.updated("IPv4");
    const r = health.healthzResponse();
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body)).toEqual({
      lastUpdated: "2024-05-01T10:00:00Z",
      currentTime: "2024-05-01T10:00:25Z",
      nodeEligible: true,
      healthy: false,
      status: {
        IPv4: { lastUpdated: "2024-05-01T10:00:25Z", healthy: true },
        IPv6: { lastUpdated: "2024-05-01T10:00:00Z", healthy: false },
      },
    });
    expect(JSON.parse(health.livezResponse().body).nodeEligible).toBeUndefined();
  });
});

describe("node eligibility", () => {
  const cases: [string, Parameters<ProxierHealth["syncNode"]>[0], boolean][] = [
    ["plain node", {}, true],
    ["other taint", { spec: { taints: [{ key: "other" }] } }, true],
    ["autoscaler deletion taint", { spec: { taints: [{ key: TO_BE_DELETED_TAINT }] } }, false],
    ["deletion timestamp", { metadata: { deletionTimestamp: "2024-05-01T10:00:00Z" } }, false],
  ];
  test.each(cases)("%s", (_name, node, eligible) => {
    const health = new ProxierHealth({ healthTimeoutMs: TIMEOUT, clock: new FakeClock(START) });
    health.syncNode(node);
    expect(health.nodeEligible()).toBe(eligible);
    expect(health.healthzResponse().status).toBe(eligible ? 200 : 503);
    expect(JSON.parse(health.healthzResponse().body).nodeEligible).toBe(eligible);
    // Liveness ignores the node: restarting kube-proxy on a draining node helps no one.
    expect(health.livezResponse().status).toBe(200);
  });

  test("eligibility comes back when the node recovers", () => {
    const health = new ProxierHealth({ healthTimeoutMs: TIMEOUT, clock: new FakeClock(START) });
    health.syncNode({ spec: { taints: [{ key: TO_BE_DELETED_TAINT }] } });
    health.syncNode({ spec: { taints: [{ key: "other" }] } });
    expect(health.healthzResponse().status).toBe(200);
  });
});

test("health timeout is twice the running mode's own sync period", () => {
  const config = defaultProxyConfig();
  config.iptables.syncPeriod = 30_000;
  config.ipvs.syncPeriod = 90_000;
  expect(healthTimeoutMs(config, "iptables")).toBe(60_000);
  // ipvs mode syncs every ipvs.syncPeriod: judging it by the iptables period would flap.
  expect(healthTimeoutMs(config, "ipvs")).toBe(180_000);
});
