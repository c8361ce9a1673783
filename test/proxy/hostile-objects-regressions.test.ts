// The counterexamples the hostile-object properties found, pinned as plain tests with concrete
// objects, so each stays fixed whatever the generators do later. Every case runs in every mode
// through one full recorded sync (test/support/hostile-sync.ts) and must
//   - not throw (P1),
//   - write only lines the proxier writes (P3, test/support/restore-grammar.ts),
//   - be accepted by the real tools in a network namespace this file creates (P2,
//     test/support/real-restore.ts).
// The names say where the hostile text sits; most were shrunk by fast-check from generated
// clusters (see hostile-objects.property.test.ts and hostile-objects-kernel.property.test.ts).

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { NodeObject } from "../../src/k8s/objects.ts";
import type { ModeName } from "../../src/modes/registry.ts";
import { type ClusterObjects, SYNC_NODE, SYNC_NODE_IP, syncOnce } from "../support/hostile-sync.ts";
import { endpointSlice, ep, service } from "../support/proxy-cluster.ts";
import { createRealHost, type RealHost } from "../support/real-restore.ts";
import { commandViolations } from "../support/restore-grammar.ts";

const MODES: readonly ModeName[] = ["iptables", "nftables", "ipvs"];

/**
 * A LoadBalancer Service ns/name with one port (named `port`) and an endpoint on this node and
 * one elsewhere, so every kind of rule (cluster IP, external IP, NodePort, firewall, endpoint
 * chains, affinity) carries the names.
 */
function exposed(ns: string, name: string, port = "http"): ClusterObjects {
  const svc = service(
    ns,
    name,
    {
      type: "LoadBalancer",
      clusterIP: "198.51.100.10",
      clusterIPs: ["198.51.100.10"],
      ports: [{ name: port, port: 80, protocol: "TCP", nodePort: 30080 }],
      externalIPs: ["203.0.113.50"],
      loadBalancerSourceRanges: ["203.0.113.0/25"],
      sessionAffinity: "ClientIP",
    },
    { loadBalancer: { ingress: [{ ip: "203.0.113.60" }] } },
  );
  const slice = endpointSlice(ns, name, [ep("192.0.2.11", { node: SYNC_NODE }), ep("192.0.2.12")], {
    ports: [{ name: port, port: 8080, protocol: "TCP" }],
  });
  return { serviceCIDRs: [], services: [svc], slices: [slice], node: undefined };
}

/** A Service with no endpoints: the "has no endpoints" rules and no-endpoint map elements. */
function lonely(ns: string, name: string, port = "http"): ClusterObjects {
  const svc = service(ns, name, {
    type: "NodePort",
    clusterIP: "198.51.100.20",
    ports: [{ name: port, port: 80, protocol: "TCP", nodePort: 30090 }],
  });
  return { serviceCIDRs: [], services: [svc], slices: [], node: undefined };
}

/** The Node this proxy runs on, with one field replaced. */
function node(patch: (n: Record<string, unknown>) => void): ClusterObjects {
  const n: Record<string, unknown> = {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: SYNC_NODE, labels: { "topology.kubernetes.io/zone": "zone-a" } },
    spec: { podCIDR: "192.0.2.0/25", podCIDRs: ["192.0.2.0/25"] },
    status: { addresses: [{ type: "InternalIP", address: SYNC_NODE_IP }] },
  };
  patch(n);
  const cluster = exposed("ns", "web");
  return { ...cluster, node: n as NodeObject };
}

