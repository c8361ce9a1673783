// Names and namespaces the API server would refuse are refused by the trackers too: such an
// object is skipped and reported (field and value), and can no longer take over another
// object's "ns/name:port" key.
import { describe, expect, test } from "bun:test";
import { memoryRecorder } from "../../src/k8s/events.ts";
import type { EndpointSliceObject } from "../../src/k8s/objects.ts";
import { validServiceName } from "../../src/k8s/validation.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { EndpointsMap } from "../../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../../src/proxy/endpoints-tracker.ts";
import { checkObjectName, objectName, reportedObjectName } from "../../src/proxy/guard.ts";
import { ProblemReporter } from "../../src/proxy/problems.ts";
import { ServiceMap } from "../../src/proxy/service-map.ts";
import { ServiceChangeTracker } from "../../src/proxy/service-tracker.ts";
import { ep, service, slice } from "./builders.ts";

function sliceIn(namespace: string, name: string, serviceName: string, ip: string, portName = "c") {
  const s = slice(name, [ep(ip)], { service: serviceName, ports: [{ name: portName, port: 8080 }] });
  return { ...s, metadata: { ...s.metadata, namespace } } as EndpointSliceObject;
}

function ingestSlices(...slices: EndpointSliceObject[]) {
  const logger = memoryLogger();
  const recorder = memoryRecorder();
  const tracker = new EndpointsChangeTracker({ nodeName: "node-a", logger, recorder });
  for (const s of slices) tracker.endpointSliceChanged(s, false);
  const map = new EndpointsMap();
  map.update(tracker);
  const endpoints = Object.fromEntries(
    [...map.entries()].map(([id, eps]) => [id, eps.map((e) => e.endpoint)]),
  );
  return { logger, recorder, tracker, endpoints };
}

