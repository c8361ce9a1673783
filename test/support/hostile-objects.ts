// fast-check arbitraries for the API objects kube-proxy reads (Services, EndpointSlices, its
// Node, ServiceCIDRs) as a broken or hostile API server could send them. Each object starts
// valid (cluster IPs, ports and endpoints from the documentation ranges; slices that belong to
// a generated Service) and then takes two kinds of damage:
//   - text fields that reach rule text (namespaces, names, port names, zones, hostnames, node
//     names, hints) are hostile now and then: control characters, quotes, `\ ; # / :`,
//     newlines, multibyte characters, very long strings, payloads aimed at each output language;
//   - a few field paths are replaced by something else: hostile text, a wrong type, a number
//     out of range, an almost-address, a list where a scalar belongs or the reverse, deep
//     nesting, or nothing.
// So a good share of objects is valid enough to produce rules, and the rest probes every reader.

import fc from "fast-check";
import type {
  EndpointSliceObject,
  NodeObject,
  ServiceCIDRObject,
  ServiceObject,
} from "../../src/k8s/objects.ts";
import { type ClusterObjects, SYNC_NODE, SYNC_NODE_IP, SYNC_NODE_IPV6 } from "./hostile-sync.ts";

// The objects are built from arbitrary JSON values on purpose; the API types only name fields.
// biome-ignore lint/suspicious/noExplicitAny: hostile objects put any value in any field
type Loose = any;

// Valid names include the longest the API server allows (63, 63 and 15 characters): together
// they pass nft's 128-byte comment limit, so the proxiers' own limits are exercised by valid input.
const NAMESPACES = ["ns", "default", "team-a", `ns-${"a".repeat(60)}`];
const SERVICE_NAMES = ["web", "api", "db", `svc-${"b".repeat(59)}`];
const PORT_NAMES = ["http", "p80", "dns-tcp", "metrics", "longportname-15"];
const OTHER_NODE = "node-b";
const ZONES = ["zone-a", "zone-b"];
const ZONE_LABEL = "topology.kubernetes.io/zone";
const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** Characters that break one output language or another when they reach it raw. */
const SPECIALS = [
  ...['"', "'", "\\", ";", "#", "/", ":", "\n", "\r", "\t", " ", "\0", "\x1b", "\x7f", "{", "}"],
  ...["[", "]", "$", "`", "*", ",", ".", "!", "@", "=", "-", "_", "A", "\u0085", "\u2028"],
  ...["\u200b", "\u202e", "é", "中", "😀"],
];

/** Whole payloads aimed at the restore languages (each one a known way in). */
const PAYLOADS = [
  'web" -j ACCEPT "',
  'x"\n-A INPUT -j ACCEPT\n#',
  "web\n*filter\n-A INPUT -j ACCEPT\nCOMMIT",
  "web\nCOMMIT\n*nat\n-A PREROUTING -j ACCEPT",
  "web; flush ruleset",
  '"; flush ruleset; #',
  "web } ; add rule ip filter input accept ; #",
  "web # comment",
  "\\",
  'a\\"b',
  "-j ACCEPT",
  "--comment",
  "$(reboot)",
  "web\0null",
  "KUBE-SVC-AAAAAAAAAAAAAAAA",
  "create KUBE-X hash:ip",
  "-A -t 198.51.100.1:80 -s rr",
  "address add 198.51.100.1/32 dev lo",
  "",
  " ",
];

const dnsLabel = fc.stringMatching(/^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$/);
const special = fc.constantFrom(...SPECIALS);

/** Text that is not what the API server would accept in a name, label or port name. */
export const hostileText: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...PAYLOADS), weight: 3 },
  // A valid name with one bad character inside, the kind that slips past a glance.
  { arbitrary: fc.tuple(dnsLabel, special, dnsLabel).map(([a, s, b]) => `${a}${s}${b}`), weight: 4 },
  {
    arbitrary: fc
      .array(fc.oneof(special, fc.constantFrom("a", "b", "0")), { maxLength: 12 })
      .map((a) => a.join("")),
    weight: 2,
  },
  // Long: past 63 (a label), 253 (a name), 255 bytes (xt_comment), 128 bytes (nft comment).
  {
    arbitrary: fc
      .tuple(fc.constantFrom("a", "é", "中", "😀", "-", "a-"), fc.integer({ min: 60, max: 320 }))
      .map(([c, n]) => c.repeat(n)),
    weight: 2,
  },
  { arbitrary: fc.string({ unit: "binary", maxLength: 24 }), weight: 1 },
);

