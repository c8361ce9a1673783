import { describe, expect, test } from "bun:test";
import { memoryRecorder } from "../../src/k8s/events.ts";
import type { EndpointSliceObject, ServiceObject } from "../../src/k8s/objects.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { EndpointsMap } from "../../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../../src/proxy/endpoints-tracker.ts";
import { ServiceMap } from "../../src/proxy/service-map.ts";
import { ServiceChangeTracker } from "../../src/proxy/service-tracker.ts";
import { ep, service, slice } from "./builders.ts";

const good = service("good", { clusterIP: "198.51.100.1" });

function ingestServices(...svcs: ServiceObject[]) {
  const logger = memoryLogger();
  const recorder = memoryRecorder();
  const tracker = new ServiceChangeTracker({ logger, recorder });
  const map = new ServiceMap();
  for (const s of [good, ...svcs]) tracker.serviceChanged(undefined, s);
  map.update(tracker);
  return { logger, recorder, tracker, map };
}

interface ServiceCase {
  readonly svc: ServiceObject;
  /** Service port ids left, besides ns/good:http. */
  readonly ports: string[];
  /** Field path and value the warning must name; undefined: nothing logged. */
  readonly field?: string;
  readonly value?: string;
  readonly event: boolean;
  readonly check?: (map: ServiceMap) => void;
}

const two = [
  { name: "http", port: 80 },
  { name: "https", port: 443 },
];

