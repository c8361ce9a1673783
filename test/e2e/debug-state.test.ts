// /debug/state of the running binary, on the real kernel: dist/kube-proxy-ts runs in iptables
// mode in a netns topology's node namespace against the fake API server, whose objects carry
// what a real API server and kubectl add (managedFields, the last-applied copy) and an
// annotation holding a "secret". The test reads the live state (services, endpoints, the first
// sync full, a later endpoint change a partial sync, the backend and why), then takes
// ?format=snapshot into a file, plans it with `--dry-run --state` and shows the plan's rules,
// replayed in a fresh namespace, are the rules the node holds.
//
// Run as root (iproute2, iptables installed): `node_modules/.bin/bun test test/e2e/debug-state.test.ts`.

import { afterAll, beforeAll, describe, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type DebugState, debugStateSchema } from "../../src/proxy/debug-state/schema.ts";
import { runBinaryAsync } from "../support/binary.ts";
import {
  type ApiHarness,
  NODE_METRICS_URL,
  setUpApiRun,
  tearDownApiRun,
} from "../support/e2e-api-harness.ts";
import { type NodeSpec, type ServiceSpec, serviceObject, sliceObject } from "../support/e2e-cluster.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest } from "../support/e2e-harness.ts";
import { describeHttp, httpGet, pollHttp } from "../support/e2e-http.ts";
import { NODE_NAME } from "../support/e2e-kubeproxy.ts";
import type { KObject } from "../support/fake-apiserver.ts";
import { scaled } from "../support/kernel-vm.ts";
import { ADDR } from "../support/netns.ts";

const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const WEB: ServiceSpec = {
  name: "web",
  type: "NodePort",
  clusterIP: "198.51.100.40",
  ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: 30040 }],
  endpoints: [{ ip: "203.0.113.2" }],
};
/** A Service without endpoints: its REJECT rules are part of what is compared. */
const IDLE: ServiceSpec = {
  name: "idle",
  clusterIP: "198.51.100.41",
  ports: [{ name: "x", port: 81, targetPort: 8080 }],
};
const SECRET = "s3cr3t-do-not-share";
const STATE_URL = `${NODE_METRICS_URL}/debug/state`;

/** An object as a real API server serves one that `kubectl apply` created, with a secret annotation. */
function applied(obj: object): KObject {
  const o = obj as KObject;
  return {
    ...o,
    metadata: {
      ...o.metadata,
      managedFields: [
        { manager: "kubectl-client-side-apply", operation: "Update", fieldsV1: { "f:spec": {} } },
      ],
      annotations: {
        "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify({ token: SECRET }),
        "example.com/token": SECRET,
      },
    },
  };
}

async function readState(h: ApiHarness): Promise<DebugState> {
  const r = await httpGet(h.topo!, "node", STATE_URL);
  if (!r.ok || r.status !== 200) throw new Error(`GET /debug/state: ${describeHttp(r)}`);
  return debugStateSchema.parse(JSON.parse(r.body ?? ""));
}

const SETUP_OBJECTS = [
  { kind: "Service", obj: applied(serviceObject(WEB)) },
  { kind: "EndpointSlice", obj: applied(sliceObject(WEB, NODE_NAME)!) },
  { kind: "Service", obj: applied(serviceObject(IDLE)) },
] as const;

/** Both modes' default minSyncPeriod: a sync asked for runs at most this long after the last one. */
const MIN_SYNC_PERIOD_MS = 1000;

/**
 * Waits (bounded) until nothing is pending, no sync runs and the last one ended over twice the
 * min sync period ago: a sync the Node's arrival asked for (its labels make the next sync a
 * full one) has run by then, so it cannot fold into the change a test makes next.
 */
