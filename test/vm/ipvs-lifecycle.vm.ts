// ipvs mode over time, in the kernel VM (test/vm/kernel-vm.test.ts runs this file there): the
// real binary with --proxy-mode=ipvs in a netns topology, through an endpoint going away while a
// connection to it is open (graceful termination), a restart of the proxy over its own live
// state while clients keep connecting, and finally --cleanup. The tests run in order on one
// topology: each starts from the state the previous one left.
//
// By hand: scripts/kernel-vm -- bash -c 'modprobe nf_conntrack &&
//   node_modules/.bin/bun test --timeout 600000 ./test/vm/ipvs-lifecycle.vm.ts'
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { join } from "node:path";
import { tempDir } from "../support/binary.ts";
import { type NodeSpec, renderState, type ServiceSpec, writeStateFile } from "../support/e2e-cluster.ts";
import {
  E2E_TEST_TIMEOUT_MS,
  e2eTest,
  type Harness,
  harnessDiagnostics,
  tearDownHarness,
} from "../support/e2e-harness.ts";
import {
  hasDummyDevice,
  ipvsDiagnostics,
  ipvsShape,
  ipvsView,
  kubeIpsets,
  unexpectedErrorLines,
  virtualServer,
  waitForIpvs,
} from "../support/e2e-ipvs.ts";
import {
  iptablesSave,
  kubeProxyBinary,
  NODE_NAME,
  startKubeProxy,
  waitForRules,
} from "../support/e2e-kubeproxy.ts";
import {
  BUN,
  type Daemon,
  describeSummary,
  type ProbeResult,
  probe,
  probeInBackground,
  startServer,
} from "../support/e2e-traffic.ts";
import { requireKernelVm, scaled } from "../support/kernel-vm.ts";
import { ADDR, createTopology, type PodSpec, type Topology } from "../support/netns.ts";

requireKernelVm("ipvs-lifecycle.vm.ts");

const CONNECT_MS = scaled(250);
const HOLD = join(import.meta.dir, "..", "support", "e2e-hold.ts");
const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const HOLD_PORT = 8090;
/**
 * How long a closed connection may take to leave IPVS and its real server to be deleted: the
 * kernel keeps a reset connection 10 s (CLOSE) and the proxy looks once a minute (upstream's
 * rsCheckDeleteInterval). Both are kernel / wall-clock timers the emulated CPU does not stretch.
 */
const DRAIN_FLOOR_MS = 180_000;

const PODS: PodSpec[] = [
  { name: "g1", ip: "203.0.113.31" },
  { name: "g2", ip: "203.0.113.32" },
  { name: "g3", ip: "203.0.113.33" },
];
const ip = (pod: string) => PODS.find((p) => p.name === pod)!.ip;

const GRACE: ServiceSpec = {
  name: "grace",
  clusterIP: "198.51.100.40",
  ports: [{ name: "hold", port: 80, targetPort: HOLD_PORT }],
  endpoints: [{ ip: ip("g1") }, { ip: ip("g2") }],
};
const STEADY: ServiceSpec = {
  name: "steady",
  type: "NodePort",
  clusterIP: "198.51.100.41",
  ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: 30100 }],
  externalTrafficPolicy: "Cluster",
  endpoints: [{ ip: ip("g1") }, { ip: ip("g2") }],
};
const GRACE_VS = `${GRACE.clusterIP}:80`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (bounded by time and count) until `cond` holds; false if it never did. */
async function until(cond: () => boolean, limitMs: number, stepMs = 100): Promise<boolean> {
  const deadline = Date.now() + limitMs;
  for (let i = 0; i < Math.ceil(limitMs / stepMs) + 1; i++) {
    if (cond()) return true;
    if (Date.now() > deadline) break;
    await sleep(stepMs);
  }
  return cond();
}

/** The replies a held connection got so far, as {pod, seq}. */
function holdReplies(d: Daemon): { pod: string; seq: number }[] {
  return d
    .stdout()
    .split("\n")
    .filter((l) => l.startsWith("REPLY "))
    .map((l) => JSON.parse(l.slice(6)) as { pod: string; seq: number });
}

