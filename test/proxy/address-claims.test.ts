// Claims on external addresses, resolved once for every mode: a ClusterIP is never taken by an
// externalIP or LoadBalancer IP, and equal claims go to the oldest Service whatever the names.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { memoryRecorder } from "../../src/k8s/events.ts";
import type { ServiceObject } from "../../src/k8s/objects.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { REASON_ADDRESS_CONFLICT, ServiceMap } from "../../src/proxy/service-map.ts";
import { ServiceChangeTracker } from "../../src/proxy/service-tracker.ts";
import { service } from "./builders.ts";

const DNS_PORTS = [{ name: "dns", port: 53, protocol: "UDP" }];

function svc(
  ns: string,
  name: string,
  spec: NonNullable<ServiceObject["spec"]>,
  created?: string,
): ServiceObject {
  const s = service(name, { ports: DNS_PORTS, ...spec });
  return {
    ...s,
    metadata: { ...s.metadata, namespace: ns, ...(created ? { creationTimestamp: created } : {}) },
  };
}

const kubeDNS = svc("kube-system", "kube-dns", { clusterIP: "198.51.100.10" }, "2020-01-01T00:00:00Z");
const evilA = svc(
  "aaa",
  "evil",
  { clusterIP: "198.51.100.20", externalIPs: ["198.51.100.10"] },
  "2024-01-01T00:00:00Z",
);
const evilZ = svc(
  "zzz",
  "evil",
  { clusterIP: "198.51.100.30", externalIPs: ["198.51.100.10"] },
  "2024-01-01T00:00:00Z",
);

function world() {
  const recorder = memoryRecorder();
  const logger = memoryLogger();
  const tracker = new ServiceChangeTracker({ logger, recorder });
  const map = new ServiceMap({ logger, recorder });
  const apply = (...changes: [ServiceObject | undefined, ServiceObject | undefined][]) => {
    for (const [prev, cur] of changes) tracker.serviceChanged(prev, cur);
    return map.update(tracker);
  };
  return { recorder, map, apply };
}

const externalIPs = (map: ServiceMap, id: string) => map.get(id)?.externalIPs;

