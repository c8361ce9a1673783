import { describe, expect, test } from "bun:test";
import { DEFAULT_FEATURE_GATES, effectiveFeatureGates } from "../../src/config/feature-gates.ts";
import { usesClusterEndpoints, usesLocalEndpoints } from "../../src/proxy/service-port.ts";
import { categorizeEndpoints, topologyModeFromHints, ZONE_LABEL } from "../../src/proxy/topology.ts";
import type { EndpointInfo, ServicePortInfo } from "../../src/proxy/types.ts";

interface EpOpts {
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
  local?: boolean;
  hints?: string[];
  nodeHints?: string[];
}

function ep(endpoint: string, o: EpOpts = {}): EndpointInfo {
  const [ip = "", port = "0"] = endpoint.split(":");
  const ready = o.ready ?? true;
  return {
    endpoint,
    ip,
    port: Number(port),
    family: "IPv4",
    nodeName: o.local ? "this-node" : "other-node",
    zone: "",
    isLocal: o.local ?? false,
    ready,
    serving: o.serving ?? ready,
    terminating: o.terminating ?? false,
    zoneHints: new Set(o.hints ?? []),
    nodeHints: new Set(o.nodeHints ?? []),
  };
}

/** Serving but terminating: what a pod being deleted looks like during its grace period. */
function terminating(endpoint: string, o: EpOpts = {}): EndpointInfo {
  return ep(endpoint, { ...o, ready: false, serving: true, terminating: true });
}

type SvcOpts = Partial<
  Pick<
    ServicePortInfo,
    | "internalPolicyLocal"
    | "externalPolicyLocal"
    | "nodePort"
    | "externalIPs"
    | "loadBalancerVIPs"
    | "topologyMode"
    | "trafficDistribution"
  >
>;

/** A service port as one family's proxier sees it (isExternal is a per-family fact). */
type FamilyPort = ServicePortInfo & { isExternal: boolean };

function svc(o: SvcOpts = {}): FamilyPort {
  const nodePort = o.nodePort ?? 0;
  return {
    name: { namespace: "ns", name: "svc", port: "http", protocol: "TCP" },
    id: "ns/svc:http",
    clusterIPs: { IPv4: "198.51.100.10" },
    port: 80,
    protocol: "TCP",
    nodePort,
    externalIPs: o.externalIPs ?? [],
    loadBalancerVIPs: o.loadBalancerVIPs ?? [],
    loadBalancerSourceRanges: [],
    sessionAffinity: { type: "None", timeoutSeconds: 0 },
    externalPolicyLocal: o.externalPolicyLocal ?? false,
    internalPolicyLocal: o.internalPolicyLocal ?? false,
    healthCheckNodePort: 0,
    topologyMode: o.topologyMode ?? "",
    trafficDistribution: o.trafficDistribution ?? "",
    isExternal: nodePort !== 0 || (o.externalIPs ?? []).length > 0 || (o.loadBalancerVIPs ?? []).length > 0,
    serviceType: nodePort !== 0 ? "NodePort" : "ClusterIP",
  };
}

const zoneA = { [ZONE_LABEL]: "zone-a" };

/** This node ("this-node") with the v1.37 default gates, or with `gates` set explicitly. */
function on(nodeLabels: Record<string, string>, gates: Record<string, boolean> = {}) {
  return {
    nodeName: "this-node",
    nodeLabels,
    featureGates: Object.keys(gates).length === 0 ? DEFAULT_FEATURE_GATES : effectiveFeatureGates(gates),
  };
}

/** Four ready endpoints, two hinted for zone-a. */
const fourHinted = [
  ep("198.51.100.3:80", { hints: ["zone-a"] }),
  ep("198.51.100.4:80", { hints: ["zone-b"] }),
  ep("198.51.100.5:80", { hints: ["zone-c"] }),
  ep("198.51.100.6:80", { hints: ["zone-a"] }),
];
const allFour = ["198.51.100.3:80", "198.51.100.4:80", "198.51.100.5:80", "198.51.100.6:80"];

interface Case {
  name: string;
  svc: FamilyPort;
  endpoints: EndpointInfo[];
  nodeLabels?: Record<string, string>;
  /** undefined: the port does not use that policy at all; []: it does, but has none. */
  cluster: string[] | undefined;
  local: string[] | undefined;
  /** Defaults to whichever of cluster/local is defined when only one is. */
  all?: string[];
  hasAny: boolean;
}

