import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { ServiceObject } from "../../src/k8s/objects.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { ServiceMap } from "../../src/proxy/service-map.ts";
import { ENTRIES_READ_AT_CHECKOUT, ServiceChangeTracker } from "../../src/proxy/service-tracker.ts";
import { runSteps } from "../../src/util/time-slice.ts";
import { service } from "./builders.ts";

const web = service("web", { clusterIP: "198.51.100.10" });
const web8080 = service("web", { clusterIP: "198.51.100.10", ports: [{ name: "http", port: 8080 }] });
const dns = service("dns", {
  clusterIP: "198.51.100.53",
  clusterIPs: ["198.51.100.53", "2001:db8::53"],
  ports: [
    { name: "dns", port: 53, protocol: "UDP" },
    { name: "dns-tcp", port: 53, protocol: "TCP" },
  ],
});

type Call = [ServiceObject | undefined, ServiceObject | undefined];

function applied(setup: Call[]): { tracker: ServiceChangeTracker; map: ServiceMap } {
  const tracker = new ServiceChangeTracker();
  const map = new ServiceMap();
  for (const [prev, cur] of setup) tracker.serviceChanged(prev, cur);
  map.update(tracker);
  return { tracker, map };
}

describe("ServiceChangeTracker coalescing", () => {
  const cases: [string, Call[], Call[], string[], boolean[]][] = [
    [
      "add then delete is no change",
      [],
      [
        [undefined, web],
        [web, undefined],
      ],
      [],
      [true, true],
    ],
    [
      "update and back is no change",
      [[undefined, web]],
      [
        [web, web8080],
        [web8080, web],
      ],
      [],
      [true, true],
    ],
    ["resync with the same object is no change", [[undefined, web]], [[web, web]], [], [false]],
    ["a real update is pending", [[undefined, web]], [[web, web8080]], ["ns/web"], [true]],
    [
      "repeating the same update changes nothing more",
      [[undefined, web]],
      [
        [web, web8080],
        [web8080, web8080],
      ],
      ["ns/web"],
      [true, false],
    ],
    [
      "two Services pending independently",
      [],
      [
        [undefined, web],
        [undefined, dns],
      ],
      ["ns/dns", "ns/web"],
      [true, true],
    ],
  ];

  test.each(cases)("%s", (_name, setup, calls, pending, returns) => {
    const { tracker } = applied(setup);
    expect(calls.map(([p, c]) => tracker.serviceChanged(p, c))).toEqual(returns);
    expect([...tracker.pendingChanges()].sort()).toEqual(pending);
  });

  test("several updates keep the first previous: the map ends at the last current", () => {
    const web9090 = service("web", { clusterIP: "198.51.100.10", ports: [{ name: "http", port: 9090 }] });
    const { tracker, map } = applied([[undefined, web]]);
    tracker.serviceChanged(web, web8080);
    tracker.serviceChanged(web8080, web9090);
    // Going back to the first previous (not to the intermediate state) cancels the change.
    expect(tracker.serviceChanged(web9090, web8080)).toBe(true);
    expect(tracker.pendingChanges().has("ns/web")).toBe(true);
    const result = map.update(tracker);
    expect(result.updatedServices).toEqual(new Set(["ns/web"]));
    expect(map.get("ns/web:http")?.port).toBe(8080);
    tracker.serviceChanged(web8080, web);
    tracker.serviceChanged(web, web8080);
    expect(tracker.pendingChanges().size).toBe(0);
  });

  test("a change to a Service that is not proxied is no change", () => {
    const headless = service("db", { clusterIP: "None" });
    const tracker = new ServiceChangeTracker();
    expect(tracker.serviceChanged(undefined, headless)).toBe(false);
    expect(tracker.pendingChanges().size).toBe(0);
  });
});