async function quiet(h: ApiHarness): Promise<DebugState> {
  const r = await pollHttp(
    h.topo!,
    "node",
    STATE_URL,
    (a) => {
      if (!a.ok || a.status !== 200) return false;
      const s = debugStateSchema.parse(JSON.parse(a.body ?? ""));
      const last = s.syncs[0];
      if (!last || s.syncInProgress || s.pending.services.length + s.pending.endpoints.length > 0)
        return false;
      const ended = Date.parse(last.start) + last.durationMs;
      return Date.parse(s.generatedAt) - ended > 2 * MIN_SYNC_PERIOD_MS;
    },
    "no sync running or due",
    { daemon: h.kubeProxy!, timeoutMs: scaled(20_000), intervalMs: 250 },
  );
  return debugStateSchema.parse(JSON.parse(r.body ?? ""));
}

/**
 * Gives web two more endpoints (one on another node, one terminating here) through the API and
 * waits (bounded) for the answer to show a sync that applied it with nothing pending.
 */
async function changeEndpoints(
  h: ApiHarness,
): Promise<{ s: DebugState; applying: DebugState["syncs"][number] }> {
  const before = (await quiet(h)).syncs[0]!.number;
  const changed = sliceObject(
    {
      ...WEB,
      endpoints: [
        { ip: "203.0.113.2" },
        { ip: "203.0.113.3", node: "node-b" },
        { ip: "203.0.113.4", ready: false, serving: true, terminating: true },
      ],
    },
    NODE_NAME,
  )!;
  h.api!.server.update("EndpointSlice", applied(changed));
  const r = await pollHttp(
    h.topo!,
    "node",
    STATE_URL,
    (a) => {
      if (!a.ok || a.status !== 200) return false;
      const s = debugStateSchema.parse(JSON.parse(a.body ?? ""));
      return (
        s.syncs.some((x) => x.number > before && x.changedEndpoints > 0) && s.pending.endpoints.length === 0
      );
    },
    "a sync that applied the endpoint change",
    { daemon: h.kubeProxy!, timeoutMs: scaled(20_000) },
  );
  const s = debugStateSchema.parse(JSON.parse(r.body ?? ""));
  const applying = s.syncs.find((x) => x.number > before && x.changedEndpoints > 0)!;
  return { s, applying };
}

const ns = `kpts-${process.pid.toString(36)}-${randomBytes(3).toString("hex")}-replay`;

function inReplayNs(argv: readonly string[], stdin?: string) {
  return spawnSync("ip", ["netns", "exec", ns, ...argv], {
    input: stdin,
    encoding: "utf8",
    timeout: scaled(20_000),
  });
}

/** The KUBE chains of one table in an iptables-save, each with its rules (counters dropped), canaries left out. */
function kubeChains(save: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const line of save.split("\n")) {
    const declared = /^:(KUBE-\S+) /.exec(line);
    if (declared) out[declared[1]!] ??= [];
    const rule = /^-A (KUBE-\S+) /.exec(line);
    if (!rule) continue;
    const rules = out[rule[1]!] ?? [];
    rules.push(line.replace(/^\[\d+:\d+\] /, ""));
    out[rule[1]!] = rules;
  }
  for (const canary of ["KUBE-PROXY-CANARY", "KUBE-KUBELET-CANARY"]) delete out[canary];
  return out;
}

