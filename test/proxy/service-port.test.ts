import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { ServiceObject } from "../../src/k8s/objects.ts";
import { familyView } from "../../src/proxy/family-view.ts";
import { ProblemList } from "../../src/proxy/problems.ts";
import {
  servicePorts,
  servicePortsFingerprint,
  usesClusterEndpoints,
  usesLocalEndpoints,
} from "../../src/proxy/service-port.ts";
import type { ServicePortInfo } from "../../src/proxy/types.ts";
import { service } from "./builders.ts";

function portsOf(svc: ServiceObject): ServicePortInfo[] {
  return servicePorts(svc, "ns", svc.metadata!.name!, new ProblemList({ kind: "Service", name: "x" }));
}

const lbStatus = (ingress: { ip?: string; hostname?: string; ipMode?: string }[]) => ({
  status: { loadBalancer: { ingress } },
});

describe("service port model", () => {
  // isExternal is a fact of one family's view of the port (checked on the IPv4 view).
  const cases: [string, ServiceObject, Partial<ServicePortInfo & { isExternal: boolean }>][] = [
    [
      "plain ClusterIP",
      service("web", { clusterIP: "198.51.100.10" }),
      {
        id: "ns/web:http",
        name: { namespace: "ns", name: "web", port: "http", protocol: "TCP" },
        clusterIPs: { IPv4: "198.51.100.10" },
        port: 80,
        protocol: "TCP",
        nodePort: 0,
        externalIPs: [],
        loadBalancerVIPs: [],
        loadBalancerSourceRanges: [],
        sessionAffinity: { type: "None", timeoutSeconds: 0 },
        externalPolicyLocal: false,
        internalPolicyLocal: false,
        healthCheckNodePort: 0,
        topologyMode: "",
        trafficDistribution: "",
        isExternal: false,
        serviceType: "ClusterIP",
      },
    ],
    [
      "unnamed single port, protocol defaulted",
      service("web", { clusterIP: "198.51.100.10", ports: [{ port: 53 }] }),
      { id: "ns/web", protocol: "TCP", port: 53 },
    ],
    [
      "NodePort with ETP Local",
      service("web", {
        type: "NodePort",
        clusterIP: "198.51.100.10",
        externalTrafficPolicy: "Local",
        ports: [{ name: "http", port: 80, nodePort: 30080 }],
      }),
      {
        nodePort: 30080,
        externalPolicyLocal: true,
        isExternal: true,
        serviceType: "NodePort",
        healthCheckNodePort: 0,
      },
    ],
    [
      "ClusterIP ignores ETP Local without external IPs",
      service("web", { clusterIP: "198.51.100.10", externalTrafficPolicy: "Local" }),
      { externalPolicyLocal: false, isExternal: false },
    ],
    [
      "ClusterIP with externalIPs honours ETP Local",
      service("web", {
        clusterIP: "198.51.100.10",
        externalTrafficPolicy: "Local",
        externalIPs: ["203.0.113.5", "2001:db8::5", "203.0.113.5"],
      }),
      { externalPolicyLocal: true, isExternal: true, externalIPs: ["203.0.113.5", "2001:db8::5"] },
    ],
    [
      "LoadBalancer: ipMode Proxy and hostname ingress excluded, ranges normalised, health check port",
      service(
        "web",
        {
          type: "LoadBalancer",
          clusterIP: "198.51.100.10",
          externalTrafficPolicy: "Local",
          healthCheckNodePort: 32000,
          loadBalancerSourceRanges: [" 203.0.113.0/25", "2001:db8::/64"],
          ports: [{ name: "http", port: 80, nodePort: 30080 }],
        },
        lbStatus([
          { ip: "203.0.113.100" },
          { ip: "203.0.113.101", ipMode: "VIP" },
          { ip: "203.0.113.102", ipMode: "Proxy" },
          { hostname: "lb.example.com" },
          { ip: "2001:db8::100" },
        ]),
      ),
      {
        serviceType: "LoadBalancer",
        loadBalancerVIPs: ["203.0.113.100", "203.0.113.101", "2001:db8::100"],
        loadBalancerSourceRanges: ["203.0.113.0/25", "2001:db8::/64"],
        healthCheckNodePort: 32000,
        externalPolicyLocal: true,
        isExternal: true,
      },
    ],
    [
      "LoadBalancer with ETP Cluster has no health check port",
      service("web", { type: "LoadBalancer", clusterIP: "198.51.100.10", healthCheckNodePort: 32000 }),
      { healthCheckNodePort: 0, externalPolicyLocal: false },
    ],
    [
      "ITP Local",
      service("web", { clusterIP: "198.51.100.10", internalTrafficPolicy: "Local" }),
      { internalPolicyLocal: true },
    ],
    [
      "ClientIP affinity without config defaults to 10800 s",
      service("web", { clusterIP: "198.51.100.10", sessionAffinity: "ClientIP" }),
      { sessionAffinity: { type: "ClientIP", timeoutSeconds: 10800 } },
    ],
    [
      "ClientIP affinity with timeout",
      service("web", {
        clusterIP: "198.51.100.10",
        sessionAffinity: "ClientIP",
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
      }),
      { sessionAffinity: { type: "ClientIP", timeoutSeconds: 600 } },
    ],
    [
      "dual-stack cluster IPs",
      service("web", {
        clusterIP: "2001:db8::a",
        clusterIPs: ["2001:db8::a", "198.51.100.10"],
        ipFamilies: ["IPv6", "IPv4"],
      }),
      { clusterIPs: { IPv6: "2001:db8::a", IPv4: "198.51.100.10" } },
    ],
    [
      "trafficDistribution and topology-mode annotation",
      service(
        "web",
        { clusterIP: "198.51.100.10", trafficDistribution: "PreferClose" },
        { metadata: { annotations: { "service.kubernetes.io/topology-mode": "Auto" } } },
      ),
      { trafficDistribution: "PreferClose", topologyMode: "Auto" },
    ],
    [
      "deprecated topology-aware-hints annotation wins",
      service(
        "web",
        { clusterIP: "198.51.100.10" },
        {
          metadata: {
            annotations: {
              "service.kubernetes.io/topology-mode": "Auto",
              "service.kubernetes.io/topology-aware-hints": "Disabled",
            },
          },
        },
      ),
      { topologyMode: "Disabled" },
    ],
  ];

  test.each(cases)("%s", (_name, svc, expected) => {
    const ports = portsOf(svc);
    expect(ports).toHaveLength(1);
    const { isExternal, ...fields } = expected;
    expect(ports[0]).toMatchObject(fields);
    if (isExternal !== undefined) expect(familyView(ports[0]!, "IPv4")?.isExternal).toBe(isExternal);
  });

  test("one service port per Service port, each with its own protocol", () => {
    const svc = service("dns", {
      clusterIP: "198.51.100.53",
      ports: [
        { name: "dns", port: 53, protocol: "UDP" },
        { name: "dns-tcp", port: 53, protocol: "TCP" },
      ],
    });
    expect(portsOf(svc).map((p) => [p.id, p.protocol])).toEqual([
      ["ns/dns:dns", "UDP"],
      ["ns/dns:dns-tcp", "TCP"],
    ]);
  });
});

