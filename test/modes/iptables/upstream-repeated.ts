// The inputs of upstream v1.37's TestSyncProxyRulesRepeated (pkg/proxy/iptables/proxier_test.go)
// as --state snapshots for a replay: one snapshot per sync the test runs, each holding the
// Services and EndpointSlices the test's proxier has seen by then and the Node it runs as
// (upstream's "test-node", 192.168.0.2). The first snapshot also carries a HostState standing
// in for upstream's fake node: its lo and eth0 addresses, nfacct counters available, and an
// iptables without --random-fully (upstream's fake iptables reports none; before 1.6.2 the
// real tool has none either). The addresses are upstream's own: the expected dumps are facts
// about them.

import type { EndpointSliceObject, NodeObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { UPSTREAM_NODE_ADDRESSES } from "../../support/upstream-test-node.ts";

/** The node name upstream's NewFakeProxier uses. */
export const UPSTREAM_TEST_NODE = "test-node";

/** One YAML/JSON document of a snapshot. */
export type SnapshotDoc = ServiceObject | EndpointSliceObject | NodeObject | Record<string, unknown>;

function service(ns: string, name: string, clusterIP: string, port: string, number: number): ServiceObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: ns },
    spec: { type: "ClusterIP", clusterIP, ports: [{ name: port, port: number, protocol: "TCP" }] },
  };
}

/** Upstream's makeTestEndpointSlice(ns, name, 1, ...): no conditions (ready), no node name. */
function slice(ns: string, name: string, ips: string[], port: string, number: number): EndpointSliceObject {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: `${name}-1`, namespace: ns, labels: { "kubernetes.io/service-name": name } },
    addressType: "IPv4",
    ports: [{ name: port, port: number, protocol: "TCP" }],
    endpoints: ips.map((ip) => ({ addresses: [ip] })),
  };
}

function node(labels?: Record<string, string>): NodeObject {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: UPSTREAM_TEST_NODE, ...(labels ? { labels } : {}) },
    status: { addresses: [{ type: "InternalIP", address: "192.168.0.2" }] },
  };
}

const isLoopback = (a: string) => a.startsWith("127.") || a === "::1/128";

const HOST_STATE: SnapshotDoc = {
  apiVersion: "kube-proxy-ts/v1",
  kind: "HostState",
  iptablesVersion: "iptables v1.6.1 (legacy)",
  nfacct: true,
  interfaces: [
    { name: "lo", addresses: UPSTREAM_NODE_ADDRESSES.filter(isLoopback) },
    { name: "eth0", addresses: UPSTREAM_NODE_ADDRESSES.filter((a) => !isLoopback(a)) },
  ],
};

/** The test's objects, as it makes them (eps3 in its three versions). */
export const REPEATED = {
  svc1: service("ns1", "svc1", "172.30.0.41", "p80", 80),
  svc2: service("ns2", "svc2", "172.30.0.42", "p8080", 8080),
  svc3: service("ns3", "svc3", "172.30.0.43", "p80", 80),
  svc4: service("ns4", "svc4", "172.30.0.44", "p80", 80),
  eps1: slice("ns1", "svc1", ["10.0.1.1"], "p80", 80),
  eps2: slice("ns2", "svc2", ["10.0.2.1"], "p8080", 8080),
  eps3: slice("ns3", "svc3", ["10.0.3.1"], "p80", 80),
  eps3update: slice("ns3", "svc3", ["10.0.3.2"], "p80", 80),
  eps3update2: slice("ns3", "svc3", ["10.0.3.2", "10.0.3.3"], "p80", 80),
  eps4: slice("ns4", "svc4", ["10.0.4.1"], "p80", 80),
};

const { svc1, svc2, svc3, svc4, eps1, eps2, eps3, eps3update, eps3update2, eps4 } = REPEATED;

/**
 * The nine snapshots, in the order of upstream's nine expected dumps. Upstream deletes Services
 * only (OnServiceDelete), so their EndpointSlices stay. Step 8 changes nothing (upstream calls
 * syncProxyRules again). Step 9 deletes svc4; upstream makes that partial sync fail with a rule
 * it injects into its fake iptables (which no snapshot can do) and checks the full sync that
 * follows, so here the Node's labels change in the same step: a change kube-proxy-ts answers
 * with a full sync.
 */
export function repeatedSnapshots(): SnapshotDoc[][] {
  const s1: SnapshotDoc[] = [node(), svc1, svc2, eps1, eps2];
  const s2 = [...s1, svc3, eps3];
  const s3 = s2.filter((d) => d !== svc2);
  const s4 = [...s3, svc4];
  const s5 = [...s4, eps4];
  const s6 = s5.map((d) => (d === eps3 ? eps3update : d));
  const s7 = s6.map((d) => (d === eps3update ? eps3update2 : d));
  const s8 = [...s7];
  const s9 = s8
    .filter((d) => d !== svc4)
    .map((d) => (d.kind === "Node" ? node({ "example.com/relabelled": "yes" }) : d));
  return [[...s1, HOST_STATE], s2, s3, s4, s5, s6, s7, s8, s9];
}