describe("/debug/state of the running binary (iptables mode, API server)", () => {
  const h: ApiHarness = {};
  let state: DebugState;

  beforeAll(async () => {
    await setUpApiRun(h, {
      node: NODE,
      pods: [{ name: "web", ip: "203.0.113.2" }],
      services: [],
      objects: SETUP_OBJECTS,
    });
    state = await readState(h);
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(async () => {
    spawnSync("ip", ["netns", "del", ns], { timeout: scaled(10_000) });
    await tearDownApiRun(h);
  });

  e2eTest(
    h,
    "the answer names the mode, the backend and why, and the Services with their endpoints",
    async () => {
      expect(state.mode).toBe("iptables");
      expect(state.nodeName).toBe(NODE_NAME);
      expect(state.families).toContain("IPv4");
      expect(state.backends[0]?.component).toBe("iptables");
      expect(["nft", "legacy"]).toContain(state.backends[0]!.chosen);
      expect(state.backends[0]!.reason.length).toBeGreaterThan(0);
      expect(state.initialized).toBe(true);
      const ports = state.services.IPv4 ?? [];
      expect(ports.map((p) => p.name)).toEqual(["default/idle:x", "default/web:http"]);
      const web = ports.find((p) => p.name === "default/web:http")!;
      expect(web).toMatchObject({
        type: "NodePort",
        clusterIP: WEB.clusterIP,
        port: 80,
        nodePort: 30040,
        internalTrafficPolicy: "Cluster",
        externalTrafficPolicy: "Cluster",
      });
      expect(web.endpoints).toEqual([
        {
          ip: "203.0.113.2",
          port: 8080,
          ready: true,
          serving: true,
          terminating: false,
          local: true,
          nodeName: NODE_NAME,
        },
      ]);
      expect(ports.find((p) => p.name === "default/idle:x")?.endpoints).toEqual([]);
      // The first sync wrote everything.
      const first = state.syncs.at(-1)!;
      expect(first).toMatchObject({ number: 1, kind: "full", result: "ok" });
      expect(first.families[0]).toMatchObject({ family: "IPv4", fullSync: true });
      expect(first.families[0]?.written?.count).toBeGreaterThan(0);
    },
  );

  e2eTest(
    h,
    "an endpoint change is applied by a partial sync, and the view shows the new endpoints",
    async () => {
      const { s, applying } = await changeEndpoints(h);
      expect(applying).toMatchObject({
        kind: "partial",
        result: "ok",
        changedServices: 0,
        changedEndpoints: 1,
      });
      expect(applying.families[0]).toMatchObject({ family: "IPv4", fullSync: false });
      expect(s.services.IPv4?.find((p) => p.name === "default/web:http")?.endpoints).toEqual([
        {
          ip: "203.0.113.2",
          port: 8080,
          ready: true,
          serving: true,
          terminating: false,
          local: true,
          nodeName: NODE_NAME,
        },
        {
          ip: "203.0.113.3",
          port: 8080,
          ready: true,
          serving: true,
          terminating: false,
          local: false,
          nodeName: "node-b",
        },
        {
          ip: "203.0.113.4",
          port: 8080,
          ready: false,
          serving: true,
          terminating: true,
          local: true,
          nodeName: NODE_NAME,
        },
      ]);
      state = s;
    },
  );

  e2eTest(h, "?format=snapshot holds no managedFields, last-applied copy or secret annotation", async () => {
    const r = await httpGet(h.topo!, "node", `${STATE_URL}?format=snapshot`, { timeoutMs: 15_000 });
    expect(r.ok && r.status === 200, describeHttp(r)).toBe(true);
    const body = r.body ?? "";
    expect(body).not.toContain("managedFields");
    expect(body).not.toContain("last-applied-configuration");
    expect(body).not.toContain(SECRET);
    const list = JSON.parse(body) as {
      kind: string;
      items: { kind: string; metadata?: { name?: string } }[];
    };
    expect(list.kind).toBe("List");
    expect(list.items.map((i) => `${i.kind}/${i.metadata?.name ?? ""}`)).toEqual([
      `Node/${NODE_NAME}`,
      "Service/idle",
      "Service/web",
      "EndpointSlice/web-e2e",
      "HostState/",
    ]);
    const yaml = await httpGet(h.topo!, "node", `${STATE_URL}?format=snapshot&output=yaml&host=false`);
    expect(yaml.status).toBe(200);
    expect(yaml.body).toContain("kind: EndpointSlice");
    expect(yaml.body).not.toContain(SECRET);
  });

  e2eTest(
    h,
    "the snapshot planned with --dry-run --state gives the rules the node holds",
    async () => {
      const r = await httpGet(h.topo!, "node", `${STATE_URL}?format=snapshot`, { timeoutMs: 15_000 });
      expect(r.status).toBe(200);
      const file = join(h.dir!, "snapshot.json");
      writeFileSync(file, r.body ?? "");
      const backend = state.backends[0]!.chosen;
      const plan = await runBinaryAsync(
        [
          "--dry-run",
          "--state",
          file,
          "--proxy-mode=iptables",
          `--hostname-override=${NODE_NAME}`,
          `--iptables-backend=${backend}`,
          // The same configuration as the daemon's (the snapshot holds objects and host, not flags).
          "--cluster-cidr=203.0.113.0/24",
          "--conntrack-max-per-core=0",
          "--output=json",
        ],
        { timeoutMs: 60_000 },
      );
      expect(plan.code, plan.stderr).toBe(0);
      const report = JSON.parse(plan.stdout) as { commands: { argv: string[]; stdin?: string }[] };
      // The planned restore (and the nfacct counters its rules may count with) replayed in a fresh namespace.
      expect(spawnSync("ip", ["netns", "add", ns], { timeout: scaled(10_000) }).status).toBe(0);
      const restores = report.commands.filter((c) => c.argv[0] === `iptables-${backend}-restore`);
      expect(restores.length).toBeGreaterThan(0);
      for (const c of report.commands.filter((c) => c.argv[0] === "nfacct")) inReplayNs(c.argv, c.stdin);
      for (const c of restores) {
        const done = inReplayNs(c.argv, c.stdin);
        expect({ code: done.status, stderr: done.stderr }).toEqual({ code: 0, stderr: "" });
      }
      for (const table of ["nat", "filter"]) {
        const planned = inReplayNs([`iptables-${backend}-save`, "-t", table]);
        const held = await h.topo!.run("node", [`iptables-${backend}-save`, "-t", table], {
          timeoutMs: 10_000,
        });
        expect(held.code).toBe(0);
        const want = kubeChains(held.stdout);
        // Not a vacuous match: the Services' chains and rules are there.
        expect(Object.keys(want).length).toBeGreaterThan(2);
        if (table === "nat") expect(Object.values(want).flat().join("\n")).toContain("KUBE-SEP-");
        else expect(Object.values(want).flat().join("\n")).toContain("198.51.100.41");
        expect(kubeChains(planned.stdout)).toEqual(want);
      }
    },
    scaled(120_000),
  );
});

describe("/debug/state of the running binary (nftables mode, API server)", () => {
  const h: ApiHarness = {};
  let state: DebugState;

  beforeAll(async () => {
    await setUpApiRun(h, {
      node: NODE,
      pods: [{ name: "web", ip: "203.0.113.2" }],
      services: [],
      objects: SETUP_OBJECTS,
      mode: "nftables",
    });
    state = await readState(h);
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(() => tearDownApiRun(h));

  e2eTest(h, "the answer names how transactions reach the kernel, and why", async () => {
    expect(state.mode).toBe("nftables");
    expect(state.backends).toHaveLength(1);
    // The compiled binary runs as root here: partial syncs go over netlink.
    expect(state.backends[0]).toEqual({
      component: "nftables writes",
      chosen: "netlink (partial syncs), nft -f (full syncs)",
      reason: "a netfilter netlink socket could be opened",
    });
    expect(state.services.IPv4?.map((p) => p.name)).toEqual(["default/idle:x", "default/web:http"]);
    const first = state.syncs.at(-1)!;
    expect(first).toMatchObject({ number: 1, kind: "full", result: "ok" });
    expect(first.families.find((f) => f.family === "IPv4")?.written).toMatchObject({ unit: "operations" });
  });

  e2eTest(h, "an endpoint change is a partial sync of a few operations", async () => {
    const { applying } = await changeEndpoints(h);
    expect(applying).toMatchObject({ kind: "partial", result: "ok", changedEndpoints: 1 });
    const v4 = applying.families.find((f) => f.family === "IPv4")!;
    expect(v4.fullSync).toBe(false);
    expect(v4.written?.unit).toBe("operations");
    expect(v4.written?.count).toBeGreaterThan(0);
  });
});
