// Topology PreferSameNode on the real kernel: dist/kube-proxy-ts runs (iptables mode) in the
// node namespace of a netns topology against the fake API server. A Service with
// trafficDistribution PreferSameNode has two ready endpoints: one pod on this node (node-a, zone
// zone-a) and one the EndpointSlice places on node-b (zone-b; in the topology it is a pod routed
// by the node like the other, so it is reachable). With the hints the EndpointSlice controller
// writes for PreferSameNode (each endpoint forNodes its own node and forZones its own zone), every
// connection from a pod on this node lands on the local endpoint; the hints removed through the
// API, connections spread over both; the hints back, they stay local again; a node hint on the
// local endpoint only (a slice the controller has not finished) is no topology: they spread.
//
// Run as root (iproute2, iptables installed):
// `node_modules/.bin/bun test --timeout 60000 test/e2e/topology-same-node.test.ts`.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { type ApiHarness, setUpApiRun, tearDownApiRun } from "../support/e2e-api-harness.ts";
import {
  IPTABLES_CHAINS,
  type NodeSpec,
  type ServiceSpec,
  serviceObject,
  sliceObject,
} from "../support/e2e-cluster.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest } from "../support/e2e-harness.ts";
import { NODE_NAME, waitForRules } from "../support/e2e-kubeproxy.ts";
import { describeSummary, probe } from "../support/e2e-traffic.ts";
import type { KObject } from "../support/fake-apiserver.ts";
import { ADDR, type PodSpec } from "../support/netns.ts";

const ZONE_LABEL = "topology.kubernetes.io/zone";
const NODE: NodeSpec = {
  name: NODE_NAME,
  internalIP: ADDR.node,
  podCIDR: ADDR.nodePodCIDR,
  labels: { [ZONE_LABEL]: "zone-a" },
};
const OTHER_NODE = "node-b";
const PODS: PodSpec[] = [
  { name: "local", ip: "203.0.113.81" },
  { name: "remote", ip: "203.0.113.82" },
  { name: "caller", ip: "203.0.113.83" },
];
const WHERE: Readonly<Record<string, { node: string; zone: string }>> = {
  "203.0.113.81": { node: NODE_NAME, zone: "zone-a" },
  "203.0.113.82": { node: OTHER_NODE, zone: "zone-b" },
};
const WEB: ServiceSpec = {
  name: "near",
  clusterIP: "198.51.100.81",
  ports: [{ name: "http", port: 80, targetPort: 8080 }],
  endpoints: [
    { ip: "203.0.113.81", node: NODE_NAME },
    { ip: "203.0.113.82", node: OTHER_NODE },
  ],
};
const SVC_CHAIN = IPTABLES_CHAINS.service("SVC", WEB, WEB.ports[0]!);
/** Connections per check: 20 fresh connections all picking one of two endpoints by chance is 2 in 2^20. */
const REQUESTS = 20;

/** The Service as the API server holds one with trafficDistribution set. */
function service(): KObject {
  const s = serviceObject(WEB) as KObject & { spec: Record<string, unknown> };
  return { ...s, spec: { ...s.spec, trafficDistribution: "PreferSameNode" } };
}

type Hints = "controller" | "none" | "node-hint-on-local-only";

/**
 * The EndpointSlice, each endpoint with its zone and: "controller", the hints the EndpointSlice
 * controller writes for PreferSameNode (forNodes its node, forZones its zone); "none"; or
 * "node-hint-on-local-only", a node hint on the local endpoint alone (a slice mid-update).
 */
function slice(hints: Hints): KObject {
  const base = sliceObject(WEB, NODE_NAME) as KObject & { endpoints: Record<string, unknown>[] };
  return {
    ...base,
    endpoints: base.endpoints.map((e) => {
      const at = WHERE[(e.addresses as string[])[0]!]!;
      const own =
        hints === "controller"
          ? { forZones: [{ name: at.zone }], forNodes: [{ name: at.node }] }
          : hints === "node-hint-on-local-only" && at.node === NODE_NAME
            ? { forNodes: [{ name: at.node }] }
            : undefined;
      return { ...e, zone: at.zone, ...(own ? { hints: own } : {}) };
    }),
  };
}

/** Rules of the Service's KUBE-SVC chain that pick an endpoint. */
function endpointJumps(nat: string): number {
  return nat.split("\n").filter((l) => l.startsWith(`-A ${SVC_CHAIN} `) && l.includes("-j KUBE-SEP-")).length;
}

async function waitForEndpointJumps(h: ApiHarness, n: number): Promise<void> {
  await waitForRules(
    h.topo!,
    h.kubeProxy,
    (v) => endpointJumps(v.nat) === n,
    `${n} endpoint(s) in ${SVC_CHAIN}`,
  );
}

/** REQUESTS fresh connections from the caller pod to the ClusterIP: replying pod -> count. */
async function spread(h: ApiHarness): Promise<Record<string, number>> {
  const s = await probe(h.topo!, "caller", { target: `${WEB.clusterIP}:80`, count: REQUESTS });
  expect(s.okCount, describeSummary(s)).toBe(REQUESTS);
  return s.backends;
}

describe("topology PreferSameNode: traffic stays on the node while the hints say so", () => {
  const h: ApiHarness = {};

  beforeAll(async () => {
    await setUpApiRun(h, {
      node: NODE,
      pods: PODS,
      services: [],
      objects: [
        { kind: "Service", obj: service() },
        { kind: "EndpointSlice", obj: slice("controller") },
      ],
    });
    await waitForEndpointJumps(h, 1);
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await tearDownApiRun(h);
  }, E2E_TEST_TIMEOUT_MS);

  e2eTest(h, "node hints naming this node: every connection lands on the local endpoint", async () => {
    expect(await spread(h)).toEqual({ local: REQUESTS });
  });

  e2eTest(h, "hints removed: connections spread over both endpoints", async () => {
    h.api!.server.update("EndpointSlice", slice("none"));
    await waitForEndpointJumps(h, 2);
    const backends = await spread(h);
    expect(Object.keys(backends).sort(), JSON.stringify(backends)).toEqual(["local", "remote"]);
  });

  e2eTest(h, "hints back: every connection lands on the local endpoint again", async () => {
    h.api!.server.update("EndpointSlice", slice("controller"));
    await waitForEndpointJumps(h, 1);
    expect(await spread(h)).toEqual({ local: REQUESTS });
  });

  e2eTest(
    h,
    "a node hint on the local endpoint only (no zone hints): no topology, connections spread",
    async () => {
      h.api!.server.update("EndpointSlice", slice("node-hint-on-local-only"));
      await waitForEndpointJumps(h, 2);
      const backends = await spread(h);
      expect(Object.keys(backends).sort(), JSON.stringify(backends)).toEqual(["local", "remote"]);
    },
  );
});