describe("ServiceMap.update", () => {
  test("adds, updates and deletes only the Services that changed", () => {
    const { tracker, map } = applied([
      [undefined, web],
      [undefined, dns],
    ]);
    expect([...map.keys()].sort()).toEqual(["ns/dns:dns", "ns/dns:dns-tcp", "ns/web:http"]);
    const before = map.get("ns/dns:dns");
    tracker.serviceChanged(web, web8080);
    const result = map.update(tracker);
    expect(result.updatedServices).toEqual(new Set(["ns/web"]));
    expect(map.get("ns/web:http")?.port).toBe(8080);
    expect(map.get("ns/dns:dns")).toBe(before!);
    expect(map.update(tracker).updatedServices.size).toBe(0);
  });

  test.each([
    [
      "deleting a UDP Service reports its cluster IPs of both families",
      [dns, undefined],
      ["198.51.100.53", "2001:db8::53"],
    ],
    [
      "removing only the UDP port reports it",
      [dns, { ...dns, spec: { ...dns.spec, ports: [{ name: "dns-tcp", port: 53, protocol: "TCP" }] } }],
      ["198.51.100.53", "2001:db8::53"],
    ],
    [
      "changing a UDP port in place reports nothing",
      [dns, { ...dns, spec: { ...dns.spec, ports: [{ name: "dns", port: 5353, protocol: "UDP" }] } }],
      [],
    ],
    ["deleting a TCP Service reports nothing", [web, undefined], []],
  ] as [string, Call, string[]][])("%s", (_name, [prev, cur], deleted) => {
    const { tracker, map } = applied([
      [undefined, dns],
      [undefined, web],
    ]);
    tracker.serviceChanged(prev, cur);
    expect([...map.update(tracker).deletedUDPClusterIPs].sort()).toEqual(deleted);
  });

  test("healthCheckNodePorts follows LoadBalancers with ETP Local", () => {
    const lb = service("lb", {
      type: "LoadBalancer",
      clusterIP: "198.51.100.20",
      externalTrafficPolicy: "Local",
      healthCheckNodePort: 32001,
      ports: [
        { name: "http", port: 80, nodePort: 30080 },
        { name: "https", port: 443, nodePort: 30443 },
      ],
    });
    const { tracker, map } = applied([
      [undefined, lb],
      [undefined, web],
    ]);
    expect(map.healthCheckNodePorts()).toEqual(new Map([["ns/lb", 32001]]));
    tracker.serviceChanged(lb, { ...lb, spec: { ...lb.spec, externalTrafficPolicy: "Cluster" } });
    map.update(tracker);
    expect(map.healthCheckNodePorts().size).toBe(0);
  });

  test("portsOf lists one Service's ports", () => {
    const { map } = applied([[undefined, dns]]);
    expect(map.portsOf("ns/dns").map((p) => p.id)).toEqual(["ns/dns:dns", "ns/dns:dns-tcp"]);
    expect(map.portsOf("ns/none")).toEqual([]);
  });
});

/** A Service that fails the test when any of its fields is read. */
function unreadable(): ServiceObject {
  return new Proxy({} as ServiceObject, {
    get: (_t, field) => {
      throw new Error(`read ${String(field)}`);
    },
    has: (_t, field) => {
      throw new Error(`probed ${String(field)}`);
    },
  });
}

describe("what the tracker reads", () => {
  test("an update reads the current object only; a resync (the same object again) reads nothing", () => {
    const tracker = new ServiceChangeTracker();
    const map = new ServiceMap();
    tracker.serviceChanged(undefined, web);
    map.update(tracker);
    expect(tracker.serviceChanged(unreadable(), web8080)).toBe(true);
    map.update(tracker);
    expect(map.get("ns/web:http")?.port).toBe(8080);
    const resynced = unreadable();
    expect(tracker.serviceChanged(resynced, resynced)).toBe(false);
    expect(tracker.pendingChanges().size).toBe(0);
  });
});

