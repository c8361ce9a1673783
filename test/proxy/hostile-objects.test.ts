// Property: Nodes, ServiceCIDRs and EndpointSlices with anything at any field (wrong types,
// nulls, nested junk, objects without a prototype, BigInts, Dates, Maps) never make a reader or
// tracker throw. The trackers catch what escapes them and log "Unexpected error", so that log
// line is what would show a throw here.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { memoryRecorder } from "../../src/k8s/events.ts";
import { nodeEligibility, nodeInfo, nodeIPs, nodeName, nodePodCIDRs } from "../../src/k8s/node-info.ts";
import { snapshotNodeName } from "../../src/k8s/snapshot-source.ts";
import type { StateDocuments } from "../../src/k8s/state-file.ts";
import { objectKey } from "../../src/k8s/store.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { EndpointsMap } from "../../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../../src/proxy/endpoints-tracker.ts";
import { ServiceCIDRSet } from "../../src/proxy/service-cidrs.ts";
import { SyncController } from "../../src/proxy/sync-controller.ts";

const junk = fc.anything({
  maxDepth: 2,
  maxKeys: 4,
  withBigInt: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withBoxedValues: true,
  withNullPrototype: true,
  withObjectString: true,
  withSparseArray: true,
});

/** A plausible value, junk, or nothing: every field gets all three. */
const either = <T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof(good, junk, fc.constantFrom(undefined, null, ""));
const list = <T>(item: fc.Arbitrary<T>) => either(fc.array(either(item), { maxLength: 4 }));
const record = (fields: Record<string, fc.Arbitrary<unknown>>) =>
  either(fc.record(fields, { requiredKeys: [] }));

const name = fc.constantFrom("node-a", "web", "a/b", "b:c", "Web_1", "x".repeat(300), "kube-system");
const ip = fc.constantFrom("192.0.2.1", "2001:db8::1", "192.0.2.999", " 192.0.2.2 ", "::ffff:192.0.2.3");
const cidr = fc.constantFrom("198.51.100.0/24", "2001:db8::/112", "10.0.0.1/33", "x");
const labels = either(
  fc.dictionary(fc.constantFrom("topology.kubernetes.io/zone", "role", "__proto__"), either(name)),
);

const meta = record({
  name: either(name),
  namespace: either(name),
  uid: either(fc.string()),
  labels,
  annotations: either(fc.dictionary(fc.string(), either(fc.string()))),
  deletionTimestamp: either(fc.constantFrom("2024-01-01T00:00:00Z")),
  resourceVersion: either(fc.string()),
});

const node = record({
  metadata: meta,
  spec: record({
    podCIDR: either(cidr),
    podCIDRs: list(cidr),
    taints: list(fc.record({ key: either(fc.constantFrom("ToBeDeletedByClusterAutoscaler")) })),
  }),
  status: record({
    addresses: list(
      fc.record({ type: either(fc.constantFrom("InternalIP", "ExternalIP")), address: either(ip) }),
    ),
  }),
});

const serviceCIDR = record({ metadata: meta, spec: record({ cidrs: list(cidr) }) });

const endpointSlice = record({
  metadata: record({
    name: either(name),
    namespace: either(name),
    uid: either(fc.string()),
    labels: either(fc.record({ "kubernetes.io/service-name": either(name) })),
    annotations: either(
      fc.record({
        "endpoints.kubernetes.io/last-change-trigger-time": either(fc.constant("2030-01-01T00:00:00Z")),
      }),
    ),
  }),
  addressType: either(fc.constantFrom("IPv4", "IPv6", "FQDN", "__proto__", "toString")),
  ports: list(
    fc.record({
      name: either(fc.constantFrom("http", "HTTP", "a:b")),
      port: either(fc.integer({ min: -1, max: 70000 })),
      protocol: either(fc.constantFrom("TCP", "UDP", "ICMP")),
    }),
  ),
  endpoints: list(
    fc.record({
      addresses: list(ip),
      conditions: record({ ready: either(fc.boolean()), serving: either(fc.boolean()) }),
      nodeName: either(name),
      zone: either(fc.constantFrom("zone-a", "zone a")),
      hints: record({
        forZones: list(fc.record({ name: either(fc.constantFrom("zone-a", "zone a")) })),
        forNodes: list(fc.record({ name: either(name) })),
      }),
    }),
  ),
});

const noUnexpected = (lines: readonly string[]) =>
  expect(lines.filter((l) => l.includes("Unexpected error"))).toEqual([]);

describe("hostile objects never throw", () => {
  test("Node readers", () => {
    fc.assert(
      fc.property(node, (n) => {
        const info = nodeInfo(n, { note: () => undefined });
        for (const v of Object.values(info.labels)) expect(typeof v).toBe("string");
        for (const c of info.podCIDRs) expect(typeof c).toBe("string");
        nodeIPs(n);
        nodePodCIDRs(n);
        expect(typeof nodeName(n)).toBe("string");
        for (const t of nodeEligibility(n).spec.taints) expect(typeof t.key).toBe("string");
        const docs = { nodes: [n], services: [], endpointSlices: [], serviceCIDRs: [], ignored: [] };
        const chosen = snapshotNodeName(docs as unknown as StateDocuments);
        if (chosen !== undefined) expect(typeof chosen).toBe("string");
        objectKey(n as never);
      }),
      { numRuns: 500 },
    );
  });

  test("a SyncController told of such Nodes logs, never throws", () => {
    const logger = memoryLogger();
    const controller = new SyncController({
      nodeName: "node-a",
      proxier: { sync: async () => {} },
      minSyncPeriodMs: 0,
      syncPeriodMs: 3_600_000,
      logger,
    });
    fc.assert(
      fc.property(node, (n) => controller.onNodeChange(n as never)),
      { numRuns: 300 },
    );
  });

  test("ServiceCIDRSet", () => {
    const logger = memoryLogger();
    const set = new ServiceCIDRSet({ logger, recorder: memoryRecorder() });
    fc.assert(
      fc.property(serviceCIDR, fc.boolean(), (c, removed) => {
        set.update(c as never, removed);
        for (const text of set.cidrs) expect(typeof text).toBe("string");
      }),
      { numRuns: 500 },
    );
  });

  test("EndpointsChangeTracker and the endpoints it yields", () => {
    const logger = memoryLogger();
    const tracker = new EndpointsChangeTracker({ nodeName: "node-a", logger, recorder: memoryRecorder() });
    const map = new EndpointsMap();
    fc.assert(
      fc.property(fc.array(fc.tuple(endpointSlice, fc.boolean()), { maxLength: 5 }), (changes) => {
        for (const [s, removed] of changes) tracker.endpointSliceChanged(s as never, removed);
        map.update(tracker);
        for (const [id, eps] of map.entries()) {
          // Only names the API server would accept make it into a key.
          expect(id).toMatch(/^[a-z0-9-]+\/[a-z0-9-]+(:[a-z0-9-]*)?$/);
          for (const e of eps) {
            expect(typeof e.nodeName).toBe("string");
            for (const z of e.zoneHints) expect(typeof z).toBe("string");
          }
        }
      }),
      { numRuns: 500 },
    );
    noUnexpected(logger.lines);
  });
});
