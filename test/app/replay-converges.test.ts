// Partial syncs converge: replaying generated cluster snapshots s1 … sn leaves the simulated
// host holding what one full sync of sn alone writes, in every mode. Each step after the first is
// a partial sync over what the steps before left, so this judges every partial sync's deletes
// and rewrites against a full sync's, on generated Services (types, ports, policies, affinity)
// and endpoints (local or not, ready, serving, terminating), with keys that come, change and go.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { replaySteps, type Snapshot } from "../../src/app/replay.ts";
import type { Simulators } from "../../src/app/simulated-host.ts";
import type { RunOptions } from "../../src/cli/types.ts";
import { defaultProxyConfig } from "../../src/config/defaults.ts";
import type { ProxyConfig } from "../../src/config/types.ts";
import type { KubeObject, StateDocuments } from "../../src/k8s/state-file.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { scaled } from "../support/kernel-vm.ts";

const NODE = "node-a";
const NODE_IP = "192.0.2.10";
const NAMES = ["a", "b", "c", "d"] as const;

const node: KubeObject = {
  apiVersion: "v1",
  kind: "Node",
  metadata: { name: NODE, labels: { "kubernetes.io/hostname": NODE } },
  spec: { podCIDR: "192.0.2.128/25", podCIDRs: ["192.0.2.128/25"] },
  status: { addresses: [{ type: "InternalIP", address: NODE_IP }] },
} as KubeObject;

const endpointArb = fc.record({
  host: fc.integer({ min: 10, max: 14 }),
  local: fc.boolean(),
  state: fc.constantFrom("ready", "terminating-serving", "terminating", "not-ready"),
});

const serviceArb = fc.record({
  type: fc.constantFrom("ClusterIP", "NodePort", "LoadBalancer"),
  ports: fc.subarray(
    [
      { name: "p0", port: 80, protocol: "TCP" },
      { name: "p1", port: 53, protocol: "UDP" },
    ],
    { minLength: 1 },
  ),
  local: fc.boolean(),
  affinity: fc.boolean(),
  endpoints: fc.uniqueArray(endpointArb, { maxLength: 3, selector: (e) => e.host }),
});

/** Each name present or not: a later snapshot adds, changes and deletes Services. */
const clusterArb = fc.record(
  Object.fromEntries(NAMES.map((n) => [n, fc.option(serviceArb, { nil: undefined })])),
);

type ServiceSpec =
  fc.Arbitrary<typeof serviceArb> extends never ? never : ReturnType<typeof serviceArb.generate>;

function documents(cluster: Record<string, unknown>): StateDocuments {
  const services: KubeObject[] = [];
  const endpointSlices: KubeObject[] = [];
  NAMES.forEach((name, i) => {
    const s = cluster[name] as ServiceSpec["value"] | undefined;
    if (!s) return;
    const external = s.type !== "ClusterIP";
    services.push({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: "default" },
      spec: {
        type: s.type,
        clusterIP: `198.51.100.${10 + i}`,
        clusterIPs: [`198.51.100.${10 + i}`],
        ipFamilies: ["IPv4"],
        ports: s.ports.map((p, j) => ({
          ...p,
          targetPort: 8000 + p.port,
          ...(external ? { nodePort: 30000 + i * 10 + j } : {}),
        })),
        ...(external ? { externalTrafficPolicy: s.local ? "Local" : "Cluster" } : {}),
        ...(s.affinity ? { sessionAffinity: "ClientIP" } : {}),
      },
      ...(s.type === "LoadBalancer"
        ? { status: { loadBalancer: { ingress: [{ ip: `203.0.113.${100 + i}` }] } } }
        : {}),
    } as KubeObject);
    endpointSlices.push({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: `${name}-1`, namespace: "default", labels: { "kubernetes.io/service-name": name } },
      addressType: "IPv4",
      ports: s.ports.map((p) => ({ name: p.name, port: 8000 + p.port, protocol: p.protocol })),
      endpoints: s.endpoints.map((e) => ({
        addresses: [`203.0.113.${e.host + i * 10}`],
        nodeName: e.local ? NODE : "node-b",
        conditions: {
          ready: e.state === "ready",
          serving: e.state === "ready" || e.state === "terminating-serving",
          terminating: e.state.startsWith("terminating"),
        },
      })),
    } as KubeObject);
  });
  return {
    services,
    endpointSlices,
    nodes: [node],
    serviceCIDRs: [],
    ignored: [],
  } as unknown as StateDocuments;
}