describe("ServiceChangeTracker against a model", () => {
  // Each Service is absent or one of these variants (distinct ports, so distinct fingerprints);
  // "headless" has no ports the proxy serves, so it counts as absent.
  const NAMES = ["a", "b", "c"] as const;
  const variants = (name: string): (ServiceObject | undefined)[] => [
    undefined,
    service(name, { clusterIP: "198.51.100.10" }),
    service(name, { clusterIP: "198.51.100.10", ports: [{ name: "http", port: 8080 }] }),
    service(name, { clusterIP: "198.51.100.11", ports: [{ name: "dns", port: 53, protocol: "UDP" }] }),
    service(name, { clusterIP: "None" }),
  ];
  const served = (v: number) => (v === 0 || v === 4 ? 0 : v);
  type Op = { kind: "set"; name: number; variant: number } | { kind: "sync" } | { kind: "resync" };
  const op: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({ kind: fc.constant("set" as const), name: fc.nat(2), variant: fc.nat(4) }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: "sync" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "resync" as const }) },
  );

  test("pending Services, return values and the map follow the informer's last objects", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const tracker = new ServiceChangeTracker();
        const map = new ServiceMap();
        // What the informer holds, and what the map took at the last sync, per name.
        const informer = new Map<string, ServiceObject>();
        const latest = [0, 0, 0];
        const taken = [0, 0, 0];
        const pendingOf = (i: number) => (served(latest[i]!) !== taken[i] ? served(latest[i]!) : undefined);
        for (const o of ops) {
          if (o.kind === "sync") {
            map.update(tracker);
            for (let i = 0; i < 3; i++) taken[i] = served(latest[i]!);
          } else if (o.kind === "resync") {
            for (const obj of informer.values()) expect(tracker.serviceChanged(obj, obj)).toBe(false);
          } else {
            const name = NAMES[o.name]!;
            const before = pendingOf(o.name);
            // A new object each time, as a watch event brings (equal content for the same variant).
            const next = variants(name)[o.variant];
            const prev = informer.get(name);
            if (next) informer.set(name, next);
            else informer.delete(name);
            latest[o.name] = o.variant;
            expect(tracker.serviceChanged(prev, next)).toBe(before !== pendingOf(o.name));
          }
          const pending = NAMES.filter((_, i) => pendingOf(i) !== undefined).map((n) => `ns/${n}`);
          expect([...tracker.pendingChanges()].sort()).toEqual(pending);
        }
        map.update(tracker);
        for (let i = 0; i < 3; i++) {
          const ports = map.portsOf(`ns/${NAMES[i]}`).map((p) => p.port);
          expect(ports).toEqual([[], [80], [8080], [53]][served(latest[i]!)]!);
        }
      }),
      { seed: 2323, numRuns: 300 },
    );
  });
});