/** Deeply nested arrays or objects: a reader that recurses or stringifies must stay bounded. */
const deep: fc.Arbitrary<unknown> = fc
  .tuple(fc.integer({ min: 1, max: 1500 }), fc.boolean())
  .map(([depth, asArray]) => {
    let v: unknown = "x";
    for (let i = 0; i < depth; i++) v = asArray ? [v] : { a: v };
    return v;
  });

/** A value of the wrong type for whatever field it lands in. */
export const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -1_000_000, max: 1_000_000 }),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0, 1e300, 0.5, 2 ** 53),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 }), { maxKeys: 2 }),
  // What JSON.parse('{"toString": "x"}') gives: String(value) throws on it.
  fc.constant({ toString: "not a function" }),
  deep,
);

/** Almost an address or a CIDR: the readers must skip it, not pass it on. */
const almostAddress = fc.constantFrom(
  ...["203.0.113.300", "203.0.113.1/24", " 203.0.113.1", "203.0.113.1\n", "::ffff:203.0.113.1"],
  ...["203.000.113.001", "fe80::1%eth0", "0.0.0.0", "255.255.255.255", "localhost", "2001:db8::g"],
  ...["1.2.3.4.5", "203.0.113.0/33", "203.0.113.7/24", "0.0.0.0/0", "::/0", "203.0.113.0/25,192.0.2.0/24"],
  ...["203.0.113.0/-1", " 203.0.113.0/25 ", "2001:db8::/129"],
);

const badNumber = fc.constantFrom(
  0,
  -1,
  65536,
  1e9,
  80.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  "80",
  "http",
  null,
  [80],
);

// Markers a mutation carries when the new value depends on the old one.
const WRAP = Symbol("wrap in a list");
const UNWRAP = Symbol("first element instead of the list");
const DELETE = Symbol("delete the field");

/** What a mutated field becomes. */
const replacement: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: hostileText, weight: 4 },
  { arbitrary: wrongType, weight: 3 },
  { arbitrary: almostAddress, weight: 2 },
  { arbitrary: badNumber, weight: 2 },
  { arbitrary: fc.constantFrom(WRAP, UNWRAP, DELETE), weight: 2 },
);

function setPath(obj: Loose, path: string, value: unknown): void {
  const keys = path.split(".");
  let parent = obj;
  for (const k of keys.slice(0, -1)) {
    if (parent === null || typeof parent !== "object") return;
    parent = parent[k];
  }
  if (parent === null || typeof parent !== "object") return;
  const last = keys.at(-1)!;
  const old = parent[last];
  if (value === DELETE) delete parent[last];
  else if (value === WRAP) parent[last] = [old];
  else if (value === UNWRAP) parent[last] = Array.isArray(old) ? old[0] : old;
  else parent[last] = value;
}

/** `base` with none (two times in three) or one to three of `paths` replaced. */
function damaged<T>(base: fc.Arbitrary<T>, paths: readonly string[]): fc.Arbitrary<T> {
  // Cross-shrinking lets a counterexample lose the edits it does not need.
  const edits = fc.oneof(
    { withCrossShrink: true },
    { arbitrary: fc.constant([] as [string, unknown][]), weight: 2 },
    {
      arbitrary: fc.array(fc.tuple(fc.constantFrom(...paths), replacement), { minLength: 1, maxLength: 3 }),
      weight: 1,
    },
  );
  return fc.tuple(base, edits).map(([obj, list]) => {
    if (list.length === 0) return obj;
    const copy = structuredClone(obj);
    for (const [path, value] of list) setPath(copy, path, value);
    return copy;
  });
}

/**
 * A text field: one of `valid` six times in seven, hostile text otherwise. An object has several
 * (namespace, name, port names), and edge validation drops a Service for any bad one, so this
 * keeps most objects whole while most clusters still carry hostile text somewhere.
 */
function text(...valid: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { withCrossShrink: true },
    { arbitrary: fc.constantFrom(...valid), weight: 6 },
    { arbitrary: hostileText, weight: 1 },
  );
}

const byte = fc.integer({ min: 1, max: 254 });
const hex = fc.integer({ min: 1, max: 0xfffe }).map((n) => n.toString(16));
const clusterIPv4 = byte.map((n) => `198.51.100.${n}`);
const clusterIPv6 = hex.map((h) => `2001:db8:2::${h}`);
const podIPv4 = byte.map((n) => `192.0.2.${n}`);
const podIPv6 = hex.map((h) => `2001:db8:1::${h}`);
const externalIPv4 = byte.map((n) => `203.0.113.${n}`);
const externalIPv6 = hex.map((h) => `2001:db8:ffff::${h}`);