describe("objectName", () => {
  test("valid names, and the default namespace", () => {
    expect(objectName({ name: "web", namespace: "ns" })).toEqual({ namespace: "ns", name: "web" });
    expect(objectName({ name: "web" })).toEqual({ namespace: "default", name: "web" });
    expect(objectName({ name: "web", namespace: "" })).toEqual({ namespace: "default", name: "web" });
  });

  test("names and namespaces the API server refuses are no names", () => {
    for (const meta of [
      { name: "b/c", namespace: "a" },
      { name: "c", namespace: "a/b" },
      { name: "b:c", namespace: "a" },
      { name: "Web", namespace: "ns" },
      { name: "web", namespace: 5 },
      { name: 7 },
      { name: "" },
      {},
      "meta",
      null,
    ])
      expect(objectName(meta)).toBeUndefined();
  });

  test("the problem names the field, the value and the rule", () => {
    expect(checkObjectName({ name: "b/c", namespace: "a" })).toMatchObject({
      field: "metadata.name",
      value: "b/c",
    });
    expect(checkObjectName({ name: "c", namespace: "a/b" })).toMatchObject({
      field: "metadata.namespace",
      value: "a/b",
    });
    expect(checkObjectName({ name: "a.b" }, validServiceName)).toMatchObject({ field: "metadata.name" });
    expect(checkObjectName({}, validServiceName)).toMatchObject({ reason: "is required" });
  });

  test("reportedObjectName logs once, with an event in the object's namespace when it has a usable one", () => {
    const logger = memoryLogger();
    const recorder = memoryRecorder();
    const reporter = new ProblemReporter(logger, recorder, "Test");
    const meta = { name: "b/c", namespace: "a" };
    for (let i = 0; i < 3; i++)
      expect(reportedObjectName("Service", meta, validServiceName, reporter, false)).toBeUndefined();
    const warnings = logger.lines.filter((l) => l.startsWith("W"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('field="metadata.name"');
    expect(warnings[0]).toContain("b/c");
    expect(recorder.events).toHaveLength(1);
    expect(recorder.events[0]).toMatchObject({
      type: "Warning",
      reason: "KubeProxyInvalidField",
      ref: { kind: "Service", namespace: "a", name: "b/c" },
    });

    // A bad namespace has nowhere to put an event: the log only.
    reportedObjectName("Service", { name: "c", namespace: "a/b" }, validServiceName, reporter, false);
    expect(logger.lines.some((l) => l.includes('field="metadata.namespace"') && l.includes("a/b"))).toBe(
      true,
    );
    expect(recorder.events).toHaveLength(1);

    // Deleted, then recreated with the same fault: told again.
    reportedObjectName("Service", meta, validServiceName, reporter, true);
    reportedObjectName("Service", meta, validServiceName, reporter, false);
    expect(recorder.events).toHaveLength(2);
  });

  test("a huge invalid name is cut in the report", () => {
    const logger = memoryLogger();
    const reporter = new ProblemReporter(logger, memoryRecorder(), "Test");
    reportedObjectName("Service", { name: `X${"a".repeat(1_000_000)}` }, validServiceName, reporter, false);
    expect(logger.lines.join("\n").length).toBeLessThan(2000);
  });
});

describe("EndpointSlice names", () => {
  test("an invalid slice name or namespace skips the slice, reported with field and value", () => {
    const { logger, recorder, endpoints } = ingestSlices(
      sliceIn("ns", "web-1", "web", "192.0.2.1"),
      sliceIn("ns", "Web_2", "web", "192.0.2.2"),
      sliceIn("n/s", "web-3", "web", "192.0.2.3"),
    );
    expect(endpoints).toEqual({ "ns/web:c": ["192.0.2.1:8080"] });
    expect(logger.lines.some((l) => l.includes('field="metadata.name"') && l.includes("Web_2"))).toBe(true);
    expect(logger.lines.some((l) => l.includes('field="metadata.namespace"') && l.includes("n/s"))).toBe(
      true,
    );
    expect(recorder.events.map((e) => e.ref.name)).toEqual(["Web_2"]);
  });

  test("a service-name label no Service could have skips the slice", () => {
    const { logger, recorder, endpoints } = ingestSlices(
      sliceIn("ns", "web-1", "web", "192.0.2.1"),
      sliceIn("ns", "odd-1", "web:c", "192.0.2.9", ""),
    );
    expect(endpoints).toEqual({ "ns/web:c": ["192.0.2.1:8080"] });
    const line = logger.lines.find((l) => l.includes("kubernetes.io/service-name"));
    expect(line).toContain("web:c");
    expect(recorder.events).toHaveLength(1);
    expect(recorder.events[0]!.ref).toMatchObject({ kind: "EndpointSlice", name: "odd-1" });
  });

  test("deleting a slice with an invalid name is no change and never throws", () => {
    const logger = memoryLogger();
    const tracker = new EndpointsChangeTracker({ nodeName: "node-a", logger });
    const bad = sliceIn("ns", "a/b", "web", "192.0.2.1");
    expect(tracker.endpointSliceChanged(bad, false)).toBe(false);
    expect(tracker.endpointSliceChanged(bad, true)).toBe(false);
    expect(tracker.pendingChanges().size).toBe(0);
  });

  test("an address type that is an inherited property name is not a family", () => {
    const { endpoints } = ingestSlices(
      { ...sliceIn("ns", "web-1", "web", "192.0.2.1"), addressType: "constructor" },
      { ...sliceIn("ns", "web-2", "web", "192.0.2.2"), addressType: "__proto__" },
    );
    expect(endpoints).toEqual({});
  });
});

describe("keys no longer collide", () => {
  // Keys are "ns/name" and "ns/name:port": a '/' or ':' in a name made two objects one.
  test('namespace "a/b" + name "c" and namespace "a" + name "b/c" are both refused', () => {
    const { endpoints } = ingestSlices(
      sliceIn("a/b", "c-1", "c", "192.0.2.1"),
      sliceIn("a", "c-2", "b/c", "192.0.2.2"),
    );
    expect(endpoints).toEqual({});

    const tracker = new ServiceChangeTracker({ logger: memoryLogger() });
    const inNs = (ns: string, name: string) => {
      const svc = service(name, { clusterIP: "198.51.100.1" });
      return { ...svc, metadata: { ...svc.metadata, namespace: ns } };
    };
    tracker.serviceChanged(undefined, inNs("a/b", "c"));
    tracker.serviceChanged(undefined, inNs("a", "b/c"));
    const services = new ServiceMap();
    services.update(tracker);
    expect([...services.keys()]).toEqual([]);
  });

  test('a Service "b:c" no longer takes the endpoints of Service "b" port "c"', () => {
    const { endpoints } = ingestSlices(
      sliceIn("a", "b-1", "b", "192.0.2.1", "c"),
      // Unnamed port of a Service named "b:c": its key used to be "a/b:c" too.
      sliceIn("a", "bc-1", "b:c", "192.0.2.66", ""),
    );
    expect(endpoints).toEqual({ "a/b:c": ["192.0.2.1:8080"] });
  });
});

describe("names inside an EndpointSlice", () => {
  const webSlice = (endpoints: NonNullable<EndpointSliceObject["endpoints"]>, ports?: never) =>
    slice("web-1", endpoints, ports ? { ports } : {});

  test("a port name that is not a DNS-1123 label skips that port only", () => {
    const { logger, recorder, endpoints } = ingestSlices(
      webSlice([ep("192.0.2.1")], [
        { name: "HTTP", port: 80 },
        { name: "a:b", port: 81 },
        { name: "ok", port: 82 },
      ] as never),
    );
    expect(endpoints).toEqual({ "ns/web:ok": ["192.0.2.1:82"] });
    for (const [field, value] of [
      ["ports[0].name", "HTTP"],
      ["ports[1].name", "a:b"],
    ])
      expect(logger.lines.some((l) => l.includes(`field="${field}"`) && l.includes(value!))).toBe(true);
    expect(recorder.events.map((e) => e.reason)).toEqual(["KubeProxyInvalidField", "KubeProxyInvalidField"]);
  });

  test("an invalid nodeName or zone skips that endpoint; the rest of the slice syncs", () => {
    const { logger, endpoints } = ingestSlices(
      webSlice([
        ep("192.0.2.1"),
        { ...ep("192.0.2.2"), nodeName: "Node_B" },
        { ...ep("192.0.2.3"), nodeName: 5 as never },
        { ...ep("192.0.2.4"), zone: "zone a" },
        { ...ep("192.0.2.5"), zone: "zone-a", nodeName: "" },
      ]),
    );
    expect(endpoints).toEqual({ "ns/web:http": ["192.0.2.1:8080", "192.0.2.5:8080"] });
    for (const [field, value] of [
      ["endpoints[1].nodeName", "Node_B"],
      ["endpoints[2].nodeName", "5"],
      ["endpoints[3].zone", "zone a"],
    ])
      expect(logger.lines.some((l) => l.includes(`field="${field}"`) && l.includes(value!))).toBe(true);
  });

  test("an invalid hint is dropped; the endpoint keeps its valid hints", () => {
    const logger = memoryLogger();
    const tracker = new EndpointsChangeTracker({ nodeName: "node-a", logger });
    tracker.endpointSliceChanged(
      webSlice([
        {
          ...ep("192.0.2.1"),
          hints: {
            forZones: [{ name: "zone a" }, { name: "zone-b" }, {}, 7 as never],
            forNodes: [{ name: "a/b" }, { name: "node-a" }],
          },
        },
        { ...ep("192.0.2.2"), hints: "soon" as never },
        { ...ep("192.0.2.3"), hints: { forZones: "zone-a" as never } },
      ]),
      false,
    );
    const map = new EndpointsMap();
    map.update(tracker);
    const eps = map.get("ns/web:http")!;
    expect(eps.map((e) => e.endpoint)).toEqual(["192.0.2.1:8080", "192.0.2.2:8080", "192.0.2.3:8080"]);
    expect([...eps[0]!.zoneHints]).toEqual(["zone-b"]);
    expect([...eps[0]!.nodeHints]).toEqual(["node-a"]);
    expect(eps[1]!.zoneHints.size + eps[2]!.zoneHints.size).toBe(0);
    for (const field of [
      "endpoints[0].hints.forZones[0].name",
      "endpoints[0].hints.forNodes[0].name",
      "endpoints[1].hints",
      "endpoints[2].hints.forZones",
    ])
      expect(logger.lines.some((l) => l.includes(`field="${field}"`))).toBe(true);
  });
});
