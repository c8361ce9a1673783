import { describe, expect, test } from "bun:test";
import type { EndpointSliceObject } from "../../src/k8s/objects.ts";
import { EndpointsMap } from "../../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../../src/proxy/endpoints-tracker.ts";
import { ep, slice } from "./builders.ts";

const START = new Date("2024-05-01T10:00:00Z");

function setup(initial: EndpointSliceObject[]) {
  const tracker = new EndpointsChangeTracker({ nodeName: "node-a", now: () => START });
  const map = new EndpointsMap();
  for (const s of initial) tracker.endpointSliceChanged(s, false);
  const first = map.update(tracker);
  return { tracker, map, first };
}

describe("trigger times", () => {
  const at = (t: string) => ({ annotations: { "endpoints.kubernetes.io/last-change-trigger-time": t } });

  test("are collected per Service, cleared by update, and skipped before the tracker started", () => {
    const { tracker, map } = setup([]);
    tracker.endpointSliceChanged(slice("web-a", [ep("192.0.2.1")], at("2024-05-01T10:00:05Z")), false);
    tracker.endpointSliceChanged(slice("web-b", [ep("192.0.2.2")], at("2024-05-01T10:00:07.250Z")), false);
    tracker.endpointSliceChanged(
      slice("old-a", [ep("192.0.2.3")], { service: "old", ...at("2024-05-01T09:00:00Z") }),
      false,
    );
    const result = map.update(tracker);
    expect(result.lastChangeTriggerTimes).toEqual(
      new Map([["ns/web", [new Date("2024-05-01T10:00:05Z"), new Date("2024-05-01T10:00:07.250Z")]]]),
    );
    expect(map.update(tracker).lastChangeTriggerTimes.size).toBe(0);
  });

  test("a slice deletion drops the Service's pending times", () => {
    const { tracker, map } = setup([slice("web-b", [ep("192.0.2.2")])]);
    tracker.endpointSliceChanged(slice("web-a", [ep("192.0.2.1")], at("2024-05-01T10:00:05Z")), false);
    tracker.endpointSliceChanged(slice("web-b", [ep("192.0.2.2")]), true);
    expect(map.update(tracker).lastChangeTriggerTimes.size).toBe(0);
  });

  test("an unchanged resync adds no time", () => {
    const s = slice("web-a", [ep("192.0.2.1")], at("2024-05-01T10:00:05Z"));
    const { tracker, map } = setup([s]);
    tracker.endpointSliceChanged(s, false);
    expect(map.update(tracker).lastChangeTriggerTimes.size).toBe(0);
  });
});

describe("local ready endpoints", () => {
  test("counts distinct local ready IPs per Service", () => {
    const ports = [
      { name: "http", port: 8080, protocol: "TCP" },
      { name: "metrics", port: 9090, protocol: "TCP" },
    ];
    const { tracker, map } = setup([
      slice("web-a", [ep("192.0.2.1", "node-a"), ep("192.0.2.2", "node-a"), ep("192.0.2.3", "node-b")], {
        ports,
      }),
      slice("web-b", [ep("192.0.2.4", "node-a", { ready: false, serving: true, terminating: true })]),
      slice("api-a", [ep("192.0.2.9", "node-b")], { service: "api" }),
    ]);
    expect(map.localReadyEndpoints()).toEqual(new Map([["ns/web", { IPv4: 2 }]]));
    tracker.endpointSliceChanged(slice("web-a", [ep("192.0.2.3", "node-b")], { ports }), false);
    map.update(tracker);
    expect(map.localReadyEndpoints().size).toBe(0);
  });

  test("a dual-stack pod is counted once per family, never summed", () => {
    const { map } = setup([
      slice("web-v4", [ep("192.0.2.1", "node-a"), ep("192.0.2.2", "node-a")]),
      slice("web-v6", [ep("2001:db8::1", "node-a")], { addressType: "IPv6" }),
    ]);
    expect(map.localReadyEndpoints()).toEqual(new Map([["ns/web", { IPv4: 2, IPv6: 1 }]]));
  });
});

describe("updatedServices", () => {
  test("lists only Services whose endpoints changed", () => {
    const { tracker, map } = setup([
      slice("web-a", [ep("192.0.2.1")]),
      slice("api-a", [ep("192.0.2.9")], { service: "api" }),
    ]);
    const api = map.get("ns/api:http");
    tracker.endpointSliceChanged(slice("web-a", [ep("192.0.2.1"), ep("192.0.2.5")]), false);
    const result = map.update(tracker);
    expect(result.updatedServices).toEqual(new Set(["ns/web"]));
    expect(map.get("ns/api:http")).toBe(api!);
    expect(map.portName("ns/web:http")?.protocol).toBe("TCP");
  });
});