/** What the host holds, in an order that does not depend on the order things were written in. */
function held(mode: string, sim: Simulators): Record<string, unknown> {
  const chains = (save: string) => {
    const out = new Map<string, string[]>();
    let table = "";
    for (const line of save.split("\n")) {
      if (line.startsWith("*")) table = line.slice(1);
      else if (line.startsWith(":")) out.set(`${table} ${line.slice(1).split(" ")[0]}`, []);
      else if (line.startsWith("-A ")) out.get(`${table} ${line.split(" ")[1]}`)?.push(line);
    }
    return Object.fromEntries([...out].sort(([a], [b]) => a.localeCompare(b)));
  };
  if (mode === "nftables") return { ip: sim.nft.dump("ip", "kube-proxy") };
  const iptables = chains(sim.iptables.IPv4.save());
  if (mode === "iptables") return { iptables };
  return {
    iptables,
    ipvs: sim.ipvs.save().split("\n").sort(),
    ipset: sim.ipset.save().split("\n").sort(),
    bound: sim.net.hasDevice("kube-ipvs0") ? sim.net.addresses("kube-ipvs0").sort() : [],
  };
}

/**
 * nftables flushes a chain that went stale and deletes it at a sync at least a second later
 * (upstream does the same): the chains the last step flushed are still there, empty. They are
 * taken out of the stepped dump here, after checking each is empty and was flushed by that step.
 */
function withoutChainsFlushedLast(stepped: string, direct: string, lastCommands: string): string {
  const directChains = new Set(direct.split("\n").filter((l) => l.startsWith("chain ")));
  const lines = stepped.split("\n");
  return lines
    .filter((line, i) => {
      if (!line.startsWith("chain ") || directChains.has(line)) return true;
      const name = line.slice("chain ".length).split(" ")[0];
      expect({ chain: name, empty: !(lines[i + 1] ?? "").startsWith("  ") }).toEqual({
        chain: name,
        empty: true,
      });
      expect(lastCommands).toContain(`flush chain ip kube-proxy ${name}\n`);
      return false;
    })
    .join("\n");
}

async function finalState(mode: string, clusters: readonly Record<string, unknown>[]) {
  const config: ProxyConfig = defaultProxyConfig();
  config.mode = mode as ProxyConfig["mode"];
  config.hostnameOverride = NODE;
  const opts: RunOptions = {
    dryRun: true,
    output: "json",
    cleanup: false,
    initOnly: false,
    iptablesBackend: "auto",
  };
  const snapshots: Snapshot[] = clusters.map((c, i) => ({ file: `s${i + 1}`, docs: documents(c) }));
  const { host, reports } = await replaySteps(config, opts, snapshots, nullLogger);
  for (const r of reports) expect(r.checks.filter((c) => !c.ok)).toEqual([]);
  const last = (reports.at(-1)?.commands ?? []).map((c) => c.stdin ?? "").join("");
  return { state: held(mode, host.simulators), last };
}

describe("replay: partial syncs end where one full sync of the last snapshot does", () => {
  for (const mode of ["iptables", "nftables", "ipvs"]) {
    test(
      mode,
      async () => {
        await fc.assert(
          fc.asyncProperty(fc.array(clusterArb, { minLength: 2, maxLength: 3 }), async (clusters) => {
            const stepped = await finalState(mode, clusters);
            const direct = (await finalState(mode, clusters.slice(-1))).state;
            if (mode === "nftables") {
              const ip = withoutChainsFlushedLast(String(stepped.state.ip), String(direct.ip), stepped.last);
              expect({ ip }).toEqual(direct as { ip: string });
            } else expect(stepped.state).toEqual(direct);
          }),
          { numRuns: 25 },
        );
      },
      scaled(120_000),
    );
  }
});