describe("Services that get no service ports", () => {
  test.each([
    ["ExternalName", service("ext", { type: "ExternalName", externalName: "db.example.com", clusterIP: "" })],
    ["ExternalName even with an IP", service("ext", { type: "ExternalName", clusterIP: "198.51.100.9" })],
    ["headless", service("db", { clusterIP: "None" })],
    ["ClusterIP without an IP", service("db", { clusterIP: "" })],
    ["no spec", { metadata: { namespace: "ns", name: "nospec" } }],
    ["no ports", service("db", { clusterIP: "198.51.100.9", ports: [] })],
  ] as [string, ServiceObject][])("%s", (_name, svc) => {
    expect(portsOf(svc)).toEqual([]);
  });
});

describe("endpoint usage helpers", () => {
  const base = familyView(portsOf(service("web", { clusterIP: "198.51.100.10" }))[0]!, "IPv4")!;
  test.each([
    ["cluster only", {}, true, false],
    ["ITP Local", { internalPolicyLocal: true }, false, true],
    ["ETP Local external", { externalPolicyLocal: true, isExternal: true }, true, true],
    ["ITP Local but external", { internalPolicyLocal: true, isExternal: true }, true, true],
  ] as const)("%s", (_name, patch, cluster, local) => {
    const { internalPolicyLocal, externalPolicyLocal, isExternal } = base;
    const info = { internalPolicyLocal, externalPolicyLocal, isExternal, ...patch };
    expect(usesClusterEndpoints(info)).toBe(cluster);
    expect(usesLocalEndpoints(info)).toBe(local);
  });
});

