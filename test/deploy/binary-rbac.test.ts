// The ClusterRole in deploy/ against what the real binary does: dist/kube-proxy-ts runs in
// iptables mode in a network namespace against the fake API server (as in
// test/e2e/binary-whole.test.ts), and every request it makes until its first sync and its
// "Starting" event is turned into the (apiGroup, resource, verb) the API server's authorizer
// would check. That set must equal both src/k8s/api-access.ts and the ClusterRole: a verb the
// code gains without the role (or the role keeps without the code) fails here.
//
// Needs root (network namespaces, iptables), like the e2e suites.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { API_ACCESS } from "../../src/k8s/api-access.ts";
import { tempDir } from "../support/binary.ts";
import { loadCluster, type NodeApi, startNodeApi } from "../support/e2e-apiserver.ts";
import { type NodeSpec, type ServiceSpec, servicePortName } from "../support/e2e-cluster.ts";
import {
  diagnostics,
  hasServiceRule,
  NODE_NAME,
  startKubeProxy,
  waitForRules,
} from "../support/e2e-kubeproxy.ts";
import type { RequestRecord } from "../support/fake-apiserver.ts";
import { ADDR, createTopology, type Daemon, namespaceExists, type Topology } from "../support/netns.ts";
import { only, rbacRules, readManifest } from "./manifests.ts";

const TIMEOUT_MS = 90_000;
const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const WEB: ServiceSpec = {
  name: "web",
  clusterIP: "198.51.100.51",
  ports: [{ name: "http", port: 80, targetPort: 8080 }],
  endpoints: [{ ip: "203.0.113.41" }],
};

/**
 * What the API server's authorizer checks for a request (its RequestInfo): the group from the
 * path, the resource, and the verb from the method, a name, and ?watch. Paths that are not a
 * resource come back as nonResource, which the ClusterRole does not grant.
 */
export function authorizationOf(r: RequestRecord): string {
  const parts = r.path.split("/").filter(Boolean);
  let rest: string[];
  let group: string;
  if (parts[0] === "api" && parts.length >= 3) {
    group = "";
    rest = parts.slice(2);
  } else if (parts[0] === "apis" && parts.length >= 4) {
    group = parts[1] ?? "";
    rest = parts.slice(3);
  } else return `nonResource ${r.method} ${r.path}`;
  if (rest[0] === "namespaces" && rest.length >= 3) rest = rest.slice(2);
  const [resource, name, sub] = rest;
  if (sub !== undefined) return `subresource ${r.method} ${r.path}`;
  const verb =
    r.method === "GET"
      ? name !== undefined
        ? "get"
        : r.watch
          ? "watch"
          : "list"
      : ({ POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" } as Record<string, string>)[
          r.method
        ];
  return `${group}/${resource} ${verb ?? r.method}`;
}

function flatten(
  rules: readonly { apiGroup: string; resource: string; verbs: readonly string[] }[],
): string[] {
  return rules.flatMap((r) => r.verbs.map((v) => `${r.apiGroup}/${r.resource} ${v}`)).sort();
}

describe("the ClusterRole equals the requests the real binary makes", () => {
  let topo: Topology | undefined;
  let api: NodeApi | undefined;
  let kubeProxy: Daemon | undefined;
  let dir: string | undefined;

  beforeAll(async () => {
    topo = await createTopology({ pods: [], client: false });
    dir = tempDir("kpts-rbac-");
    api = await startNodeApi(topo, dir);
    loadCluster(api.server, NODE, [WEB]);
    kubeProxy = startKubeProxy(topo, { kubeconfig: api.kubeconfig });
  }, TIMEOUT_MS);

  afterAll(async () => {
    const names = Object.values(topo?.namespaces ?? {});
    try {
      await kubeProxy?.kill(3000);
      await api?.close();
      await topo?.destroy();
    } finally {
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
    expect(names.filter(namespaceExists)).toEqual([]);
  }, TIMEOUT_MS);

  test(
    "first sync, watches and the Starting event: every request is granted, every grant is used",
    async () => {
      const server = api!.server;
      try {
        const comment = `${servicePortName(WEB, WEB.ports[0]!)} cluster IP`;
        await waitForRules(topo!, kubeProxy, (v) => hasServiceRule(v.nat, comment), "the first sync", 30_000);
        const deadline = Date.now() + 30_000;
        const ready = () =>
          server.postedEvents.some((e) => e.reason === "Starting") &&
          (["Service", "EndpointSlice", "Node"] as const).every(
            (k) => server.requestsFor(k, "watch").length > 0,
          );
        while (!ready() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        expect(ready()).toBe(true);
      } catch (err) {
        console.error(`\n===== diagnostics =====\n${await diagnostics(topo!, kubeProxy)}`);
        throw err;
      }

      const used = [...new Set(server.requests.map(authorizationOf))].sort();
      expect(used).toEqual(flatten(API_ACCESS));
      expect(used).toEqual(flatten(rbacRules(only(readManifest(), "ClusterRole"))));
    },
    TIMEOUT_MS,
  );
});

describe("authorizationOf (the request-to-permission mapping the test above relies on)", () => {
  const req = (method: string, path: string, watch = false): RequestRecord => ({
    method,
    path,
    query: {},
    watch,
  });
  test("collections, names, namespaces, groups, watches and non-resource paths", () => {
    expect(authorizationOf(req("GET", "/api/v1/services"))).toBe("/services list");
    expect(authorizationOf(req("GET", "/api/v1/services", true))).toBe("/services watch");
    expect(authorizationOf(req("GET", "/api/v1/nodes/node-a"))).toBe("/nodes get");
    expect(authorizationOf(req("GET", "/apis/discovery.k8s.io/v1/namespaces/x/endpointslices", true))).toBe(
      "discovery.k8s.io/endpointslices watch",
    );
    expect(authorizationOf(req("POST", "/apis/events.k8s.io/v1/namespaces/default/events"))).toBe(
      "events.k8s.io/events create",
    );
    expect(authorizationOf(req("PATCH", "/api/v1/namespaces/default/events/e1"))).toBe("/events patch");
    expect(authorizationOf(req("GET", "/version"))).toBe("nonResource GET /version");
    expect(authorizationOf(req("GET", "/api/v1/nodes/a/status"))).toBe(
      "subresource GET /api/v1/nodes/a/status",
    );
  });
});