describe("bad Service fields", () => {
  const cases: [string, ServiceCase][] = [
    [
      "a valid Service logs nothing",
      {
        svc: service("web", { clusterIP: "198.51.100.10", externalIPs: ["203.0.113.1"] }),
        ports: ["ns/web:http"],
        event: false,
      },
    ],
    [
      "a bad externalIP drops only that IP",
      {
        svc: service("web", {
          clusterIP: "198.51.100.10",
          externalIPs: ["203.0.113.1", "203.0.113.300", "2001:db8::1"],
        }),
        ports: ["ns/web:http"],
        field: "spec.externalIPs[1]",
        value: "203.0.113.300",
        event: true,
        check: (m) => expect(m.get("ns/web:http")!.externalIPs).toEqual(["203.0.113.1", "2001:db8::1"]),
      },
    ],
    [
      "a bad port number drops only that port",
      {
        svc: service("web", { clusterIP: "198.51.100.10", ports: [two[0]!, { name: "https", port: 70000 }] }),
        ports: ["ns/web:http"],
        field: "spec.ports[1].port",
        value: "70000",
        event: true,
      },
    ],
    [
      "a bad protocol drops only that port",
      {
        svc: service("web", {
          clusterIP: "198.51.100.10",
          ports: [two[0]!, { name: "https", port: 443, protocol: "ICMP" }],
        }),
        ports: ["ns/web:http"],
        field: "spec.ports[1].protocol",
        value: "ICMP",
        event: true,
      },
    ],
    [
      "a bad nodePort drops only that port",
      {
        svc: service("web", {
          type: "NodePort",
          clusterIP: "198.51.100.10",
          ports: [two[0]!, { name: "https", port: 443, nodePort: -1 }],
        }),
        ports: ["ns/web:http"],
        field: "spec.ports[1].nodePort",
        value: "-1",
        event: true,
      },
    ],
    [
      "a cluster IP that is not an IP drops the whole Service",
      {
        svc: service("web", { clusterIP: "198.51.100.x", ports: two }),
        ports: [],
        field: "spec.clusterIP",
        value: "198.51.100.x",
        event: true,
      },
    ],
    [
      "a bad secondary cluster IP drops only that family",
      {
        svc: service("web", { clusterIP: "198.51.100.10", clusterIPs: ["198.51.100.10", "2001:db8::zz"] }),
        ports: ["ns/web:http"],
        field: "spec.clusterIPs[1]",
        value: "2001:db8::zz",
        event: true,
        check: (m) => expect(m.get("ns/web:http")!.clusterIPs).toEqual({ IPv4: "198.51.100.10" }),
      },
    ],
    [
      "a bad source range drops only that range",
      {
        svc: service(
          "web",
          {
            type: "LoadBalancer",
            clusterIP: "198.51.100.10",
            loadBalancerSourceRanges: ["203.0.113.0/24", "203.0.113.0/40"],
          },
          { status: { loadBalancer: { ingress: [{ ip: "203.0.113.50" }] } } },
        ),
        ports: ["ns/web:http"],
        field: "spec.loadBalancerSourceRanges[1]",
        value: "203.0.113.0/40",
        event: true,
        check: (m) => {
          expect(m.get("ns/web:http")!.loadBalancerSourceRanges).toEqual(["203.0.113.0/24"]);
          expect(m.get("ns/web:http")!.loadBalancerVIPs).toEqual(["203.0.113.50"]);
        },
      },
    ],
    [
      "all source ranges bad: the load balancer VIPs are dropped, never opened to everyone",
      {
        svc: service(
          "web",
          { type: "LoadBalancer", clusterIP: "198.51.100.10", loadBalancerSourceRanges: ["office"] },
          { status: { loadBalancer: { ingress: [{ ip: "203.0.113.50" }] } } },
        ),
        ports: ["ns/web:http"],
        field: "spec.loadBalancerSourceRanges[0]",
        value: "office",
        event: true,
        check: (m) => expect(m.get("ns/web:http")!.loadBalancerVIPs).toEqual([]),
      },
    ],
    [
      "a bad load balancer ingress IP drops only that IP",
      {
        svc: service(
          "web",
          { type: "LoadBalancer", clusterIP: "198.51.100.10" },
          { status: { loadBalancer: { ingress: [{ ip: "lb" }, { ip: "203.0.113.51" }] } } },
        ),
        ports: ["ns/web:http"],
        field: "status.loadBalancer.ingress[0].ip",
        value: "lb",
        event: true,
        check: (m) => expect(m.get("ns/web:http")!.loadBalancerVIPs).toEqual(["203.0.113.51"]),
      },
    ],
    [
      "a bad affinity timeout falls back to the default",
      {
        svc: service("web", {
          clusterIP: "198.51.100.10",
          sessionAffinity: "ClientIP",
          sessionAffinityConfig: { clientIP: { timeoutSeconds: 0 } },
        }),
        ports: ["ns/web:http"],
        field: "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
        value: "0",
        event: true,
        check: (m) => expect(m.get("ns/web:http")!.sessionAffinity.timeoutSeconds).toBe(10800),
      },
    ],
    [
      "ports that are not a list give no ports, with a warning",
      {
        svc: service("web", { clusterIP: "198.51.100.10", ports: "80" as never }),
        ports: [],
        field: "spec.ports",
        value: "80",
        event: true,
      },
    ],
    [
      "externalIPs that are not a list are ignored",
      {
        svc: service("web", { clusterIP: "198.51.100.10", externalIPs: { ip: "203.0.113.1" } as never }),
        ports: ["ns/web:http"],
        field: "spec.externalIPs",
        value: "ip",
        event: true,
      },
    ],
    [
      "a port entry that is null is skipped",
      {
        svc: service("web", { clusterIP: "198.51.100.10", ports: [null as never, two[1]!] }),
        ports: ["ns/web:https"],
        field: "spec.ports[0]",
        value: "null",
        event: true,
      },
    ],
  ];

  test.each(cases)("%s", (_name, c) => {
    const { logger, recorder, map } = ingestServices(c.svc);
    expect([...map.keys()].sort()).toEqual(["ns/good:http", ...c.ports].sort());
    c.check?.(map);
    if (c.field === undefined) {
      expect(logger.lines.filter((l) => l.startsWith("W"))).toEqual([]);
      expect(recorder.events).toEqual([]);
      return;
    }
    const line = logger.lines.find((l) => l.includes(`field="${c.field}"`));
    expect(line).toBeDefined();
    expect(line).toStartWith("W");
    expect(line).toContain('service="ns/web"');
    expect(line).toContain(c.value!);
    const events = recorder.events.filter((e) => e.reason === "KubeProxyInvalidField");
    expect(events.length > 0).toBe(c.event);
    if (c.event)
      expect(events[0]).toMatchObject({
        type: "Warning",
        ref: { kind: "Service", namespace: "ns", name: "web" },
      });
  });

  test("a Service with a bad field is told once, not on every resync", () => {
    const bad = service("web", { clusterIP: "198.51.100.10", externalIPs: ["nope"] });
    const { logger, recorder, tracker } = ingestServices(bad);
    const lines = logger.lines.length;
    tracker.serviceChanged(bad, bad);
    tracker.serviceChanged(bad, bad);
    expect(logger.lines.length).toBe(lines);
    expect(recorder.events).toHaveLength(1);
  });

  test("objects that are not objects never throw", () => {
    const { tracker, map } = ingestServices();
    const junk = [null, 42, "svc", { metadata: { name: 7 } }, { metadata: { name: "x" }, spec: 5 }];
    for (const j of junk) expect(tracker.serviceChanged(undefined, j as never)).toBe(false);
    expect(tracker.serviceChanged(undefined, undefined)).toBe(false);
    map.update(tracker);
    expect([...map.keys()]).toEqual(["ns/good:http"]);
  });
});

function ingestSlices(...slices: EndpointSliceObject[]) {
  const logger = memoryLogger();
  const recorder = memoryRecorder();
  const tracker = new EndpointsChangeTracker({ nodeName: "node-a", logger, recorder });
  const map = new EndpointsMap();
  for (const s of [slice("api-a", [ep("192.0.2.99")], { service: "api" }), ...slices])
    tracker.endpointSliceChanged(s, false);
  map.update(tracker);
  return { logger, recorder, tracker, map };
}