describe("loadBalancerSourceRanges fail closed", () => {
  const lb = (ranges: unknown, ips: string[]) =>
    service(
      "lb",
      {
        type: "LoadBalancer",
        clusterIP: "198.51.100.10",
        loadBalancerSourceRanges: ranges as string[],
      },
      lbStatus(ips.map((ip) => ({ ip }))),
    );
  const read = (svc: ServiceObject) => {
    const problems = new ProblemList({ kind: "Service", name: "lb" });
    const [port] = servicePorts(svc, "ns", "lb", problems);
    return { vips: port?.loadBalancerVIPs, fields: problems.items.map((p) => `${p.field}: ${p.detail}`) };
  };

  test("ranges only of the other family close that family's VIPs, not open them", () => {
    const r = read(lb(["2001:db8::/64"], ["203.0.113.5", "2001:db8::5"]));
    expect(r.vips).toEqual(["2001:db8::5"]);
    expect(r.fields).toEqual([
      "spec.loadBalancerSourceRanges: no usable IPv4 range; IPv4 LoadBalancer IPs closed",
    ]);
  });

  test("ranges of both families keep both VIPs", () => {
    expect(read(lb(["203.0.113.0/24", "2001:db8::/64"], ["203.0.113.5", "2001:db8::5"])).vips).toEqual([
      "203.0.113.5",
      "2001:db8::5",
    ]);
  });

  test("a field that is not a list closes every VIP", () => {
    const r = read(lb("203.0.113.0/24", ["203.0.113.5"]));
    expect(r.vips).toEqual([]);
    expect(r.fields[0]).toBe("spec.loadBalancerSourceRanges: not a list; LoadBalancer IPs closed");
  });

  test("no ranges: VIPs open to all, as upstream", () => {
    expect(read(lb(undefined, ["203.0.113.5"])).vips).toEqual(["203.0.113.5"]);
    expect(read(lb([], ["203.0.113.5"])).vips).toEqual(["203.0.113.5"]);
  });
});

describe("servicePortsFingerprint", () => {
  test("equal exactly when the ports are equal", () => {
    const spec = fc.record({
      clusterIP: fc.constantFrom("198.51.100.10", "198.51.100.11"),
      type: fc.constantFrom("ClusterIP", "NodePort", "LoadBalancer"),
      externalIPs: fc.subarray(["203.0.113.1", "203.0.113.2", "2001:db8::1"]),
      loadBalancerSourceRanges: fc.subarray(["203.0.113.0/24", "2001:db8::/64"]),
      sessionAffinity: fc.constantFrom("None", "ClientIP"),
      externalTrafficPolicy: fc.constantFrom("Cluster", "Local"),
      ports: fc.subarray(
        [
          { name: "a", port: 80, protocol: "TCP", nodePort: 30080 },
          { name: "b", port: 53, protocol: "UDP" },
          { name: "c", port: 443, protocol: "TCP", nodePort: 30443 },
        ],
        { minLength: 1 },
      ),
    });
    fc.assert(
      fc.property(spec, spec, (a, b) => {
        const pa = portsOf(service("web", a));
        const pb = portsOf(service("web", b));
        const same = JSON.stringify(pa) === JSON.stringify(pb);
        expect(servicePortsFingerprint(pa) === servicePortsFingerprint(pb)).toBe(same);
      }),
      { seed: 23, numRuns: 500 },
    );
  });
});
