import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { EndpointSliceObject } from "../../src/k8s/objects.ts";
import { compareEndpoints } from "../../src/proxy/endpoint-slice-cache.ts";
import { EndpointsMap } from "../../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../../src/proxy/endpoints-tracker.ts";
import type { EndpointInfo } from "../../src/proxy/types.ts";
import { endpointInfo } from "../support/endpoint-info.ts";
import { ep, slice } from "./builders.ts";

type Change = [EndpointSliceObject, boolean];

function run(setup: Change[]) {
  const tracker = new EndpointsChangeTracker({ nodeName: "node-a" });
  const map = new EndpointsMap();
  for (const [s, removed] of setup) tracker.endpointSliceChanged(s, removed);
  map.update(tracker);
  return { tracker, map };
}

const endpointsOf = (map: EndpointsMap, id: string) => (map.get(id) ?? []).map((e) => e.endpoint);

describe("EndpointSliceCache merging", () => {
  const cases: [string, Change[], Record<string, string[]>][] = [
    [
      "two slices of one Service merge, sorted by ip:port",
      [
        [slice("web-b", [ep("192.0.2.2")]), false],
        [slice("web-a", [ep("192.0.2.10"), ep("192.0.2.1")]), false],
      ],
      { "ns/web:http": ["192.0.2.10:8080", "192.0.2.1:8080", "192.0.2.2:8080"] },
    ],
    [
      "an endpoint in two slices appears once",
      [
        [slice("web-a", [ep("192.0.2.1")]), false],
        [slice("web-b", [ep("192.0.2.1"), ep("192.0.2.2")]), false],
      ],
      { "ns/web:http": ["192.0.2.1:8080", "192.0.2.2:8080"] },
    ],
    [
      "IPv4 and IPv6 slices of a dual-stack Service are both kept",
      [
        [slice("web-v4", [ep("192.0.2.1")]), false],
        [slice("web-v6", [ep("2001:db8::1")], { addressType: "IPv6" }), false],
      ],
      { "ns/web:http": ["192.0.2.1:8080", "[2001:db8::1]:8080"] },
    ],
    [
      "FQDN slices are ignored",
      [[slice("web-fqdn", [{ addresses: ["db.example.com"] }], { addressType: "FQDN" }), false]],
      {},
    ],
    [
      "slices without the service-name label are ignored",
      [[slice("web-x", [ep("192.0.2.1")], { labels: {} }), false]],
      {},
    ],
    [
      "ports with a nil name or nil/zero port are skipped",
      [
        [
          slice("web-a", [ep("192.0.2.1")], {
            ports: [{ port: 80 }, { name: "zero", port: 0 }, { name: "nil" }, { name: "ok", port: 81 }],
          }),
          false,
        ],
      ],
      { "ns/web:ok": ["192.0.2.1:81"] },
    ],
    [
      "a slice with ports null yields nothing",
      [[slice("web-a", [ep("192.0.2.1")], { ports: null }), false]],
      {},
    ],
    [
      "an unnamed port keys as the bare Service",
      [[slice("web-a", [ep("192.0.2.1")], { ports: [{ name: "", port: 80, protocol: "TCP" }] }), false]],
      { "ns/web": ["192.0.2.1:80"] },
    ],
    [
      "a slice removed in the same window is gone",
      [
        [slice("web-a", [ep("192.0.2.1")]), false],
        [slice("web-b", [ep("192.0.2.2")]), false],
        [slice("web-b", [ep("192.0.2.2")]), true],
      ],
      { "ns/web:http": ["192.0.2.1:8080"] },
    ],
  ];

  test.each(cases)("%s", (_name, setup, expected) => {
    const { map } = run(setup);
    const got = Object.fromEntries([...map.keys()].map((id) => [id, endpointsOf(map, id)]));
    expect(got).toEqual(expected);
  });

  test("of duplicates, the first slice by name wins", () => {
    const { map } = run([
      [slice("web-b", [ep("192.0.2.1", "node-b", { ready: false, serving: false })]), false],
      [slice("web-a", [ep("192.0.2.1", "node-b", { ready: true })]), false],
    ]);
    expect(map.get("ns/web:http")![0]!.ready).toBe(true);
  });

  test("of duplicates, the more usable copy wins: a reused pod IP's ghost never hides the live pod (1.36)", () => {
    const ghost = { ready: false, serving: false, terminating: true };
    const draining = { ready: false, serving: true, terminating: true };
    for (const [first, second] of [
      [ghost, undefined],
      [undefined, ghost],
    ] as const) {
      const { map } = run([
        [slice("web-a", [ep("192.0.2.1", "node-a", first)]), false],
        [slice("web-b", [ep("192.0.2.1", "node-c", second)]), false],
      ]);
      expect(map.get("ns/web:http")![0]!).toMatchObject({
        ready: true,
        nodeName: first ? "node-c" : "node-a",
      });
    }
    const { map } = run([
      [slice("web-a", [ep("192.0.2.1", "node-a", ghost), ep("192.0.2.1", "node-c", draining)]), false],
    ]);
    expect(map.get("ns/web:http")![0]!).toMatchObject({ serving: true, nodeName: "node-c" });
  });

  test("of equally usable duplicates, the first slice by name wins, local or not", () => {
    const { map } = run([
      [slice("web-b", [ep("192.0.2.1", "node-a")]), false],
      [slice("web-a", [ep("192.0.2.1", "node-b")]), false],
    ]);
    expect(map.get("ns/web:http")![0]!).toMatchObject({ nodeName: "node-b", isLocal: false });
  });

  test("random slices with repeated IP:ports: one endpoint each, the first most usable by slice name, sorted by ip:port", () => {
    const condition = fc.constantFrom(
      { ready: true, serving: true, terminating: false },
      { ready: false, serving: true, terminating: true },
      { ready: false, serving: false, terminating: true },
    );
    const endpoint = fc.record({
      ip: fc.constantFrom("192.0.2.1", "192.0.2.10", "192.0.2.2", "198.51.100.1"),
      node: fc.constantFrom("node-a", "node-b", "node-c"),
      condition,
    });
    const port = fc.constantFrom(8080, 80, 9);
    const sliceArb = fc.record({
      name: fc.constantFrom("web-a", "web-b", "web-c", "web-d"),
      port,
      endpoints: fc.array(endpoint, { maxLength: 6 }),
    });
    fc.assert(
      fc.property(fc.uniqueArray(sliceArb, { selector: (x) => x.name, maxLength: 4 }), (slices) => {
        const { map } = run(
          slices.map((x) => [
            slice(
              x.name,
              x.endpoints.map((e) => ep(e.ip, e.node, e.condition)),
              { ports: [{ name: "http", port: x.port, protocol: "TCP" }] },
            ),
            false,
          ]),
        );
        // The model: a table by "ip:port", slices in name order, a later copy wins only when
        // more usable; then sorted by that text.
        const usable = (c: { ready: boolean; serving: boolean }) => (c.ready ? 2 : c.serving ? 1 : 0);
        const best = new Map<string, { node: string; condition: { ready: boolean; serving: boolean } }>();
        for (const x of [...slices].sort((a, b) => (a.name < b.name ? -1 : 1)))
          for (const e of x.endpoints) {
            const key = `${e.ip}:${x.port}`;
            const seen = best.get(key);
            if (!seen || usable(e.condition) > usable(seen.condition)) best.set(key, e);
          }
        const want = [...best.keys()].sort().map((k) => `${k} ${best.get(k)!.node}`);
        const got = (map.get("ns/web:http") ?? []).map((e) => `${e.endpoint} ${e.nodeName}`);
        expect(got).toEqual(want);
      }),
      { numRuns: 300 },
    );
  });

  test("an endpoint moving between slices stays", () => {
    const { tracker, map } = run([[slice("web-a", [ep("192.0.2.1"), ep("192.0.2.2")]), false]]);
    tracker.endpointSliceChanged(slice("web-b", [ep("192.0.2.2")]), false);
    tracker.endpointSliceChanged(slice("web-a", [ep("192.0.2.1")]), false);
    const result = map.update(tracker);
    expect(endpointsOf(map, "ns/web:http")).toEqual(["192.0.2.1:8080", "192.0.2.2:8080"]);
    expect(result.updatedServices.size).toBe(0);
  });
});