type Family = "IPv4" | "IPv6";
const family: fc.Arbitrary<Family> = fc.oneof(
  { arbitrary: fc.constant("IPv4" as const), weight: 4 },
  { arbitrary: fc.constant("IPv6" as const), weight: 1 },
);

const protocol = fc.oneof(
  { arbitrary: fc.constant("TCP"), weight: 6 },
  { arbitrary: fc.constantFrom("UDP", "SCTP"), weight: 2 },
);

const servicePorts = fc
  .uniqueArray(
    fc.record({
      name: text(...PORT_NAMES),
      protocol,
      port: fc.integer({ min: 1, max: 65535 }),
      targetPort: fc.integer({ min: 1, max: 65535 }),
      nodePort: fc.integer({ min: 30000, max: 32767 }),
    }),
    { minLength: 1, maxLength: 3, selector: (p) => p.name },
  )
  // A single port may go unnamed, as the API allows.
  .chain((ports) =>
    ports.length === 1 ? fc.constantFrom(ports, [{ ...ports[0]!, name: "" }]) : fc.constant(ports),
  );

const validService = fc
  .record({
    namespace: text(...NAMESPACES),
    name: text(...SERVICE_NAMES),
    family,
    type: fc.constantFrom("ClusterIP", "NodePort", "LoadBalancer"),
    v4: clusterIPv4,
    v6: clusterIPv6,
    ports: servicePorts,
    externalIPs: fc.array(fc.oneof(externalIPv4, externalIPv6), { maxLength: 2 }),
    sourceRanges: fc.subarray(["203.0.113.0/25", "192.0.2.0/24", "198.51.100.128/25", "2001:db8::/32"]),
    ingress: fc.array(
      fc.record(
        { ip: externalIPv4, hostname: text("lb.example.com"), ipMode: fc.constantFrom("VIP", "Proxy") },
        { requiredKeys: ["ip"] },
      ),
      { maxLength: 2 },
    ),
    affinity: fc.option(fc.integer({ min: 1, max: 86400 }), { nil: undefined }),
    etp: fc.constantFrom("Cluster", "Local"),
    itp: fc.constantFrom("Cluster", "Local"),
    healthCheckNodePort: fc.integer({ min: 30000, max: 32767 }),
    trafficDistribution: fc.option(fc.constantFrom("PreferClose", "PreferSameZone", "PreferSameNode"), {
      nil: undefined,
    }),
  })
  .map((s): ServiceObject => {
    const ip = s.family === "IPv4" ? s.v4 : s.v6;
    const external = s.type !== "ClusterIP";
    const lb = s.type === "LoadBalancer";
    return {
      apiVersion: "v1",
      kind: "Service",
      metadata: { namespace: s.namespace, name: s.name, uid: "6f2c4b2e-0000-4000-8000-000000000001" },
      spec: {
        type: s.type,
        clusterIP: ip,
        clusterIPs: [ip],
        ipFamilies: [s.family],
        ipFamilyPolicy: "SingleStack",
        ports: s.ports.map(({ nodePort, ...p }) => (external ? { ...p, nodePort } : p)),
        externalIPs: s.externalIPs,
        ...(lb ? { loadBalancerSourceRanges: s.sourceRanges } : {}),
        ...(s.affinity
          ? {
              sessionAffinity: "ClientIP",
              sessionAffinityConfig: { clientIP: { timeoutSeconds: s.affinity } },
            }
          : { sessionAffinity: "None" }),
        ...(external ? { externalTrafficPolicy: s.etp } : {}),
        ...(lb && s.etp === "Local" ? { healthCheckNodePort: s.healthCheckNodePort } : {}),
        internalTrafficPolicy: s.itp,
        ...(s.trafficDistribution ? { trafficDistribution: s.trafficDistribution } : {}),
        selector: { app: "web" },
      },
      ...(lb ? { status: { loadBalancer: { ingress: s.ingress } } } : {}),
    };
  });