describe("Services with long lists, read at checkout", () => {
  /** Distinct externalIPs, enough to put a Service over ENTRIES_READ_AT_CHECKOUT (each name its own). */
  const LONG = ENTRIES_READ_AT_CHECKOUT + 1;
  const many = (name: string) =>
    Array.from({ length: LONG }, (_, i) => `10.${name.charCodeAt(0) & 255}.${i >> 8}.${i & 255}`);
  const big = (name: string, port: number) =>
    service(name, { clusterIP: "198.51.100.10", externalIPs: many(name), ports: [{ name: "http", port }] });

  test("the event only records it; checkout reads it, and an update that changed no port is no change", () => {
    const tracker = new ServiceChangeTracker();
    const map = new ServiceMap();
    expect(tracker.serviceChanged(undefined, big("web", 80))).toBe(true);
    expect(map.update(tracker).updatedServices).toEqual(new Set(["ns/web"]));
    expect(map.get("ns/web:http")?.externalIPs.length).toBe(LONG);
    // A new object with the same ports (say, an annotation changed): a sync, which finds nothing.
    expect(tracker.serviceChanged(big("web", 80), big("web", 80))).toBe(true);
    expect(map.update(tracker).updatedServices.size).toBe(0);
  });

  test("one that cannot be read at checkout is logged and the map keeps what it held", () => {
    const log = memoryLogger();
    const tracker = new ServiceChangeTracker({ logger: log });
    const map = new ServiceMap();
    tracker.serviceChanged(undefined, big("web", 80));
    map.update(tracker);
    // A list no parsed JSON can be: its entries throw when read (a fault, not bad input).
    const faulty = new Proxy(many("web"), {
      get(target, key, receiver) {
        if (typeof key === "string" && /^[0-9]+$/.test(key)) throw new Error("unreadable entry");
        return Reflect.get(target, key, receiver);
      },
    });
    const broken = service("web", {
      clusterIP: "198.51.100.10",
      externalIPs: faulty,
      ports: [{ name: "http", port: 81 }],
    });
    expect(tracker.serviceChanged(big("web", 80), broken)).toBe(true);
    expect(map.update(tracker).updatedServices.size).toBe(0);
    expect(map.get("ns/web:http")?.port).toBe(80);
    expect(log.lines.join("\n")).toContain("Unexpected error reading a Service at checkout");
    // The next good object is applied as usual.
    tracker.serviceChanged(broken, big("web", 8080));
    map.update(tracker);
    expect(map.get("ns/web:http")?.port).toBe(8080);
  });

  // Each Service is absent, small (port 80 or 8080) or long (port 80 or 8080). A sync may pause
  // while it reads, and events come meanwhile, as the informers deliver them during a paced sync.
  const NAMES = ["a", "b"] as const;
  const variants = (name: string): (ServiceObject | undefined)[] => [
    undefined,
    service(name, { clusterIP: "198.51.100.10" }),
    service(name, { clusterIP: "198.51.100.10", ports: [{ name: "http", port: 8080 }] }),
    big(name, 80),
    big(name, 8080),
  ];
  const expected = (v: number) => [[], ["80:0"], ["8080:0"], [`80:${LONG}`], [`8080:${LONG}`]][v]!;
  type Op =
    | { kind: "set"; name: number; variant: number }
    | { kind: "step"; steps: number }
    | { kind: "resync" };
  const op: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({ kind: fc.constant("set" as const), name: fc.nat(1), variant: fc.nat(4) }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("step" as const), steps: fc.nat(80) }) },
    { weight: 1, arbitrary: fc.constant({ kind: "resync" as const }) },
  );

  test("no event is lost, whenever it comes during a sync's pauses", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const tracker = new ServiceChangeTracker();
        const map = new ServiceMap();
        const informer = new Map<string, ServiceObject>();
        const latest = [0, 0];
        let sync: ReturnType<ServiceMap["updating"]> | undefined;
        for (const o of ops) {
          if (o.kind === "step") {
            // A sync starts (or goes on) and runs `steps` steps, then pauses or ends.
            sync ??= map.updating(tracker);
            for (let i = 0; i <= o.steps; i++) {
              if (sync.next().done) {
                sync = undefined;
                break;
              }
            }
          } else if (o.kind === "resync") {
            for (const obj of informer.values()) expect(tracker.serviceChanged(obj, obj)).toBe(false);
          } else {
            const name = NAMES[o.name]!;
            const next = variants(name)[o.variant];
            const prev = informer.get(name);
            if (next) informer.set(name, next);
            else informer.delete(name);
            latest[o.name] = o.variant;
            tracker.serviceChanged(prev, next);
          }
        }
        if (sync) runSteps(sync);
        map.update(tracker);
        for (let i = 0; i < 2; i++) {
          const ports = map.portsOf(`ns/${NAMES[i]}`).map((p) => `${p.port}:${p.externalIPs.length}`);
          expect(ports).toEqual(expected(latest[i]!));
        }
        expect(tracker.pendingChanges().size).toBe(0);
      }),
      { seed: 2341, numRuns: 300 },
    );
  });
});