const cases: Case[] = [
  // Topology hints.
  {
    name: "topology-mode Auto: only endpoints hinted for this node's zone",
    svc: svc({ topologyMode: "Auto" }),
    endpoints: fourHinted,
    nodeLabels: zoneA,
    cluster: ["198.51.100.3:80", "198.51.100.6:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "topology-mode auto (lower case): hints used",
    svc: svc({ topologyMode: "auto" }),
    endpoints: fourHinted,
    nodeLabels: zoneA,
    cluster: ["198.51.100.3:80", "198.51.100.6:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "trafficDistribution PreferClose: hints used",
    svc: svc({ trafficDistribution: "PreferClose" }),
    endpoints: fourHinted,
    nodeLabels: zoneA,
    cluster: ["198.51.100.3:80", "198.51.100.6:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "hints present without a topology request are still honoured, as in v1.31",
    svc: svc(),
    endpoints: fourHinted,
    nodeLabels: zoneA,
    cluster: ["198.51.100.3:80", "198.51.100.6:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "node without a zone label: no filtering",
    svc: svc({ topologyMode: "Auto" }),
    endpoints: fourHinted,
    nodeLabels: {},
    cluster: allFour,
    local: undefined,
    hasAny: true,
  },
  {
    name: "node with an empty zone label: no filtering",
    svc: svc({ topologyMode: "Auto" }),
    endpoints: fourHinted,
    nodeLabels: { [ZONE_LABEL]: "" },
    cluster: allFour,
    local: undefined,
    hasAny: true,
  },
  {
    name: "no endpoint hinted for this node's zone: no filtering",
    svc: svc({ topologyMode: "Auto" }),
    endpoints: fourHinted,
    nodeLabels: { [ZONE_LABEL]: "zone-z" },
    cluster: allFour,
    local: undefined,
    hasAny: true,
  },
  {
    name: "a ready endpoint missing hints: no filtering",
    svc: svc({ topologyMode: "Auto" }),
    endpoints: [
      ep("198.51.100.3:80", { hints: ["zone-a"] }),
      ep("198.51.100.4:80", { hints: ["zone-b"] }),
      ep("198.51.100.5:80"),
      ep("198.51.100.6:80", { hints: ["zone-a"] }),
    ],
    nodeLabels: zoneA,
    cluster: allFour,
    local: undefined,
    hasAny: true,
  },
  {
    name: "an unready endpoint missing hints does not stop filtering",
    svc: svc({ topologyMode: "Auto" }),
    endpoints: [
      ep("198.51.100.3:80", { hints: ["zone-a"] }),
      ep("198.51.100.4:80", { hints: ["zone-b"] }),
      ep("198.51.100.5:80", { ready: false }),
    ],
    nodeLabels: zoneA,
    cluster: ["198.51.100.3:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "unready endpoint hinted for this zone is left out of the filtered set",
    svc: svc({ topologyMode: "Auto" }),
    endpoints: [
      ep("198.51.100.3:80", { hints: ["zone-a"] }),
      ep("198.51.100.4:80", { hints: ["zone-b"] }),
      ep("198.51.100.6:80", { hints: ["zone-a"], ready: false }),
    ],
    nodeLabels: zoneA,
    cluster: ["198.51.100.3:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "only unready endpoints in this zone: no filtering",
    svc: svc({ topologyMode: "Auto" }),
    endpoints: [
      ep("198.51.100.3:80", { hints: ["zone-a"], ready: false }),
      ep("198.51.100.4:80", { hints: ["zone-b"] }),
      ep("198.51.100.5:80", { hints: ["zone-c"] }),
    ],
    nodeLabels: zoneA,
    cluster: ["198.51.100.4:80", "198.51.100.5:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "endpoints hinted for several zones match any of them",
    svc: svc({ topologyMode: "Auto" }),
    endpoints: [
      ep("198.51.100.3:80", { hints: ["zone-a", "zone-b", "zone-c"] }),
      ep("198.51.100.4:80", { hints: ["zone-b", "zone-c"] }),
      ep("198.51.100.5:80", { hints: ["zone-b", "zone-d"] }),
      ep("198.51.100.6:80", { hints: ["zone-c"] }),
    ],
    nodeLabels: { [ZONE_LABEL]: "zone-c" },
    cluster: ["198.51.100.3:80", "198.51.100.4:80", "198.51.100.6:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "no ready endpoints: terminating fallback ignores topology",
    svc: svc({ topologyMode: "Auto" }),
    endpoints: [
      terminating("198.51.100.3:80", { hints: ["zone-a"] }),
      terminating("198.51.100.4:80", { hints: ["zone-b"] }),
    ],
    nodeLabels: zoneA,
    cluster: ["198.51.100.3:80", "198.51.100.4:80"],
    local: undefined,
    hasAny: true,
  },
  // Topology against Local policies.
  {
    name: "externalTrafficPolicy Local: topology ignored for Local endpoints",
    svc: svc({ externalPolicyLocal: true, nodePort: 30080, topologyMode: "Auto" }),
    endpoints: [
      ep("198.51.100.3:80", { hints: ["zone-a"], local: true }),
      ep("198.51.100.4:80", { hints: ["zone-b"], local: true }),
      ep("198.51.100.5:80", { hints: ["zone-c"] }),
      ep("198.51.100.6:80", { hints: ["zone-a"] }),
    ],
    nodeLabels: zoneA,
    cluster: ["198.51.100.3:80", "198.51.100.6:80"],
    local: ["198.51.100.3:80", "198.51.100.4:80"],
    all: ["198.51.100.3:80", "198.51.100.4:80", "198.51.100.6:80"],
    hasAny: true,
  },
  {
    name: "internalTrafficPolicy Local on a NodePort: topology ignored for Local endpoints",
    svc: svc({ internalPolicyLocal: true, nodePort: 30080, topologyMode: "Auto" }),
    endpoints: [
      ep("198.51.100.3:80", { hints: ["zone-a"], local: true }),
      ep("198.51.100.4:80", { hints: ["zone-b"], local: true }),
      ep("198.51.100.5:80", { hints: ["zone-c"] }),
      ep("198.51.100.6:80", { hints: ["zone-a"] }),
    ],
    nodeLabels: zoneA,
    cluster: ["198.51.100.3:80", "198.51.100.6:80"],
    local: ["198.51.100.3:80", "198.51.100.4:80"],
    all: ["198.51.100.3:80", "198.51.100.4:80", "198.51.100.6:80"],
    hasAny: true,
  },
  {
    name: "topology and locality disagree: reachable set is the merge",
    svc: svc({ externalPolicyLocal: true, nodePort: 30080, topologyMode: "Auto" }),
    endpoints: [
      ep("203.0.113.0:80", { hints: ["zone-a"], local: true }),
      ep("203.0.113.1:80", { hints: ["zone-b"], local: true }),
      ep("203.0.113.2:80", { hints: ["zone-a"] }),
      ep("203.0.113.3:80", { hints: ["zone-b"] }),
    ],
    nodeLabels: zoneA,
    cluster: ["203.0.113.0:80", "203.0.113.2:80"],
    local: ["203.0.113.0:80", "203.0.113.1:80"],
    all: ["203.0.113.0:80", "203.0.113.1:80", "203.0.113.2:80"],
    hasAny: true,
  },
  // internalTrafficPolicy Local, internal-only Service.
  {
    name: "internalTrafficPolicy Local with no endpoints: empty local list, not undefined",
    svc: svc({ internalPolicyLocal: true }),
    endpoints: [],
    cluster: undefined,
    local: [],
    hasAny: false,
  },
  {
    name: "internalTrafficPolicy Local, all endpoints remote: none here, but some elsewhere",
    svc: svc({ internalPolicyLocal: true }),
    endpoints: [ep("203.0.113.0:80"), ep("203.0.113.1:80")],
    cluster: undefined,
    local: [],
    hasAny: true,
  },
  {
    name: "internalTrafficPolicy Local, all endpoints local",
    svc: svc({ internalPolicyLocal: true }),
    endpoints: [ep("203.0.113.0:80", { local: true }), ep("203.0.113.1:80", { local: true })],
    cluster: undefined,
    local: ["203.0.113.0:80", "203.0.113.1:80"],
    hasAny: true,
  },
  {
    name: "internalTrafficPolicy Local, some endpoints local: no cluster list for internal-only",
    svc: svc({ internalPolicyLocal: true }),
    endpoints: [ep("203.0.113.0:80", { local: true }), ep("203.0.113.1:80")],
    cluster: undefined,
    local: ["203.0.113.0:80"],
    hasAny: true,
  },
  {
    name: "Local policy prefers ready local endpoints over terminating ones",
    svc: svc({ internalPolicyLocal: true }),
    endpoints: [ep("203.0.113.0:80", { local: true }), terminating("203.0.113.1:80", { local: true })],
    cluster: undefined,
    local: ["203.0.113.0:80"],
    hasAny: true,
  },
  {
    name: "Local policy falls back to serving-terminating local endpoints",
    svc: svc({ internalPolicyLocal: true }),
    endpoints: [
      terminating("203.0.113.0:80", { local: true }),
      ep("203.0.113.1:80", { ready: false, serving: false, terminating: true, local: true }),
      ep("203.0.113.2:80"),
    ],
    cluster: undefined,
    local: ["203.0.113.0:80"],
    hasAny: true,
  },
  // Cluster policy and terminating endpoints.
  {
    name: "Cluster policy with no endpoints",
    svc: svc(),
    endpoints: [],
    cluster: [],
    local: undefined,
    hasAny: false,
  },
  {
    name: "Cluster policy, endpoints not ready and not serving: empty",
    svc: svc(),
    endpoints: [ep("203.0.113.0:80", { ready: false }), ep("203.0.113.1:80", { ready: false })],
    cluster: [],
    local: undefined,
    hasAny: false,
  },
  {
    name: "Cluster policy, some endpoints ready: only those",
    svc: svc(),
    endpoints: [ep("203.0.113.0:80", { ready: false }), ep("203.0.113.1:80")],
    cluster: ["203.0.113.1:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "Cluster policy, only serving-terminating endpoints: used",
    svc: svc(),
    endpoints: [terminating("203.0.113.0:80", { local: true }), terminating("203.0.113.1:80")],
    cluster: ["203.0.113.0:80", "203.0.113.1:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "Cluster policy, ready endpoints win over terminating ones",
    svc: svc(),
    endpoints: [terminating("203.0.113.0:80"), ep("203.0.113.1:80")],
    cluster: ["203.0.113.1:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "Cluster policy, terminating endpoints that stopped serving are never used",
    svc: svc(),
    endpoints: [ep("203.0.113.0:80", { ready: false, serving: false, terminating: true })],
    cluster: [],
    local: undefined,
    hasAny: false,
  },
  // Mixed internal and external policies.
  {
    name: "iTP Local, eTP Cluster, some endpoints local",
    svc: svc({ internalPolicyLocal: true, nodePort: 30080 }),
    endpoints: [ep("203.0.113.0:80", { local: true }), ep("203.0.113.1:80")],
    cluster: ["203.0.113.0:80", "203.0.113.1:80"],
    local: ["203.0.113.0:80"],
    all: ["203.0.113.0:80", "203.0.113.1:80"],
    hasAny: true,
  },
  {
    name: "iTP Cluster, eTP Local, some endpoints local",
    svc: svc({ externalPolicyLocal: true, nodePort: 30080 }),
    endpoints: [ep("203.0.113.0:80", { local: true }), ep("203.0.113.1:80")],
    cluster: ["203.0.113.0:80", "203.0.113.1:80"],
    local: ["203.0.113.0:80"],
    all: ["203.0.113.0:80", "203.0.113.1:80"],
    hasAny: true,
  },
  {
    name: "iTP Local, eTP Local, external: cluster list kept for short-circuiting",
    svc: svc({ internalPolicyLocal: true, externalPolicyLocal: true, nodePort: 30080 }),
    endpoints: [ep("203.0.113.0:80", { local: true }), ep("203.0.113.1:80")],
    cluster: ["203.0.113.0:80", "203.0.113.1:80"],
    local: ["203.0.113.0:80"],
    all: ["203.0.113.0:80", "203.0.113.1:80"],
    hasAny: true,
  },
  {
    name: "iTP Local, eTP Local, all endpoints remote",
    svc: svc({ internalPolicyLocal: true, externalPolicyLocal: true, nodePort: 30080 }),
    endpoints: [ep("203.0.113.0:80"), ep("203.0.113.1:80")],
    cluster: ["203.0.113.0:80", "203.0.113.1:80"],
    local: [],
    all: ["203.0.113.0:80", "203.0.113.1:80"],
    hasAny: true,
  },
  {
    name: "iTP Local, eTP Local, all endpoints remote and terminating",
    svc: svc({ internalPolicyLocal: true, externalPolicyLocal: true, nodePort: 30080 }),
    endpoints: [terminating("203.0.113.0:80"), terminating("203.0.113.1:80")],
    cluster: ["203.0.113.0:80", "203.0.113.1:80"],
    local: [],
    all: ["203.0.113.0:80", "203.0.113.1:80"],
    hasAny: true,
  },
  {
    name: "iTP Cluster, eTP Local, terminating local endpoint merged into reachable set",
    svc: svc({ externalPolicyLocal: true, nodePort: 30080 }),
    endpoints: [
      ep("203.0.113.0:80"),
      ep("203.0.113.1:80", { ready: false, serving: false, local: true }),
      terminating("203.0.113.2:80", { local: true }),
      terminating("203.0.113.3:80"),
    ],
    cluster: ["203.0.113.0:80"],
    local: ["203.0.113.2:80"],
    all: ["203.0.113.0:80", "203.0.113.2:80"],
    hasAny: true,
  },
  {
    name: "externalTrafficPolicy Local ignored when nothing external points at the port",
    svc: svc({ externalPolicyLocal: true }),
    endpoints: [ep("203.0.113.0:80"), ep("203.0.113.1:80", { local: true })],
    cluster: ["203.0.113.0:80", "203.0.113.1:80"],
    local: undefined,
    hasAny: true,
  },
  {
    name: "externalTrafficPolicy Local through an external IP alone",
    svc: svc({ externalPolicyLocal: true, externalIPs: ["192.0.2.10"] }),
    endpoints: [ep("203.0.113.0:80"), ep("203.0.113.1:80", { local: true })],
    cluster: ["203.0.113.0:80", "203.0.113.1:80"],
    local: ["203.0.113.1:80"],
    all: ["203.0.113.0:80", "203.0.113.1:80"],
    hasAny: true,
  },
  {
    name: "externalTrafficPolicy Local through a load-balancer IP alone, no local endpoints",
    svc: svc({ externalPolicyLocal: true, loadBalancerVIPs: ["198.51.100.7"] }),
    endpoints: [ep("203.0.113.0:80")],
    cluster: ["203.0.113.0:80"],
    local: [],
    all: ["203.0.113.0:80"],
    hasAny: true,
  },
];

const sorted = (eps: readonly EndpointInfo[] | undefined) => eps?.map((e) => e.endpoint).sort();

describe("categorizeEndpoints", () => {
  for (const c of cases) {
    test(c.name, () => {
      const got = categorizeEndpoints(c.endpoints, c.svc, on(c.nodeLabels ?? {}));
      expect(sorted(got.clusterEndpoints)).toEqual(c.cluster?.slice().sort());
      expect(sorted(got.localEndpoints)).toEqual(c.local?.slice().sort());
      const all = c.all ?? (c.cluster && !c.local ? c.cluster : c.local) ?? [];
      expect(sorted(got.allReachableEndpoints)).toEqual(all.slice().sort());
      expect(got.hasAnyEndpoints).toBe(c.hasAny);
    });
  }

  test("reachable set lists each endpoint once even when both lists hold it", () => {
    const got = categorizeEndpoints(
      [ep("203.0.113.0:80", { hints: ["zone-a"], local: true }), ep("203.0.113.1:80", { hints: ["zone-b"] })],
      svc({ externalPolicyLocal: true, nodePort: 30080 }),
      on(zoneA),
    );
    expect(got.allReachableEndpoints.map((e) => e.endpoint)).toEqual(["203.0.113.0:80"]);
  });
});

describe("traffic policy predicates", () => {
  const rows: [string, FamilyPort, { external: boolean; cluster: boolean; local: boolean }][] = [
    ["ClusterIP, Cluster/Cluster", svc(), { external: false, cluster: true, local: false }],
    [
      "ClusterIP, iTP Local",
      svc({ internalPolicyLocal: true }),
      { external: false, cluster: false, local: true },
    ],
    [
      "ClusterIP, eTP Local only",
      svc({ externalPolicyLocal: true }),
      { external: false, cluster: true, local: false },
    ],
    [
      "NodePort, eTP Local",
      svc({ externalPolicyLocal: true, nodePort: 30080 }),
      { external: true, cluster: true, local: true },
    ],
    [
      "NodePort, iTP Local",
      svc({ internalPolicyLocal: true, nodePort: 30080 }),
      { external: true, cluster: true, local: true },
    ],
    [
      "LB VIP, both Local",
      svc({ internalPolicyLocal: true, externalPolicyLocal: true, loadBalancerVIPs: ["198.51.100.7"] }),
      { external: true, cluster: true, local: true },
    ],
  ];
  for (const [name, s, want] of rows) {
    test(name, () => {
      expect(s.isExternal).toBe(want.external);
      expect(usesClusterEndpoints(s)).toBe(want.cluster);
      expect(usesLocalEndpoints(s)).toBe(want.local);
    });
  }
});

describe("topologyModeFromHints (upstream 1.37)", () => {
  const mode = (eps: EndpointInfo[], labels: Record<string, string> = zoneA) =>
    topologyModeFromHints(eps, on(labels));

  test("no ready endpoint: every hint kind holds vacuously but none is for us, so no topology", () => {
    expect(mode([ep("203.0.113.0:80", { ready: false, hints: ["zone-a"], nodeHints: ["this-node"] })])).toBe(
      "",
    );
  });
  test("every ready endpoint zone-hinted and one for this zone: PreferSameZone", () => {
    expect(mode(fourHinted)).toBe("PreferSameZone");
  });
  test("node hints on every ready endpoint and one for this node: PreferSameNode", () => {
    const eps = [
      ep("203.0.113.1:80", { hints: ["zone-a"], nodeHints: ["this-node"] }),
      ep("203.0.113.2:80", { hints: ["zone-a"], nodeHints: ["other-node"] }),
    ];
    expect(mode(eps)).toBe("PreferSameNode");
  });
  test("node hints, none for this node: falls to the zone hints", () => {
    const eps = [
      ep("203.0.113.1:80", { hints: ["zone-a"], nodeHints: ["node-x"] }),
      ep("203.0.113.2:80", { hints: ["zone-b"], nodeHints: ["node-y"] }),
    ];
    expect(mode(eps)).toBe("PreferSameZone");
  });
  test("one ready endpoint without node hints turns node preference off; unready ones do not count", () => {
    const eps = [
      ep("203.0.113.1:80", { hints: ["zone-a"], nodeHints: ["this-node"] }),
      ep("203.0.113.2:80", { hints: ["zone-a"] }),
      ep("203.0.113.3:80", { ready: false, hints: [] }),
    ];
    expect(mode(eps)).toBe("PreferSameZone");
  });
  test("a node without a zone label gets no zone preference", () => {
    expect(mode(fourHinted, {})).toBe("");
  });
  test("a ready endpoint without zone hints turns zone preference off", () => {
    expect(mode([...fourHinted, ep("203.0.113.9:80")])).toBe("");
  });
});

describe("hints decide, not the Service (1.33+: the annotation and trafficDistribution only steer the controller)", () => {
  const clusterOf = (s: FamilyPort) => sorted(categorizeEndpoints(fourHinted, s, on(zoneA)).clusterEndpoints);
  const sameZone = ["198.51.100.3:80", "198.51.100.6:80"];

  test("whatever the Service asks for, hints alone narrow the endpoints", () => {
    for (const s of [
      svc(),
      svc({ trafficDistribution: "PreferClose" }),
      svc({ trafficDistribution: "PreferSameZone" }),
      svc({ topologyMode: "Auto" }),
      svc({ topologyMode: "Disabled" }),
    ]) {
      expect(clusterOf(s)).toEqual(sameZone);
    }
  });

  test("PreferSameNode: the endpoint hinted for this node; terminating fallback ignores topology", () => {
    const eps = [
      ep("203.0.113.1:80", { hints: ["zone-a"], nodeHints: ["this-node"], local: true }),
      ep("203.0.113.2:80", { hints: ["zone-a"], nodeHints: ["other-node"] }),
    ];
    const got = categorizeEndpoints(eps, svc({ trafficDistribution: "PreferSameNode" }), on(zoneA));
    expect(sorted(got.clusterEndpoints)).toEqual(["203.0.113.1:80"]);
    const gone = categorizeEndpoints(
      [terminating("203.0.113.1:80", { nodeHints: ["other-node"] }), terminating("203.0.113.2:80")],
      svc(),
      on(zoneA),
    );
    expect(sorted(gone.clusterEndpoints)).toEqual(["203.0.113.1:80", "203.0.113.2:80"]);
  });
});
