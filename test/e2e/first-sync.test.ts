// The first sync of the real binary, as an operator sees it (issue "Scale"): with 1,200 nat
// chains the restore declares them in name order (visible in --dry-run), the canary chains are
// in place in mangle, nat and filter once it has synced, traffic flows, and at -v=2 the binary
// logs its memory after the first sync. Everything runs in the test's own network namespaces.
import { afterAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { runBinary, tempDir } from "../support/binary.ts";
import { type NodeSpec, renderState, type ServiceSpec, writeStateFile } from "../support/e2e-cluster.ts";
import {
  hasServiceRule,
  iptablesSave,
  NODE_NAME,
  startKubeProxy,
  waitForRules,
} from "../support/e2e-kubeproxy.ts";
import { type Daemon, probe, startServer } from "../support/e2e-traffic.ts";
import { ADDR, createTopology, namespaceExists, type Topology } from "../support/netns.ts";

const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const POD = { name: "p1", ip: "203.0.113.11" };
const WEB: ServiceSpec = {
  name: "web",
  clusterIP: "198.51.100.10",
  ports: [{ name: "http", port: 80, targetPort: 8080 }],
  endpoints: [{ ip: POD.ip }],
};
/** 400 more Services with two endpoints each: 1,200 per-service chains, past the ordering threshold. */
const MANY: ServiceSpec[] = Array.from({ length: 400 }, (_, i) => ({
  name: `svc-${i}`,
  clusterIP: `198.51.100.${(i % 200) + 20}`,
  ports: [{ name: "p", port: 1000 + i, targetPort: 9000 + i }],
  endpoints: [{ ip: "203.0.113.21" }, { ip: "203.0.113.22" }],
}));

const natDeclarations = (restore: string) =>
  restore
    .slice(restore.indexOf("*nat\n"))
    .split("\n")
    .filter((l) => l.startsWith(":"));

describe("first sync of the real binary", () => {
  const dir = tempDir("kpts-e2e-first-sync-");
  const stateFile = join(dir, "cluster.json");
  writeStateFile(stateFile, renderState(NODE, [WEB, ...MANY]));
  let topo: Topology | undefined;
  let kubeProxy: Daemon | undefined;

  afterAll(async () => {
    const names = Object.values(topo?.namespaces ?? {});
    try {
      await kubeProxy?.kill(3000);
      await topo?.destroy();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const left = names.filter(namespaceExists);
    if (left.length > 0) throw new Error(`namespaces left behind: ${left.join(", ")}`);
  }, 30_000);

  test("--dry-run: past 1,000 chains the nat chains are declared in name order; a small cluster keeps upstream's order", () => {
    const restoreOf = (args: string[]) => {
      const r = runBinary(["--dry-run", "--output=json", "--hostname-override", NODE_NAME, ...args]);
      const report = JSON.parse(r.stdout) as { commands: { argv: string[]; stdin?: string }[] };
      const restore = report.commands.find((c) => /^iptables-.*restore$/.test(c.argv[0] ?? ""));
      expect(restore?.stdin).toBeDefined();
      return restore!.stdin!;
    };
    const big = natDeclarations(restoreOf(["--state", stateFile]));
    expect(big.length).toBeGreaterThan(1200);
    expect(big).toEqual([...big].sort());
    const small = natDeclarations(restoreOf(["--state", "examples/cluster.yaml"]));
    expect(small[0]).toBe(":KUBE-SERVICES - [0:0]");
    expect(small).not.toEqual([...small].sort());
  });

  test("after the first sync: canaries in mangle, nat and filter, traffic flows, memory logged", async () => {
    topo = await createTopology({ pods: [POD] });
    await startServer(topo, POD.name, { tcp: [8080] });
    kubeProxy = startKubeProxy(topo, { stateFile });
    await waitForRules(
      topo,
      kubeProxy,
      (v) =>
        hasServiceRule(v.nat, "default/web:http cluster IP") &&
        v.nat.includes("default/svc-399:p cluster IP"),
      "the first sync",
      60_000,
    );
    for (const table of ["mangle", "nat", "filter"] as const) {
      expect(await iptablesSave(topo, table), `${table} canary`).toContain(":KUBE-PROXY-CANARY ");
    }
    const served = await probe(topo, "client", { target: `${WEB.clusterIP}:80`, count: 3, timeoutMs: 3000 });
    expect(served.okCount, JSON.stringify(served.errors)).toBe(3);
    const bound = Date.now() + 20_000;
    while (!kubeProxy.stderr().includes('"Memory after the first sync"') && Date.now() < bound) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(kubeProxy.stderr()).toMatch(/"Memory after the first sync" rssMiB=\d+ heapUsedMiB=\d+/);
  }, 90_000);
});
