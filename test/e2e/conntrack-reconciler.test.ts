// The conntrack reconciler on the real kernel: dist/kube-proxy-ts runs (iptables mode) in the
// node namespace of a netns topology against the fake API server; the test plants UDP flows in
// that namespace's conntrack table as a missed EndpointSlice event would leave them (a Service
// frontend's flow still answered by an endpoint that no longer serves), causes one sync through
// the API, and checks with `conntrack -L` that exactly those flows went, while a flow to a
// serving endpoint and a flow to an address no Service holds stayed, and that /metrics counts
// the deletions.
//
// Run as root (iproute2, iptables, conntrack installed):
// `node_modules/.bin/bun test --timeout 60000 test/e2e/conntrack-reconciler.test.ts`.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import {
  type ApiHarness,
  insertUdpFlow,
  isFlow,
  listUdpFlows,
  scrapeNode,
  setUpApiRun,
  tearDownApiRun,
  type UdpFlow,
} from "../support/e2e-api-harness.ts";
import { serviceObjects } from "../support/e2e-apiserver.ts";
import type { NodeSpec, ServiceSpec } from "../support/e2e-cluster.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest } from "../support/e2e-harness.ts";
import { metricValue } from "../support/e2e-http.ts";
import { NODE_NAME } from "../support/e2e-kubeproxy.ts";
import { scaled } from "../support/kernel-vm.ts";
import { ADDR, type PodSpec } from "../support/netns.ts";

const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const PODS: PodSpec[] = [{ name: "ct1", ip: "203.0.113.71" }];
const SERVING = "203.0.113.71";
/** An address no endpoint has (any more): where a stale flow's replies come from. */
const GONE = "203.0.113.99";
const CLIENT_POD = "203.0.113.72";

const DNS: ServiceSpec = {
  name: "dns",
  type: "NodePort",
  clusterIP: "198.51.100.71",
  ports: [{ name: "dns", port: 53, targetPort: 5353, protocol: "UDP", nodePort: 30053 }],
  endpoints: [{ ip: SERVING }],
};
/** Created through the API after the flows are planted: its only role is to cause a sync. */
const POKE: ServiceSpec = {
  name: "poke",
  clusterIP: "198.51.100.79",
  ports: [{ name: "http", port: 80, targetPort: 8080 }],
};

const flow = (dst: string, dport: number, replySrc: string, sport: number, replySport = 5353): UdpFlow => ({
  src: CLIENT_POD,
  sport,
  dst,
  dport,
  replySrc,
  replySport,
});

/** To the ClusterIP, answered by an endpoint that is gone: stale. */
const STALE_CLUSTER_IP = flow(DNS.clusterIP, 53, GONE, 40001);
/** To the NodePort on the node's address, answered by the gone endpoint: stale. */
const STALE_NODEPORT = flow(ADDR.node, 30053, GONE, 40002);
/** To the ClusterIP, answered by the serving endpoint's address but another port (an old targetPort): stale. */
const STALE_PORT = flow(DNS.clusterIP, 53, SERVING, 40005, 5300);
/** To the ClusterIP, answered by the serving endpoint: kept. */
const LIVE = flow(DNS.clusterIP, 53, SERVING, 40003);
/**
 * Straight to the gone endpoint's address and port, no Service in between (its pod may live on
 * outside every Service): not the reconciler's business, although GONE answers it too.
 */
const DIRECT = flow(GONE, 5353, GONE, 40006);
/** To an address of the service range that no Service holds: not the reconciler's business. */
const UNRELATED = flow("198.51.100.78", 53, GONE, 40004);

describe("conntrack reconciler: a stale UDP flow left by a missed event goes at the next sync", () => {
  const h: ApiHarness = {};

  beforeAll(async () => {
    await setUpApiRun(h, { node: NODE, pods: PODS, servers: { udp: [5353] }, services: [DNS] });
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await tearDownApiRun(h);
  }, E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "stale ClusterIP, NodePort and old-port flows go; live, unrelated and direct flows stay",
    async () => {
      const kept = [LIVE, UNRELATED, DIRECT];
      const stale = [STALE_CLUSTER_IP, STALE_NODEPORT, STALE_PORT];
      // The flows to keep go in first: a reconcile pass that deletes the last stale flow has
      // listed after they were all there. (conntrack -I's success is the proof of planting: a
      // pass of a sync already under way may delete a stale flow before any listing here.)
      for (const f of [...kept, ...stale]) await insertUdpFlow(h, f);

      // Any sync runs the reconciler; a new Service delivered by the watch causes one.
      h.api!.server.create("Service", serviceObjects(POKE, NODE_NAME).service);

      const limitMs = scaled(20_000);
      const deadline = Date.now() + limitMs;
      let flows = await listUdpFlows(h);
      const staleLeft = () => flows.some((l) => stale.some((f) => isFlow(l, f)));
      for (let i = 0; i < 200 && staleLeft() && Date.now() < deadline; i++) {
        await new Promise((r) => setTimeout(r, 200));
        flows = await listUdpFlows(h);
      }
      const listing = `conntrack -L (node):\n${flows.join("\n")}`;
      expect(staleLeft(), `stale flows still there after ${limitMs} ms\n${listing}`).toBe(false);
      for (const f of kept) {
        expect(
          flows.some((l) => isFlow(l, f)),
          `a flow that is not stale went: ${JSON.stringify(f)}\n${listing}`,
        ).toBe(true);
      }
    },
  );

  e2eTest(h, "/metrics counts the deletions for IPv4 and times the reconciler", async () => {
    const s = await scrapeNode(h);
    const deleted = metricValue(s, "kubeproxy_conntrack_reconciler_deleted_entries_total", {
      ip_family: "IPv4",
    });
    expect(
      deleted,
      "kubeproxy_conntrack_reconciler_deleted_entries_total{ip_family=IPv4}",
    ).toBeGreaterThanOrEqual(3);
    const passes = metricValue(s, "kubeproxy_conntrack_reconciler_sync_duration_seconds_count", {
      ip_family: "IPv4",
    });
    expect(
      passes,
      "kubeproxy_conntrack_reconciler_sync_duration_seconds_count{ip_family=IPv4}",
    ).toBeGreaterThanOrEqual(2);
  });
});