describe("EndpointsChangeTracker coalescing", () => {
  const a1 = slice("web-a", [ep("192.0.2.1")]);
  const a2 = slice("web-a", [ep("192.0.2.1"), ep("192.0.2.2")]);
  const cases: [string, Change[], Change[], boolean[], string[]][] = [
    [
      "add then delete is no change",
      [],
      [
        [a1, false],
        [a1, true],
      ],
      [true, true],
      [],
    ],
    [
      "update and back is no change",
      [[a1, false]],
      [
        [a2, false],
        [a1, false],
      ],
      [true, true],
      [],
    ],
    ["resync of the same slice is no change", [[a1, false]], [[a1, false]], [false], []],
    ["deleting an unknown slice is no change", [], [[a1, true]], [false], []],
    ["an update is pending", [[a1, false]], [[a2, false]], [true], ["ns/web"]],
    ["a delete is pending", [[a1, false]], [[a1, true]], [true], ["ns/web"]],
  ];

  test.each(cases)("%s", (_name, setup, calls, returns, pending) => {
    const { tracker } = run(setup);
    expect(calls.map(([s, removed]) => tracker.endpointSliceChanged(s, removed))).toEqual(returns);
    expect([...tracker.pendingChanges()]).toEqual(pending);
  });

  test("after a delete is applied the Service's endpoints are gone", () => {
    const { tracker, map } = run([[a2, false]]);
    tracker.endpointSliceChanged(a2, true);
    expect(map.update(tracker).updatedServices).toEqual(new Set(["ns/web"]));
    expect(map.size).toBe(0);
    expect(tracker.pendingChanges().size).toBe(0);
  });
});