const SERVICE_PATHS = [
  ...["metadata", "metadata.namespace", "metadata.name", "spec", "spec.type", "spec.clusterIP"],
  ...["spec.clusterIPs", "spec.clusterIPs.0", "spec.ipFamilies", "spec.ipFamilies.0", "spec.ipFamilyPolicy"],
  ...["spec.ports", "spec.ports.0", "spec.ports.0.name", "spec.ports.0.protocol", "spec.ports.0.port"],
  ...["spec.ports.0.targetPort", "spec.ports.0.nodePort", "spec.ports.1.name", "spec.externalIPs"],
  ...["spec.externalIPs.0", "spec.loadBalancerIP", "spec.loadBalancerSourceRanges"],
  ...["spec.loadBalancerSourceRanges.0", "spec.sessionAffinity", "spec.sessionAffinityConfig"],
  ...["spec.sessionAffinityConfig.clientIP.timeoutSeconds", "spec.externalTrafficPolicy"],
  ...["spec.internalTrafficPolicy", "spec.healthCheckNodePort", "spec.trafficDistribution", "status"],
  ...["status.loadBalancer", "status.loadBalancer.ingress", "status.loadBalancer.ingress.0"],
  ...["status.loadBalancer.ingress.0.ip", "status.loadBalancer.ingress.0.hostname"],
  ...["status.loadBalancer.ingress.0.ipMode"],
];

export const serviceArb: fc.Arbitrary<ServiceObject> = damaged(validService, SERVICE_PATHS);

const endpoint = (ip: fc.Arbitrary<string>) =>
  fc.record({
    addresses: ip.map((a) => [a]),
    ready: fc.oneof(
      { arbitrary: fc.constant(true), weight: 5 },
      { arbitrary: fc.constant(false), weight: 1 },
    ),
    terminating: fc.oneof(
      { arbitrary: fc.constant(false), weight: 5 },
      { arbitrary: fc.constant(true), weight: 1 },
    ),
    hostname: fc.option(text("pod-0", "pod-1"), { nil: undefined }),
    nodeName: text(SYNC_NODE, OTHER_NODE),
    zone: text(...ZONES),
    forZones: fc.option(fc.array(text(...ZONES), { maxLength: 2 }), { nil: undefined }),
    forNodes: fc.option(fc.array(text(SYNC_NODE, OTHER_NODE), { maxLength: 2 }), { nil: undefined }),
  });

/** A valid slice for a Service with these ports (names and protocols as the Service has them). */
function validSlice(
  namespace: unknown,
  serviceName: unknown,
  ports: readonly { name?: unknown; protocol?: unknown }[],
  fam: Family,
): fc.Arbitrary<EndpointSliceObject> {
  return fc
    .record({
      suffix: fc.constantFrom("a", "b", "c"),
      targets: fc.array(fc.integer({ min: 1, max: 65535 }), {
        minLength: ports.length,
        maxLength: ports.length,
      }),
      endpoints: fc.array(endpoint(fam === "IPv4" ? podIPv4 : podIPv6), { minLength: 1, maxLength: 3 }),
    })
    .map(
      (s): EndpointSliceObject =>
        ({
          apiVersion: "discovery.k8s.io/v1",
          kind: "EndpointSlice",
          metadata: {
            namespace,
            name: `${typeof serviceName === "string" ? serviceName : "x"}-${s.suffix}`,
            labels: { [SERVICE_NAME_LABEL]: serviceName },
          },
          addressType: fam,
          ports: ports.map((p, i) => ({ name: p.name, protocol: p.protocol, port: s.targets[i] })),
          endpoints: s.endpoints.map((e) => ({
            addresses: e.addresses,
            conditions: { ready: e.ready, serving: e.ready || e.terminating, terminating: e.terminating },
            ...(e.hostname !== undefined ? { hostname: e.hostname } : {}),
            nodeName: e.nodeName,
            zone: e.zone,
            ...(e.forZones || e.forNodes
              ? {
                  hints: {
                    ...(e.forZones ? { forZones: e.forZones.map((name) => ({ name })) } : {}),
                    ...(e.forNodes ? { forNodes: e.forNodes.map((name) => ({ name })) } : {}),
                  },
                }
              : {}),
          })),
        }) as Loose,
    );
}

const SLICE_PATHS = [
  ...["metadata", "metadata.namespace", "metadata.name", "metadata.labels"],
  ...[`metadata.labels.${SERVICE_NAME_LABEL}`, "addressType", "ports", "ports.0", "ports.0.name"],
  ...["ports.0.port", "ports.0.protocol", "endpoints", "endpoints.0", "endpoints.0.addresses"],
  ...["endpoints.0.addresses.0", "endpoints.0.conditions", "endpoints.0.conditions.ready"],
  ...["endpoints.0.conditions.serving", "endpoints.0.conditions.terminating", "endpoints.0.hostname"],
  ...["endpoints.0.nodeName", "endpoints.0.zone", "endpoints.0.hints", "endpoints.0.hints.forZones"],
  ...["endpoints.0.hints.forZones.0.name", "endpoints.0.hints.forNodes", "endpoints.0.hints.forNodes.0.name"],
];

