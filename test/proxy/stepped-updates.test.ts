// The sync folds changes into the service and endpoints maps in steps, pausing between them so
// the servers answer during a Service of 100,000 ports. Checked here: driven one step at a time,
// the maps end exactly where update() at once leaves them, with the same results; between any
// two steps every port a Service lists is held; and a big Service is many steps, not one.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { EndpointSliceObject, ServiceObject } from "../../src/k8s/objects.ts";
import { EndpointsMap } from "../../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../../src/proxy/endpoints-tracker.ts";
import { ServiceMap } from "../../src/proxy/service-map.ts";
import { ENTRIES_READ_AT_CHECKOUT, ServiceChangeTracker } from "../../src/proxy/service-tracker.ts";
import { ITEMS_PER_STEP, type Steps } from "../../src/util/time-slice.ts";
import { ep, service, slice } from "./builders.ts";

const NAMES = ["a", "b", "c"];
const EXTERNAL = ["203.0.113.1", "203.0.113.2", "198.51.100.71"];

interface Change {
  readonly name: string;
  readonly remove: boolean;
  readonly ports: number;
  readonly udp: boolean;
  readonly external: string[];
  readonly endpoints: number;
}

const change: fc.Arbitrary<Change> = fc.record({
  name: fc.constantFrom(...NAMES),
  remove: fc.boolean(),
  // Across ITEMS_PER_STEP, so that one Service is several steps.
  ports: fc.integer({ min: 0, max: ITEMS_PER_STEP * 3 }),
  udp: fc.boolean(),
  external: fc.subarray(EXTERNAL),
  endpoints: fc.integer({ min: 0, max: 4 }),
});

function serviceOf(c: Change, index: number): ServiceObject {
  const ports = Array.from({ length: c.ports }, (_, i) => ({
    name: `p${i}`,
    port: 1000 + i,
    protocol: c.udp ? "UDP" : "TCP",
  }));
  return service(c.name, { clusterIP: `198.51.100.${70 + index}`, externalIPs: c.external, ports });
}

function sliceOf(c: Change): EndpointSliceObject {
  const endpoints = Array.from({ length: c.endpoints }, (_, i) => ep(`192.0.2.${10 + i}`, "node-a"));
  const ports = Array.from({ length: c.ports }, (_, i) => ({
    name: `p${i}`,
    port: 8000 + i,
    protocol: c.udp ? "UDP" : "TCP",
  }));
  return slice(`${c.name}-1`, endpoints, { service: c.name, ports });
}

/** The maps and their trackers, fed the same changes. */
function world() {
  const services = new ServiceChangeTracker();
  const slices = new EndpointsChangeTracker({ nodeName: "node-a" });
  const live = new Map<string, ServiceObject>();
  return {
    services,
    slices,
    serviceMap: new ServiceMap(),
    endpointsMap: new EndpointsMap(),
    feed(c: Change) {
      const before = live.get(c.name);
      const after = c.remove ? undefined : serviceOf(c, NAMES.indexOf(c.name));
      if (after) live.set(c.name, after);
      else live.delete(c.name);
      services.serviceChanged(before, after);
      slices.endpointSliceChanged(sliceOf(c), c.remove);
    },
  };
}

/** Runs `steps` one at a time, calling `between` after each. */
function stepThrough<T>(steps: Steps<T>, between: () => void): { value: T; count: number } {
  for (let count = 0; ; count++) {
    const next = steps.next();
    if (next.done) return { value: next.value, count };
    between();
  }
}

const serviceView = (m: ServiceMap) =>
  [...m.entries()].map(([id, p]) => `${id} ${p.protocol} ${p.externalIPs.join(",")}`);
const endpointsView = (m: EndpointsMap) =>
  [...m.entries()].map(([id, eps]) => `${id} ${eps.map((e) => e.endpoint).join(",")}`);

describe("stepped map updates", () => {
  test("one step at a time ends where update() at once does, every listed port held between steps", () => {
    fc.assert(
      fc.property(fc.array(fc.array(change, { maxLength: 4 }), { minLength: 1, maxLength: 4 }), (rounds) => {
        const atOnce = world();
        const stepped = world();
        for (const round of rounds) {
          for (const c of round) {
            atOnce.feed(c);
            stepped.feed(c);
          }
          const wantServices = atOnce.serviceMap.update(atOnce.services);
          const wantEndpoints = atOnce.endpointsMap.update(atOnce.slices, atOnce.serviceMap);
          const held = () => {
            for (const name of NAMES)
              for (const p of stepped.serviceMap.portsOf(`ns/${name}`)) expect(p).toBeDefined();
          };
          const gotServices = stepThrough(stepped.serviceMap.updating(stepped.services), held).value;
          const gotEndpoints = stepThrough(
            stepped.endpointsMap.updating(stepped.slices, stepped.serviceMap),
            () => {},
          ).value;
          expect(gotServices).toEqual(wantServices);
          expect(gotEndpoints.updatedServices).toEqual(wantEndpoints.updatedServices);
          // Same order too: proxiers walk the maps in it.
          expect(serviceView(stepped.serviceMap)).toEqual(serviceView(atOnce.serviceMap));
          expect(endpointsView(stepped.endpointsMap)).toEqual(endpointsView(atOnce.endpointsMap));
        }
      }),
      { seed: 23, numRuns: 200 },
    );
  });

  test("a Service of many ports is many steps (a pause can come within it)", () => {
    const ports = ITEMS_PER_STEP * 40;
    const w = world();
    w.feed({ name: "a", remove: false, ports, udp: false, external: ["203.0.113.1"], endpoints: 2 });
    const services = stepThrough(w.serviceMap.updating(w.services), () => {});
    const endpoints = stepThrough(w.endpointsMap.updating(w.slices, w.serviceMap), () => {});
    expect(w.serviceMap.size).toBe(ports);
    expect(services.count).toBeGreaterThanOrEqual(40);
    expect(endpoints.count).toBeGreaterThanOrEqual(40);
  });

  test("a Service of long lists is only recorded when its event comes, and read in steps at checkout", () => {
    // Its lists count their element reads: none when the event comes, a bounded few per step after.
    let reads = 0;
    const counted = <T>(items: T[]): T[] =>
      new Proxy(items, {
        get(target, key, receiver) {
          if (typeof key === "string" && /^[0-9]+$/.test(key)) reads++;
          return Reflect.get(target, key, receiver);
        },
      });
    const n = ENTRIES_READ_AT_CHECKOUT * 4;
    const ports = Array.from({ length: n }, (_, i) => ({ name: `p${i}`, port: 1 + i, protocol: "TCP" }));
    const ranges = Array.from({ length: n }, (_, i) => `10.2.${i >> 8}.${i & 255}/32`);
    const svc = service("big", {
      type: "LoadBalancer",
      clusterIP: "198.51.100.80",
      loadBalancerSourceRanges: counted(ranges),
      ports: counted(ports),
    });
    const w = world();
    expect(w.services.serviceChanged(undefined, svc)).toBe(true);
    expect(reads).toBe(0);
    let most = 0;
    let before = 0;
    const { count } = stepThrough(w.serviceMap.updating(w.services), () => {
      most = Math.max(most, reads - before);
      before = reads;
    });
    expect(w.serviceMap.size).toBe(n);
    expect(reads).toBeGreaterThanOrEqual(2 * n);
    expect(count).toBeGreaterThanOrEqual((2 * n) / ITEMS_PER_STEP);
    expect(most).toBeLessThanOrEqual(2 * ITEMS_PER_STEP);
  });
});