const CASES: [string, ClusterObjects][] = [
  // Valid, at the API server's limits: 63 + 63 + 15 characters pass nft's 128-byte comments.
  ["the longest valid names", exposed(`ns-${"a".repeat(60)}`, `svc-${"b".repeat(59)}`, "longportname-15")],
  [
    "the longest valid names, no endpoints",
    lonely(`ns-${"a".repeat(60)}`, `svc-${"b".repeat(59)}`, "longportname-15"),
  ],
  // fast-check, iptables P2 (shrunk): the quote ends the comment, "-j ACCEPT" becomes a target.
  ['a Service name with a quote: web" -j ACCEPT "', lonely("ns", 'web" -j ACCEPT "')],
  // fast-check, iptables P3 (shrunk): a lone quote leaves the comment open to the end of line.
  ['a namespace that is one quote: "', lonely('"', "web")],
  // fast-check, nftables P3 (shrunk): a quote inside an nft chain name.
  ['a port name with a quote: a"a', exposed("default", "web", 'a"a')],
  ['a backslash before a quote in a port name: a\\"b', exposed("ns", "web", 'a\\"b')],
  [
    "a newline in a port name that opens a new table",
    exposed("ns", "web", "web\nCOMMIT\n*nat\n-A PREROUTING -j ACCEPT"),
  ],
  ["a newline and a rule in a namespace", lonely('x"\n-A INPUT -j ACCEPT\n#', "web")],
  ["a ';' in a namespace: web; flush ruleset", exposed("web; flush ruleset", "web")],
  ["a quote, ';' and '#' in a port name: \"; flush ruleset; #", exposed("ns", "web", '"; flush ruleset; #')],
  ["a '#' in a namespace: a#e", exposed("a#e", "api")],
  ["an unquoted iptables option in a port name: -j ACCEPT", exposed("default", "web", "-j ACCEPT")],
  [
    "an iptables table option in a name: -A -t 198.51.100.1:80 -s rr",
    exposed("hs", "-A -t 198.51.100.1:80 -s rr"),
  ],
  ["nft punctuation in names: c$i, v@k1, u,h, a0=", exposed("c$i", "v@k1", "u,h")],
  ["an '=' and a '$' in names", lonely("a0=", "a00a0aaa", "0$0b")],
  ["an address with a ':' as a port name", exposed("ns", "web", "2001:db8::/129")],
  ["a 300-character Service name", exposed("ns", "a".repeat(300))],
  ["a 300-character namespace", lonely("a".repeat(300), "web")],
  // 124 x "é" is 248 bytes: with "ns/web:" and the rule's words, past xt_comment's 255 and nft's 128.
  ["a 248-byte multibyte port name", exposed("ns", "web", "é".repeat(124))],
  ["a multibyte namespace past 128 bytes (nft comments)", lonely("中".repeat(60), "api")],
  // Cut at a UTF-16 boundary, an emoji loses half of itself (a lone surrogate reaches the tool).
  ["emoji names cut in the middle of a character", lonely("ns", "api", "😀".repeat(80))],
  ["an escape character in a namespace", lonely("y\u001bc", "web")],
  ["a NUL in a port name", exposed("default", "web", "web\u0000null")],
  ["a carriage return in a namespace", exposed("j\rf", "db")],
  ["a tab in a namespace", exposed("a9q-y13\tl-h7ihw5", "db")],
  ["a right-to-left override and a zero-width space in names", exposed("a\u202eb", "w\u200beb")],
  // fast-check, every mode's P1 (shrunk): the Node readers assume lists and strings.
  [
    "a Node whose status.addresses is a number",
    node((n) => {
      n.status = { addresses: 0 };
    }),
  ],
  [
    "a Node whose status.addresses holds null",
    node((n) => {
      n.status = { addresses: [null] };
    }),
  ],
  [
    "a Node address that is not a string",
    node((n) => {
      n.status = { addresses: [{ type: "InternalIP", address: 5 }] };
    }),
  ],
  [
    "a Node whose spec.podCIDRs is a string",
    node((n) => {
      n.spec = { podCIDRs: "192.0.2.0/25" };
    }),
  ],
  [
    "a Node whose labels are a list",
    node((n) => {
      n.metadata = { name: SYNC_NODE, labels: ["zone-a"] };
    }),
  ],
  [
    "a Node zone label that is not a string",
    node((n) => {
      n.metadata = { name: SYNC_NODE, labels: { "topology.kubernetes.io/zone": { toString: "x" } } };
    }),
  ],
];

let host: RealHost;
beforeAll(async () => {
  host = await createRealHost();
});
afterAll(async () => {
  await host?.remove();
});

describe.each(MODES)("%s mode, pinned hostile objects", (mode) => {
  test.each(CASES)("%s", async (_name, cluster) => {
    // P1: the sync must come back (a throw here is the failure).
    const record = await syncOnce(mode, cluster);
    // P3: nothing but lines the proxier writes.
    expect(record.commands.flatMap(commandViolations)).toEqual([]);
    // P2: the real tools accept every input.
    try {
      expect(await host.replay(record.commands)).toBeUndefined();
    } finally {
      await host.reset();
    }
  });
});