/** A held connection from the client namespace to the grace Service; resolves with its pod. */
async function holdConnection(topo: Topology): Promise<{ held: Daemon; pod: string }> {
  const held = topo.spawnDaemon("client", [
    BUN,
    HOLD,
    "client",
    "--target",
    GRACE_VS,
    "--interval-ms",
    "200",
    "--timeout-ms",
    String(CONNECT_MS),
    // An RST ends it in IPVS's CLOSE state (10 s), not TIME_WAIT (a fixed 2 min).
    "--reset",
  ]);
  const first = await held.waitForOutput(/^REPLY .*"pod":"(g[12])"/m, 15_000);
  return { held, pod: first[1]! };
}

/** Closes a held connection (RST) and checks it never failed before. */
async function closeHeld(held: Daemon): Promise<void> {
  process.kill(held.pid, "SIGTERM");
  expect(await held.exited, held.stdout()).toBe(0);
  expect(held.stdout()).toContain("CLOSED");
  expect(held.stdout()).not.toContain("FAIL");
}

const graceReal = (v: Awaited<ReturnType<typeof ipvsView>>, address: string) =>
  virtualServer(v, "TCP", GRACE_VS)?.reals.find((r) => r.address === address);

const firstSynced = (d: Daemon) => d.waitForOutput(/Memory after the first sync/, 30_000);