describe("endpoint order", () => {
  // The order of the "ip:port" texts, which the rules list endpoints in, kept without the texts.
  const addresses = [
    "10.0.0.1",
    "10.0.0.10",
    "10.0.0.100",
    "10.0.0.2",
    "10.0.1.1",
    "9.0.0.1",
    "192.0.2.1",
    "2001:db8::1",
    "2001:db8::10",
    "2001:db8::1:0",
    "2001:db8:1::",
    "::1",
    "fe80::1",
  ];
  const ports = [80, 8, 8080, 9, 443, 10000, 65535];

  test("compareEndpoints sorts as the joined texts do", () => {
    const all: EndpointInfo[] = [];
    for (const ip of addresses) for (const port of ports) all.push(endpointInfo(ip, port));
    const byText = [...all].sort((a, b) => (a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0));
    const byFields = [...all].sort(compareEndpoints);
    expect(byFields.map((e) => e.endpoint)).toEqual(byText.map((e) => e.endpoint));
  });

  test("the model's endpoints come sorted by their text", () => {
    const { map } = run([
      [
        slice(
          "web-a",
          addresses.filter((a) => !a.includes(":")).map((a) => ep(a)),
        ),
        false,
      ],
    ]);
    const got = endpointsOf(map, "ns/web:http");
    expect(got).toEqual([...got].sort());
    expect(got).toHaveLength(7);
  });

  test("one port name on several port numbers (a targetPort rollout): every pair, in text order", () => {
    const http = (port: number) => ({ ports: [{ name: "http", port, protocol: "TCP" as const }] });
    const { map } = run([
      [slice("web-a", [ep("10.0.0.1"), ep("10.0.0.10")], http(8080)), false],
      [slice("web-b", [ep("10.0.0.1"), ep("10.0.0.2")], http(80)), false],
      [slice("web-c", [ep("10.0.0.1")], http(8080)), false],
    ]);
    expect(endpointsOf(map, "ns/web:http")).toEqual([
      "10.0.0.10:8080",
      "10.0.0.1:80",
      "10.0.0.1:8080",
      "10.0.0.2:80",
    ]);
  });
});