describe("bad EndpointSlice fields", () => {
  const cases: [
    string,
    EndpointSliceObject,
    Record<string, string[]>,
    string,
    string,
    string | undefined,
    string,
  ][] = [
    [
      "a bad address drops only that endpoint",
      slice("web-a", [ep("192.0.2.1"), ep("192.0.2.999")]),
      { "ns/web:http": ["192.0.2.1:8080"] },
      "endpoints[1].addresses[0]",
      "192.0.2.999",
      "KubeProxyInvalidField",
      "EndpointSlice",
    ],
    [
      "an address of the wrong family drops that endpoint, with upstream's event on the Service",
      slice("web-a", [ep("192.0.2.1"), ep("2001:db8::1")]),
      { "ns/web:http": ["192.0.2.1:8080"] },
      "endpoints[1].addresses[0]",
      "2001:db8::1",
      "KubeProxyIncorrectIPVersion",
      "Service",
    ],
    [
      "a bad port drops only that port",
      slice("web-a", [ep("192.0.2.1")], {
        ports: [
          { name: "http", port: 8080 },
          { name: "admin", port: -5 },
        ],
      }),
      { "ns/web:http": ["192.0.2.1:8080"] },
      "ports[1].port",
      "-5",
      "KubeProxyInvalidField",
      "EndpointSlice",
    ],
    [
      "a bad protocol drops only that port",
      slice("web-a", [ep("192.0.2.1")], {
        ports: [
          { name: "http", port: 8080, protocol: "QUIC" },
          { name: "x", port: 81 },
        ],
      }),
      { "ns/web:x": ["192.0.2.1:81"] },
      "ports[0].protocol",
      "QUIC",
      "KubeProxyInvalidField",
      "EndpointSlice",
    ],
    [
      "an endpoint without addresses is skipped and logged",
      slice("web-a", [{ addresses: [] }, ep("192.0.2.1")]),
      { "ns/web:http": ["192.0.2.1:8080"] },
      "endpoints[0].addresses",
      "[]",
      undefined,
      "",
    ],
  ];

  test.each(cases)("%s", (_name, s, expected, field, value, reason, refKind) => {
    const { logger, recorder, map } = ingestSlices(s);
    const got = Object.fromEntries(
      [...map.entries()]
        .filter(([id]) => !id.startsWith("ns/api"))
        .map(([id, eps]) => [id, eps.map((e) => e.endpoint)]),
    );
    expect(got).toEqual(expected);
    expect(map.get("ns/api:http")).toHaveLength(1);
    const line = logger.lines.find((l) => l.includes(`field="${field}"`));
    expect(line).toBeDefined();
    expect(line).toContain('endpointSlice="ns/web-a"');
    expect(line).toContain(value);
    if (!reason) {
      expect(recorder.events).toEqual([]);
      return;
    }
    expect(recorder.events).toHaveLength(1);
    expect(recorder.events[0]).toMatchObject({
      type: "Warning",
      reason,
      ref: { kind: refKind, namespace: "ns" },
    });
    expect(recorder.events[0]!.ref.name).toBe(refKind === "Service" ? "web" : "web-a");
  });

  test("a bad trigger time is logged and the slice still applies", () => {
    const s = slice("web-a", [ep("192.0.2.1")], {
      annotations: { "endpoints.kubernetes.io/last-change-trigger-time": "soon" },
    });
    const { logger, map } = ingestSlices(s);
    expect(map.get("ns/web:http")).toHaveLength(1);
    expect(logger.lines.some((l) => l.includes("soon"))).toBe(true);
  });

  test("junk never throws and the rest keeps syncing", () => {
    const { tracker, map } = ingestSlices();
    const junk = [
      null,
      "slice",
      { addressType: "IPv4" },
      { ...slice("web-a", []), endpoints: "x" },
      { ...slice("web-b", []), endpoints: [null, 5, { addresses: "192.0.2.1" }] },
      { ...slice("web-c", [ep("192.0.2.1")]), metadata: { name: "web-c", namespace: "ns", labels: null } },
    ];
    for (const j of junk) tracker.endpointSliceChanged(j as never, false);
    for (const j of junk) tracker.endpointSliceChanged(j as never, true);
    map.update(tracker);
    expect([...map.keys()]).toEqual(["ns/api:http"]);
  });
});

describe("names the API server would refuse", () => {
  test("a Service name with a quote and newline is skipped with a Warning event; the rest sync", () => {
    const evil = service('x"\nCOMMIT', { clusterIP: "198.51.100.77" });
    const { map, recorder } = ingestServices(evil);
    expect([...map.keys()]).toEqual(["ns/good:http"]);
    expect(recorder.events.map((e) => e.reason)).toEqual(["KubeProxyInvalidField"]);
    expect(recorder.events[0]!.message).toContain("metadata.name");
  });

  test("a port name with `;` or 300 characters drops that port only", () => {
    const svc = service("web", {
      clusterIP: "198.51.100.78",
      ports: [
        { name: "ok", port: 80, protocol: "TCP" },
        { name: "a; flush ruleset", port: 81, protocol: "TCP" },
        { name: "p".repeat(300), port: 82, protocol: "TCP" },
      ],
    });
    const { map, logger } = ingestServices(svc);
    expect([...map.keys()].sort()).toEqual(["ns/good:http", "ns/web:ok"]);
    const text = logger.lines.join("\n");
    expect(text).toContain('field="spec.ports[1].name"');
    expect(text).toContain('field="spec.ports[2].name"');
  });
});