describe("ipvs mode: graceful termination, restart and cleanup on a real IPVS kernel", () => {
  const h: Harness = { extraDiagnostics: ipvsDiagnostics };

  beforeAll(async () => {
    h.topo = await createTopology({ pods: PODS });
    const topo = h.topo;
    await Promise.all(PODS.map((p) => startServer(topo, p.name, { tcp: [8080] })));
    await Promise.all(
      PODS.map(async (p) => {
        const d = topo.spawnDaemon(p.name, [
          BUN,
          HOLD,
          "server",
          "--name",
          p.name,
          "--port",
          String(HOLD_PORT),
        ]);
        await d.waitForOutput(/^READY/m, 15_000);
      }),
    );
    h.dir = tempDir("kpts-ipvs-life-");
    h.stateFile = join(h.dir, "state.yaml");
    writeStateFile(h.stateFile, renderState(NODE, [GRACE, STEADY]));
    h.kubeProxy = startKubeProxy(topo, { stateFile: h.stateFile, mode: "ipvs" });
    try {
      await firstSynced(h.kubeProxy);
      await waitForIpvs(
        topo,
        h.kubeProxy,
        (v) =>
          virtualServer(v, "TCP", GRACE_VS)?.reals.length === 2 &&
          virtualServer(v, "TCP", `${ADDR.node}:30100`)?.reals.length === 2,
        "the first sync's virtual servers",
      );
    } catch (err) {
      console.error(`\n===== diagnostics (setup) =====\n${await harnessDiagnostics(h)}`);
      throw err;
    }
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await tearDownHarness(h);
  }, E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "graceful termination: an open connection outlives its endpoint at weight 0; the real server goes once it closes",
    async () => {
      const topo = h.topo!;
      const { held, pod } = await holdConnection(topo);
      const other = pod === "g1" ? "g2" : "g1";
      const real = `${ip(pod)}:${HOLD_PORT}`;
      await waitForIpvs(
        topo,
        h.kubeProxy,
        (v) => (virtualServer(v, "TCP", GRACE_VS)?.reals.find((r) => r.address === real)?.active ?? 0) >= 1,
        `the held connection counted on ${real}`,
      );

      // The held connection's endpoint leaves the Service.
      writeStateFile(h.stateFile!, renderState(NODE, [{ ...GRACE, endpoints: [{ ip: ip(other) }] }, STEADY]));
      const drained = await waitForIpvs(
        topo,
        h.kubeProxy,
        (v) => virtualServer(v, "TCP", GRACE_VS)?.reals.find((r) => r.address === real)?.weight === 0,
        `${real} at weight 0`,
      );
      const reals = virtualServer(drained, "TCP", GRACE_VS)!.reals;
      expect(reals.find((r) => r.address === real)?.active, drained.text).toBe(1);
      expect(reals.find((r) => r.address === `${ip(other)}:${HOLD_PORT}`)?.weight, drained.text).toBe(1);

      // The open connection keeps working, on the same pod.
      const atZero = holdReplies(held).length;
      const kept = await until(() => holdReplies(held).length >= atZero + 10, scaled(5000));
      expect(kept, `held connection output:\n${held.stdout()}`).toBe(true);
      expect(held.stdout()).not.toContain("FAIL");
      expect(new Set(holdReplies(held).map((r) => r.pod))).toEqual(new Set([pod]));
      // New connections go to the other pod only.
      const fresh = await probe(topo, "client", { target: GRACE_VS, count: 6, timeoutMs: CONNECT_MS });
      expect(fresh.backends, describeSummary(fresh)).toEqual({ [other]: 6 });
      // Still there at weight 0 while the connection is open.
      const still = virtualServer(await ipvsView(topo), "TCP", GRACE_VS)!;
      expect(still.reals.find((r) => r.address === real)?.weight).toBe(0);

      // The connection closes: the real server is deleted, the other one stays.
      await closeHeld(held);
      const gone = await waitForIpvs(
        topo,
        h.kubeProxy,
        (v) => !virtualServer(v, "TCP", GRACE_VS)?.reals.some((r) => r.address === real),
        `${real} deleted after its connection closed`,
        10_000,
        DRAIN_FLOOR_MS,
      );
      expect(
        virtualServer(gone, "TCP", GRACE_VS)?.reals.map((r) => `${r.address}/${r.weight}`),
        gone.text,
      ).toEqual([`${ip(other)}:${HOLD_PORT}/1`]);
    },
  );

  e2eTest(h, "a restart over live state converges without a failed connection", async () => {
    const topo = h.topo!;
    // A real server draining across the restart: a connection is held to grace's one endpoint,
    // which is then swapped for the other pod.
    const { held, pod } = await holdConnection(topo);
    const back = pod === "g1" ? "g2" : "g1";
    const draining = `${ip(pod)}:${HOLD_PORT}`;
    writeStateFile(h.stateFile!, renderState(NODE, [{ ...GRACE, endpoints: [{ ip: ip(back) }] }, STEADY]));
    await waitForIpvs(
      topo,
      h.kubeProxy,
      (v) => graceReal(v, draining)?.weight === 0 && graceReal(v, `${ip(back)}:${HOLD_PORT}`)?.weight === 1,
      `${draining} draining, ${back} serving`,
    );
    const before = ipvsShape(await ipvsView(topo));
    const rulesBefore = await iptablesSave(topo, "filter");
    const opts = { count: 5000, intervalMs: 100, timeoutMs: CONNECT_MS, durationMs: 600_000 };
    const probes = [
      probeInBackground(topo, "client", { ...opts, target: `${ADDR.node}:30100` }),
      probeInBackground(topo, "g3", { ...opts, target: `${STEADY.clusterIP}:80` }),
    ];
    const seen = () => Math.min(...probes.map((p) => p.results().length));
    const since = (t: number) => Math.min(...probes.map((p) => p.results().filter((r) => r.t > t).length));
    expect(await until(() => seen() >= 5, scaled(5000))).toBe(true);

    const old = h.kubeProxy!;
    await old.kill(3000);
    expect(old.exitCode()).toBe(0);
    expect(unexpectedErrorLines(old)).toEqual([]);
    const stopped = Date.now();
    // With no proxy running, IPVS keeps serving.
    expect(await until(() => since(stopped) >= 5, scaled(5000))).toBe(true);

    h.kubeProxy = startKubeProxy(topo, { stateFile: h.stateFile!, mode: "ipvs" });
    await firstSynced(h.kubeProxy);
    const synced = Date.now();
    expect(await until(() => since(synced) >= 10, scaled(5000))).toBe(true);
    const summaries = await Promise.all(probes.map((p) => p.stop()));
    for (const s of summaries) {
      expect(s.ok, describeSummary(s)).toBe(true);
      expect(Object.keys(s.backends).sort(), describeSummary(s)).toEqual(["g1", "g2"]);
    }
    const phases = (s: { results: ProbeResult[] }) => ({
      running: s.results.filter((r) => r.t <= stopped).length,
      down: s.results.filter((r) => r.t > stopped && r.t <= synced).length,
      restarted: s.results.filter((r) => r.t > synced).length,
    });
    console.error(`restart: connections per phase ${JSON.stringify(summaries.map(phases))}`);
    for (const s of summaries) {
      const p = phases(s);
      expect(Math.min(p.running, p.down, p.restarted), JSON.stringify(p)).toBeGreaterThanOrEqual(5);
    }

    // Converged: the same virtual servers and real servers (the draining one still at weight 0,
    // not reset to serve again), no rule or jump twice.
    const after = await waitForIpvs(
      topo,
      h.kubeProxy,
      (v) => ipvsShape(v).join() === before.join(),
      "the same table",
    );
    expect(ipvsShape(after)).toEqual(before);
    const rulesAfter = await waitForRules(
      topo,
      h.kubeProxy,
      (r) => r.filter.includes("KUBE-IPVS-FILTER -m conntrack"),
      "the restarted proxy's rules",
    );
    const jumps = (save: string) =>
      save
        .split("\n")
        .filter((l) => /^-A (INPUT|FORWARD|OUTPUT) .*-j KUBE-/.test(l))
        .sort();
    expect(jumps(rulesAfter.filter)).toEqual(jumps(rulesBefore));
    expect(new Set(jumps(rulesAfter.filter)).size).toBe(jumps(rulesAfter.filter).length);

    // The held connection lived through it all, and the new instance finishes the draining.
    const repliesNow = holdReplies(held).length;
    expect(await until(() => holdReplies(held).length >= repliesNow + 5, scaled(5000)), held.stdout()).toBe(
      true,
    );
    const fresh = await probe(topo, "client", { target: GRACE_VS, count: 4, timeoutMs: CONNECT_MS });
    expect(fresh.backends, describeSummary(fresh)).toEqual({ [back]: 4 });
    await closeHeld(held);
    await waitForIpvs(
      topo,
      h.kubeProxy,
      (v) => graceReal(v, draining) === undefined && graceReal(v, `${ip(back)}:${HOLD_PORT}`)?.weight === 1,
      `${draining} deleted by the restarted proxy`,
      10_000,
      DRAIN_FLOOR_MS,
    );
    expect(unexpectedErrorLines(h.kubeProxy)).toEqual([]);
  });

  e2eTest(h, "--cleanup leaves no virtual server, no KUBE- ipset and no kube-ipvs0", async () => {
    const topo = h.topo!;
    expect(await hasDummyDevice(topo)).toBe(true);
    expect(await kubeIpsets(topo)).not.toEqual([]);
    expect((await ipvsView(topo)).virtualServers.length).toBeGreaterThan(0);
    await h.kubeProxy!.kill(3000);
    const r = await topo.run("node", [kubeProxyBinary(), "--cleanup", "-v=2"], { timeoutMs: 60_000 });
    expect(r.code, `${r.stderr}${r.stdout}`).toBe(0);
    const v = await ipvsView(topo);
    expect(v.virtualServers, v.text).toEqual([]);
    expect(await kubeIpsets(topo)).toEqual([]);
    expect(await hasDummyDevice(topo)).toBe(false);
    for (const table of ["nat", "filter"] as const) {
      const save = await iptablesSave(topo, table);
      expect(
        save.split("\n").filter((l) => l.includes("KUBE-")),
        save,
      ).toEqual([]);
    }
  });
});
