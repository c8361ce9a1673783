import { describe, expect, test } from "bun:test";
import type { EndpointSliceObject } from "../../src/k8s/objects.ts";
import { parseSlice, parseTriggerTime } from "../../src/proxy/endpoint-slice.ts";
import { EndpointsMap } from "../../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../../src/proxy/endpoints-tracker.ts";
import { ProblemList } from "../../src/proxy/problems.ts";
import { plainEndpoint } from "../../src/proxy/types.ts";
import { ep, slice } from "./builders.ts";

function parse(s: EndpointSliceObject) {
  const ref = { kind: "EndpointSlice" as const, name: "s" };
  return parseSlice(s, {
    family: "IPv4",
    problems: new ProblemList(ref),
    serviceRef: { kind: "Service", name: "web" },
  });
}

function sync(...slices: EndpointSliceObject[]): EndpointsMap {
  const tracker = new EndpointsChangeTracker({ nodeName: "node-a" });
  for (const s of slices) tracker.endpointSliceChanged(s, false);
  const map = new EndpointsMap();
  map.update(tracker);
  return map;
}

describe("endpoint conditions", () => {
  type Conditions = Parameters<typeof ep>[2];
  test.each([
    ["all nil", {}, { ready: true, serving: true, terminating: false }],
    ["missing conditions object", undefined, { ready: true, serving: true, terminating: false }],
    [
      "ready false, serving nil counts as serving (upstream kube-proxy)",
      { ready: false },
      { ready: false, serving: true, terminating: false },
    ],
    [
      "ready true, serving nil counts as serving",
      { ready: true },
      { ready: true, serving: true, terminating: false },
    ],
    [
      "terminating and still serving",
      { ready: false, serving: true, terminating: true },
      { ready: false, serving: true, terminating: true },
    ],
    [
      "nulls are nil",
      { ready: null, serving: null, terminating: null },
      { ready: true, serving: true, terminating: false },
    ],
  ] as [string, Conditions, object][])("%s", (_name, conditions, expected) => {
    const raw = { addresses: ["192.0.2.1"], nodeName: "node-b", ...(conditions ? { conditions } : {}) };
    expect(parse(slice("s", [raw])).endpoints[0]).toMatchObject(expected);
  });
});

describe("endpoint model", () => {
  test("fields from a realistic slice", () => {
    const s = slice("web-abc", [
      {
        ...ep("192.0.2.1", "node-a"),
        zone: "zone-a",
        hints: { forZones: [{ name: "zone-a" }, { name: "zone-b" }], forNodes: [{ name: "node-a" }, {}] },
      },
      { ...ep("192.0.2.2", "node-b"), zone: "zone-b" },
    ]);
    const eps = sync(s).get("ns/web:http")!;
    expect(plainEndpoint(eps[0]!)).toEqual({
      endpoint: "192.0.2.1:8080",
      ip: "192.0.2.1",
      port: 8080,
      family: "IPv4",
      nodeName: "node-a",
      zone: "zone-a",
      isLocal: true,
      ready: true,
      serving: true,
      terminating: false,
      zoneHints: new Set(["zone-a", "zone-b"]),
      nodeHints: new Set(["node-a"]),
    });
    expect(eps[1]).toMatchObject({ isLocal: false, zoneHints: new Set(), nodeHints: new Set() });
  });

  test("IPv6 slices give IPv6 endpoints in canonical, bracketed form", () => {
    const s = slice("web-v6", [ep("2001:DB8::0:1")], { addressType: "IPv6" });
    expect(sync(s).get("ns/web:http")![0]).toMatchObject({ endpoint: "[2001:db8::1]:8080", family: "IPv6" });
  });

  test("endpoints without a node are never local, even when our node name is empty", () => {
    const tracker = new EndpointsChangeTracker({ nodeName: "" });
    tracker.endpointSliceChanged(slice("s", [{ addresses: ["192.0.2.1"] }]), false);
    const map = new EndpointsMap();
    map.update(tracker);
    expect(map.get("ns/web:http")![0]!.isLocal).toBe(false);
  });

  test("reordering endpoints or ports is no change", () => {
    const a = slice("s", [ep("192.0.2.1"), ep("192.0.2.2")]);
    const b = {
      ...a,
      endpoints: [...a.endpoints!].reverse(),
      metadata: { ...a.metadata, resourceVersion: "2" },
    };
    expect(parse(a).fingerprint).toBe(parse(b).fingerprint);
    expect(parse(a).fingerprint).not.toBe(parse(slice("s", [ep("192.0.2.1")])).fingerprint);
  });
});

describe("parseTriggerTime", () => {
  test.each([
    ["2024-05-01T10:00:00Z", "2024-05-01T10:00:00.000Z"],
    ["2024-05-01T10:00:00.123456789Z", "2024-05-01T10:00:00.123Z"],
    ["2024-05-01T12:00:00.5+02:00", "2024-05-01T10:00:00.500Z"],
  ])("%p", (text, iso) => {
    expect(parseTriggerTime(text)?.toISOString()).toBe(iso);
  });

  test.each([["yesterday"], ["2024-05-01"], [""], [12]])("%p is not a time", (text) => {
    expect(parseTriggerTime(text)).toBeUndefined();
  });
});