/** A slice of its own: for a Service that may or may not exist. */
export const endpointSliceArb: fc.Arbitrary<EndpointSliceObject> = fc
  .tuple(text(...NAMESPACES), text(...SERVICE_NAMES), family, protocol, text(...PORT_NAMES))
  .chain(([ns, name, fam, proto, portName]) =>
    damaged(validSlice(ns, name, [{ name: portName, protocol: proto }], fam), SLICE_PATHS),
  );

/**
 * A Service with the slices that point at it: they take its namespace, name and ports (whatever
 * those are after the damage), so hostile names reach the rules that need a Service and
 * endpoints both.
 */
const serviceGroup = serviceArb.chain((svc) => {
  const s = svc as Loose;
  const ports = Array.isArray(s?.spec?.ports)
    ? s.spec.ports.filter((p: Loose) => p && typeof p === "object")
    : [];
  const fam: Family =
    typeof s?.spec?.clusterIP === "string" && s.spec.clusterIP.includes(":") ? "IPv6" : "IPv4";
  const slice = damaged(validSlice(s?.metadata?.namespace, s?.metadata?.name, ports, fam), SLICE_PATHS);
  return fc.record({ svc: fc.constant(svc), slices: fc.array(slice, { maxLength: 2 }) });
});

const validNode = fc
  .record({
    name: fc.oneof({ arbitrary: fc.constant(SYNC_NODE), weight: 6 }, { arbitrary: hostileText, weight: 1 }),
    zone: fc.option(text(...ZONES), { nil: undefined }),
    podCIDRs: fc.constantFrom(["192.0.2.0/25"], ["192.0.2.0/25", "2001:db8:1::/64"], []),
    addresses: fc.constantFrom(
      [SYNC_NODE_IP, SYNC_NODE_IPV6],
      [SYNC_NODE_IPV6, SYNC_NODE_IP],
      [SYNC_NODE_IP],
      [] as string[],
    ),
  })
  .map(
    (n): NodeObject => ({
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name: n.name,
        labels: {
          "kubernetes.io/hostname": SYNC_NODE,
          ...(n.zone !== undefined ? { [ZONE_LABEL]: n.zone } : {}),
        },
      },
      spec: { ...(n.podCIDRs[0] ? { podCIDR: n.podCIDRs[0] } : {}), podCIDRs: [...n.podCIDRs] },
      status: {
        addresses: [
          ...n.addresses.map((address) => ({ type: "InternalIP", address })),
          { type: "Hostname", address: SYNC_NODE },
        ],
      },
    }),
  );

const NODE_PATHS = [
  ...["metadata", "metadata.name", "metadata.labels", `metadata.labels.${ZONE_LABEL}`, "spec"],
  ...["spec.podCIDR", "spec.podCIDRs", "spec.podCIDRs.0", "status", "status.addresses"],
  ...["status.addresses.0", "status.addresses.0.type", "status.addresses.0.address"],
];

export const nodeArb: fc.Arbitrary<NodeObject> = damaged(validNode, NODE_PATHS);

const validServiceCIDR = fc
  .record({
    name: fc.constantFrom("kubernetes", "extra"),
    cidrs: fc.constantFrom(["198.51.100.0/24"], ["198.51.100.0/24", "2001:db8:2::/64"], ["198.51.100.0/25"]),
  })
  .map(
    (c): ServiceCIDRObject => ({
      apiVersion: "networking.k8s.io/v1",
      kind: "ServiceCIDR",
      metadata: { name: c.name },
      spec: { cidrs: [...c.cidrs] },
    }),
  );

export const serviceCIDRArb: fc.Arbitrary<ServiceCIDRObject> = damaged(validServiceCIDR, [
  ...["metadata", "metadata.name", "spec", "spec.cidrs", "spec.cidrs.0", "spec.cidrs.1"],
]);

/** A whole cluster view: one to four Services with their slices, a stray slice, a Node, ServiceCIDRs. */
export const clusterArb: fc.Arbitrary<ClusterObjects> = fc
  .record({
    groups: fc.array(serviceGroup, { minLength: 1, maxLength: 4 }),
    strays: fc.array(endpointSliceArb, { maxLength: 1 }),
    node: fc.option(nodeArb, { freq: 8, nil: undefined }),
    serviceCIDRs: fc.array(serviceCIDRArb, { maxLength: 2 }),
  })
  .map(({ groups, strays, node, serviceCIDRs }) => ({
    serviceCIDRs,
    services: groups.map((g) => g.svc),
    slices: [...groups.flatMap((g) => g.slices), ...strays],
    node,
  }));

/** Settings every property run shares: a fixed seed, so a failure reproduces. */
export const PROPERTY_SEED = 20_240_611;
