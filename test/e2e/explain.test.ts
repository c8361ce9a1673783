// `kube-proxy-ts explain` with the built binary on a --state snapshot (examples/cluster.yaml plus
// an externalTrafficPolicy: Local NodePort whose only endpoint is on another node, and an IPv6
// ClusterIP), in iptables,
// nftables and ipvs mode: each verdict, endpoint share and reason an operator reads, in text and
// JSON, and the exit codes (0 whatever the verdict; 1 with a message on bad input).

import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Explanation } from "../../src/modes/explain.ts";
import { runBinary, tempDir } from "../support/binary.ts";

const dir = tempDir("kpts-explain-");
const state = join(dir, "cluster.yaml");
const REMOTE_ONLY = `
---
apiVersion: v1
kind: Service
metadata: { name: remote, namespace: default }
spec:
  type: NodePort
  clusterIP: 198.51.100.60
  clusterIPs: [198.51.100.60]
  ipFamilies: [IPv4]
  externalTrafficPolicy: Local
  ports:
    - { name: http, port: 80, targetPort: 8080, nodePort: 30099, protocol: TCP }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: remote-a1b2c
  namespace: default
  labels: { kubernetes.io/service-name: remote }
addressType: IPv4
ports:
  - { name: http, port: 8080, protocol: TCP }
endpoints:
  - addresses: [203.0.113.77]
    conditions: { ready: true, serving: true, terminating: false }
    nodeName: node-b
`;
const IPV6_ONLY = `
---
apiVersion: v1
kind: Service
metadata: { name: web6, namespace: default }
spec:
  type: ClusterIP
  clusterIP: 2001:db8:5::10
  clusterIPs: [2001:db8:5::10]
  ipFamilies: [IPv6]
  ports:
    - { name: http, port: 80, targetPort: 8080, protocol: TCP }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web6-x1
  namespace: default
  labels: { kubernetes.io/service-name: web6 }
addressType: IPv6
ports:
  - { name: http, port: 8080, protocol: TCP }
endpoints:
  - addresses: ["2001:db8:6::11"]
    conditions: { ready: true, serving: true, terminating: false }
    nodeName: node-a
  - addresses: ["2001:db8:6::12"]
    conditions: { ready: true, serving: true, terminating: false }
    nodeName: node-b
`;
writeFileSync(state, readFileSync("examples/cluster.yaml", "utf8") + REMOTE_ONLY + IPV6_ONLY);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function explainJson(mode: string, target: string, ...extra: string[]): Explanation {
  const r = runBinary([
    "explain",
    target,
    "--state",
    state,
    `--proxy-mode=${mode}`,
    "--output=json",
    ...extra,
  ]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Explanation;
}

const shares = (e: Explanation) =>
  Object.fromEntries(e.endpoints.map((x) => [x.endpoint, Math.round(x.probability * 1000) / 1000]));

describe("explain of an IPv6 ClusterIP (ip6tables-save, nft ip6 table, IPv6 virtual servers)", () => {
  for (const mode of ["iptables", "nftables", "ipvs"]) {
    test(mode, () => {
      const e = explainJson(mode, "[2001:db8:5::10]:80/tcp", "--from", "2001:db8:6::99");
      expect(e.verdict).toBe("dnat");
      expect(shares(e)).toEqual({ "[2001:db8:6::11]:8080": 0.5, "[2001:db8:6::12]:8080": 0.5 });
    });
  }
});

for (const mode of ["iptables", "nftables"]) {
  describe(`explain in ${mode} mode on a --state snapshot`, () => {
    test("a ClusterIP with two endpoints: 50% each, no masquerade from a pod", () => {
      const e = explainJson(mode, "198.51.100.10:80", "--from", "203.0.113.5");
      expect(e.mode).toBe(mode);
      expect(e.verdict).toBe("dnat");
      expect(shares(e)).toEqual({ "203.0.113.11:8080": 0.5, "203.0.113.71:8080": 0.5 });
      expect(e.endpoints.every((x) => !x.masquerade)).toBe(true);
      expect(e.paths).toHaveLength(2);
      for (const p of e.paths) expect(p.hops.length).toBeGreaterThan(0);
    });

    test("a UDP port of a multi-port Service", () => {
      const e = explainJson(mode, "198.51.100.53:53/udp");
      expect(shares(e)).toEqual({ "203.0.113.20:53": 1 });
    });

    test("a Service without endpoints: rejected", () => {
      const e = explainJson(mode, "198.51.100.50:9000");
      expect(e.verdict).toBe("reject");
      expect(e.cause).toBe("no-endpoints");
      expect(e.endpoints).toEqual([]);
    });

    test("a LoadBalancer IP from outside its source ranges: dropped; from inside: DNATed", () => {
      const out = explainJson(mode, "192.0.2.200:443", "--from", "198.51.100.7");
      expect(out.verdict).toBe("drop");
      expect(out.cause).toBe("source-range");
      const inside = explainJson(mode, "192.0.2.200:443", "--from", "203.0.113.130");
      expect(inside.verdict).toBe("dnat");
      // externalTrafficPolicy Local: the local endpoint only, the client's address kept.
      expect(shares(inside)).toEqual({ "203.0.113.40:8443": 1 });
      expect(inside.endpoints[0]?.masquerade).toBe(false);
    });

    test("a NodePort: both endpoints, masqueraded; eTP Local without a local endpoint: dropped", () => {
      const np = explainJson(mode, "192.0.2.10:30080", "--from", "192.0.2.1");
      expect(np.verdict).toBe("dnat");
      expect(Object.keys(shares(np)).sort()).toEqual(["203.0.113.30:8080", "203.0.113.90:8080"]);
      expect(np.endpoints.every((x) => x.masquerade)).toBe(true);
      const remote = explainJson(mode, "192.0.2.10:30099", "--from", "192.0.2.1");
      expect(remote.verdict).toBe("drop");
      expect(remote.cause).toBe("no-local-endpoints");
    });

    test("not a Service address: not handled by kube-proxy", () => {
      const e = explainJson(mode, "192.0.2.99:80");
      expect(e.verdict).toBe("not-handled");
      expect(e.reason).toContain("not handled by kube-proxy");
    });

    test("text output: the verdict, the endpoints with their share, one line per hop", () => {
      const r = runBinary(["explain", "198.51.100.10:80", "--state", state, `--proxy-mode=${mode}`]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`in ${mode} mode`);
      expect(r.stdout).toContain("verdict: dnat: load-balanced to 2 endpoints");
      expect(r.stdout).toMatch(/^ {2}203\.0\.113\.11:8080 {2}50%$/m);
      expect(r.stdout).toContain("path 1 of 2 (50%): DNAT to ");
      const hop =
        mode === "iptables"
          ? /^ {2}nat: -A KUBE-SERVICES .*198\.51\.100\.10/m
          : /^ {2}@service-ips: 198\.51\.100\.10 \. tcp \. 80 : goto /m;
      expect(r.stdout).toMatch(hop);
    });
  });
}

describe("explain in ipvs mode on a --state snapshot (iptables rules, ipsets, virtual servers)", () => {
  test("a ClusterIP: one path per real server, by weight", () => {
    const e = explainJson("ipvs", "198.51.100.10:80", "--from", "203.0.113.5");
    expect(e.verdict).toBe("dnat");
    expect(shares(e)).toEqual({ "203.0.113.11:8080": 0.5, "203.0.113.71:8080": 0.5 });
    expect(e.paths[0]?.hops.at(-1)).toMatch(/^ipvs: TCP 198\.51\.100\.10:80 \(rr, persistent 10800s\) -> /);
  });

  test("a virtual server without real servers: rejected (IPVS answers port unreachable)", () => {
    const e = explainJson("ipvs", "198.51.100.50:9000");
    expect(e.verdict).toBe("reject");
    expect(e.cause).toBe("no-endpoints");
  });

  test("another port of a Service's IP: rejected by KUBE-IPVS-FILTER", () => {
    const e = explainJson("ipvs", "198.51.100.10:81");
    expect(e.verdict).toBe("reject");
    expect(e.cause).toBe("invalid-cluster-port");
  });

  test("a LoadBalancer IP: dropped outside the source ranges, DNATed inside", () => {
    expect(explainJson("ipvs", "192.0.2.200:443", "--from", "198.51.100.7").cause).toBe("source-range");
    const inside = explainJson("ipvs", "192.0.2.200:443", "--from", "203.0.113.130");
    expect(shares(inside)).toEqual({ "203.0.113.40:8443": 1 });
    expect(inside.endpoints[0]?.masquerade).toBe(false);
  });

  test("a NodePort: masqueraded; eTP Local without a local endpoint falls back to the cluster's (as upstream ipvs)", () => {
    const np = explainJson("ipvs", "192.0.2.10:30080", "--from", "192.0.2.1");
    expect(Object.keys(shares(np)).sort()).toEqual(["203.0.113.30:8080", "203.0.113.90:8080"]);
    expect(np.endpoints.every((x) => x.masquerade)).toBe(true);
    const remote = explainJson("ipvs", "192.0.2.10:30099", "--from", "192.0.2.1");
    expect(shares(remote)).toEqual({ "203.0.113.77:8080": 1 });
    expect(remote.endpoints[0]?.masquerade).toBe(false);
  });

  test("not a Service address: not handled", () => {
    expect(explainJson("ipvs", "192.0.2.99:80").verdict).toBe("not-handled");
  });
});

describe("explain --output=dot", () => {
  test("a Graphviz tree: the shared hops once, one end node per path with its verdict", () => {
    const r = runBinary(["explain", "198.51.100.10:80", "--state", state, "--output=dot"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.startsWith("digraph explain {\n")).toBe(true);
    expect(r.stdout.trimEnd().endsWith("}")).toBe(true);
    const ends = r.stdout.match(/^ {2}end\d+ \[shape=oval, label="DNAT to [^"]+ 50%"\];$/gm) ?? [];
    expect(ends).toHaveLength(2);
    // The rule both paths start with is one node; quotes in it are escaped.
    expect(r.stdout.match(/label="nat: -A PREROUTING /g)).toHaveLength(1);
    expect(r.stdout).toContain('--comment \\"kubernetes service portals\\"');
  });
});

describe("explain: refusals", () => {
  test("a bad target exits 1 naming the value", () => {
    const r = runBinary(["explain", "198.51.100.10:http", "--state", state]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('"198.51.100.10:http"');
    expect(r.stdout).toBe("");
  });

  test("an unreadable snapshot exits 1", () => {
    const r = runBinary(["explain", "198.51.100.10:80", "--state", join(dir, "missing.yaml")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("missing.yaml");
  });
});