describe("address claims", () => {
  test("an externalIP equal to another Service's ClusterIP is never programmed, whatever the names", () => {
    const w = world();
    w.apply([undefined, evilA], [undefined, kubeDNS], [undefined, evilZ]);
    expect(externalIPs(w.map, "aaa/evil:dns")).toEqual([]);
    expect(externalIPs(w.map, "zzz/evil:dns")).toEqual([]);
    expect(w.map.get("kube-system/kube-dns:dns")?.clusterIPs.IPv4).toBe("198.51.100.10");
    const events = w.recorder.events.filter((e) => e.reason === REASON_ADDRESS_CONFLICT);
    expect(events.map((e) => `${e.ref.namespace}/${e.ref.name}`).sort()).toEqual(["aaa/evil", "zzz/evil"]);
    expect(events[0]!.message).toContain("spec.externalIPs");
    expect(events[0]!.message).toContain("198.51.100.10");
    expect(events[0]!.message).toContain("kube-system/kube-dns");
  });

  test("a ClusterIP that appears later takes the address back from the external claimant", () => {
    const w = world();
    w.apply([undefined, evilA]);
    expect(externalIPs(w.map, "aaa/evil:dns")).toEqual(["198.51.100.10"]);
    const r = w.apply([undefined, kubeDNS]);
    expect(externalIPs(w.map, "aaa/evil:dns")).toEqual([]);
    expect([...r.updatedServices].sort()).toEqual(["aaa/evil", "kube-system/kube-dns"]);
  });

  test("equal external claims go to the oldest Service; the next one takes over when it leaves", () => {
    const old = svc(
      "zzz",
      "first",
      { clusterIP: "198.51.100.40", externalIPs: ["203.0.113.7"] },
      "2021-01-01T00:00:00Z",
    );
    const young = svc(
      "aaa",
      "second",
      { clusterIP: "198.51.100.41", externalIPs: ["203.0.113.7"] },
      "2022-01-01T00:00:00Z",
    );
    const w = world();
    w.apply([undefined, young], [undefined, old]);
    expect(externalIPs(w.map, "zzz/first:dns")).toEqual(["203.0.113.7"]);
    expect(externalIPs(w.map, "aaa/second:dns")).toEqual([]);
    const lost = w.recorder.events.find((e) => e.ref.name === "second");
    expect(lost?.message).toContain("zzz/first");
    const r = w.apply([old, undefined]);
    expect(externalIPs(w.map, "aaa/second:dns")).toEqual(["203.0.113.7"]);
    expect(r.updatedServices.has("aaa/second")).toBe(true);
  });

  test("the same IP on different ports or protocols is no conflict", () => {
    const a = svc("a", "web", { clusterIP: "198.51.100.50", externalIPs: ["203.0.113.8"] });
    const b = svc("b", "web", {
      clusterIP: "198.51.100.51",
      externalIPs: ["203.0.113.8"],
      ports: [{ name: "dns", port: 53, protocol: "TCP" }],
    });
    const w = world();
    w.apply([undefined, a], [undefined, b]);
    expect(externalIPs(w.map, "a/web:dns")).toEqual(["203.0.113.8"]);
    expect(externalIPs(w.map, "b/web:dns")).toEqual(["203.0.113.8"]);
    expect(w.recorder.events).toEqual([]);
  });

  test("a LoadBalancer IP equal to a ClusterIP is dropped the same way", () => {
    const lb = svc("lb", "evil", { type: "LoadBalancer", clusterIP: "198.51.100.60" }, undefined);
    const withStatus = { ...lb, status: { loadBalancer: { ingress: [{ ip: "198.51.100.10" }] } } };
    const w = world();
    w.apply([undefined, kubeDNS], [undefined, withStatus]);
    expect(w.map.get("lb/evil:dns")?.loadBalancerVIPs).toEqual([]);
    expect(w.recorder.events[0]?.message).toContain("status.loadBalancer.ingress");
  });

  test("after any sequence of adds, updates and deletes, the outcome is that of the final set", () => {
    const ips = ["203.0.113.1", "203.0.113.2", "198.51.100.70"];
    const op = fc.record({
      ns: fc.constantFrom("a", "b", "c"),
      name: fc.constantFrom("x", "y"),
      remove: fc.boolean(),
      clusterIP: fc.constantFrom("198.51.100.70", "198.51.100.71", "198.51.100.72", "198.51.100.73"),
      external: fc.subarray(ips),
      created: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
      // Claims are per port: Services that share an IP on one port and not on another.
      ports: fc.subarray(
        [
          { name: "dns", port: 53, protocol: "UDP" },
          { name: "http", port: 80, protocol: "TCP" },
        ],
        { minLength: 1 },
      ),
    });
    const view = (m: ServiceMap) =>
      [...m.entries()].map(([id, p]) => `${id}=${p.externalIPs.join(",")}`).sort();
    fc.assert(
      fc.property(fc.array(op, { maxLength: 12 }), (ops) => {
        const stepwise = world();
        const live = new Map<string, ServiceObject>();
        for (const o of ops) {
          const key = `${o.ns}/${o.name}`;
          const before = live.get(key);
          if (o.remove) live.delete(key);
          else {
            const created = o.created === undefined ? undefined : `202${o.created}-01-01T00:00:00Z`;
            live.set(
              key,
              svc(o.ns, o.name, { clusterIP: o.clusterIP, externalIPs: o.external, ports: o.ports }, created),
            );
          }
          stepwise.apply([before, live.get(key)]);
        }
        const atOnce = world();
        atOnce.apply(...[...live.values()].map((o): [undefined, ServiceObject] => [undefined, o]));
        expect(view(stepwise.map)).toEqual(view(atOnce.map));
        // No programmed external IP is anybody's ClusterIP, and no claim is programmed twice.
        const clusterIPs = new Set([...live.values()].map((o) => o.spec!.clusterIP));
        const seen = new Set<string>();
        for (const p of stepwise.map.values()) {
          for (const ip of p.externalIPs) {
            expect(clusterIPs.has(ip)).toBe(false);
            const k = `${ip} ${p.port} ${p.protocol}`;
            expect(seen.has(k)).toBe(false);
            seen.add(k);
          }
        }
      }),
      { seed: 23, numRuns: 400 },
    );
  });
});
