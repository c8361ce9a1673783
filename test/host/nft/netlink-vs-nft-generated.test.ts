// The netlink writer against nft over generated clusters (fast-check): Services of every type
// with one or two TCP/UDP/SCTP ports, NodePorts, external and load balancer IPs, Local policies,
// session affinity, source ranges (left to nft), and zero to three endpoints here or elsewhere, ready or not; then a few
// steps that add, change or delete Services. Both proxiers (netlink-pair.ts) sync after every
// step in their own fresh namespaces and the two tables must read back the same. A failing case
// is shrunk and printed by fast-check; keep it as an example in netlink-vs-nft.test.ts.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { FakeClock } from "../../../src/util/testing/fake-clock.ts";
import { scaled } from "../../support/kernel-vm.ts";
import { type Cluster, endpointSlice, ep, NODE, service } from "../../support/proxy-cluster.ts";
import { createWriterPair } from "./netlink-pair.ts";

const NAMES = ["a", "b", "c", "d"] as const;

interface GenPort {
  readonly protocol: "TCP" | "UDP" | "SCTP";
  readonly port: number;
  readonly target: number;
  readonly nodePort: number;
}

interface GenService {
  readonly name: (typeof NAMES)[number];
  readonly type: "ClusterIP" | "NodePort" | "LoadBalancer";
  readonly ports: readonly GenPort[];
  readonly externalIPs: readonly number[];
  readonly lbIP: number | null;
  readonly externalLocal: boolean;
  readonly internalLocal: boolean;
  readonly affinity: boolean;
  readonly sourceRanges: boolean;
  readonly endpoints: readonly { readonly i: number; readonly local: boolean; readonly ready: boolean }[];
}

const genService: fc.Arbitrary<GenService> = fc.record({
  name: fc.constantFrom(...NAMES),
  type: fc.constantFrom("ClusterIP", "NodePort", "LoadBalancer"),
  ports: fc.uniqueArray(
    fc.record({
      protocol: fc.constantFrom("TCP", "UDP", "SCTP"),
      port: fc.integer({ min: 1, max: 65535 }),
      target: fc.integer({ min: 1, max: 65535 }),
      nodePort: fc.integer({ min: 30000, max: 32767 }),
    }),
    { minLength: 1, maxLength: 2, selector: (p) => `${p.protocol}/${p.port}` },
  ),
  externalIPs: fc.uniqueArray(fc.integer({ min: 1, max: 40 }), { maxLength: 2 }),
  lbIP: fc.option(fc.integer({ min: 41, max: 80 })),
  externalLocal: fc.boolean(),
  internalLocal: fc.boolean(),
  affinity: fc.boolean(),
  sourceRanges: fc.boolean(),
  endpoints: fc.uniqueArray(
    fc.record({ i: fc.integer({ min: 2, max: 250 }), local: fc.boolean(), ready: fc.boolean() }),
    { maxLength: 3, selector: (e) => e.i },
  ),
});

type Step = readonly (
  | { readonly kind: "put"; readonly svc: GenService }
  | { readonly kind: "delete"; readonly name: string }
)[];

const genSteps: fc.Arbitrary<Step[]> = fc
  .tuple(
    fc
      .array(genService, { minLength: 1, maxLength: 4 })
      .map((s) => s.map((svc) => ({ kind: "put", svc }) as const)),
    fc.array(
      fc.array(
        fc.oneof(
          { weight: 4, arbitrary: genService.map((svc) => ({ kind: "put", svc }) as const) },
          {
            weight: 1,
            arbitrary: fc.constantFrom(...NAMES).map((name) => ({ kind: "delete", name }) as const),
          },
        ),
        { minLength: 1, maxLength: 2 },
      ),
      { minLength: 1, maxLength: 4 },
    ),
  )
  .map(([first, rest]) => [first, ...rest]);

const ADDRESSES: Record<
  IPFamily,
  { pod(i: number): string; vip(i: number): string; ext(i: number): string }
> = {
  IPv4: {
    pod: (i) => `192.0.2.${i}`,
    vip: (i) => `198.51.100.${i}`,
    ext: (i) => `203.0.113.${100 + i}`,
  },
  IPv6: {
    pod: (i) => `2001:db8:1::${i.toString(16)}`,
    vip: (i) => `2001:db8:5::${i.toString(16)}`,
    ext: (i) => `2001:db8:7::${i.toString(16)}`,
  },
};

function objects(g: GenService, family: IPFamily): [ServiceObject, EndpointSliceObject] {
  const a = ADDRESSES[family];
  const vip = a.vip(NAMES.indexOf(g.name) + 1);
  const external = g.type !== "ClusterIP";
  const svc = service(
    "ns1",
    g.name,
    {
      type: g.type,
      clusterIP: vip,
      clusterIPs: [vip],
      ipFamilies: [family],
      ports: g.ports.map((p, i) => ({
        name: `p${i}`,
        port: p.port,
        protocol: p.protocol,
        targetPort: p.target,
        ...(external ? { nodePort: p.nodePort } : {}),
      })),
      externalIPs: g.externalIPs.map(a.ext),
      ...(external ? { externalTrafficPolicy: g.externalLocal ? "Local" : "Cluster" } : {}),
      internalTrafficPolicy: g.internalLocal ? "Local" : "Cluster",
      sessionAffinity: g.affinity ? "ClientIP" : "None",
      ...(g.sourceRanges
        ? { loadBalancerSourceRanges: [family === "IPv4" ? "192.0.2.0/26" : "2001:db8:1::/64"] }
        : {}),
    },
    g.type === "LoadBalancer" && g.lbIP !== null
      ? { loadBalancer: { ingress: [{ ip: a.ext(g.lbIP) }] } }
      : undefined,
  );
  const slice = endpointSlice(
    "ns1",
    g.name,
    g.endpoints.map((e) => ep(a.pod(e.i), { ...(e.local ? { node: NODE } : {}), ready: e.ready })),
    {
      addressType: family,
      ports: g.ports.map((p, i) => ({ name: `p${i}`, port: p.target, protocol: p.protocol })),
    },
  );
  return [svc, slice];
}

function applyStep(cl: Cluster, step: Step, family: IPFamily, live: Map<string, GenService>): void {
  for (const op of step) {
    if (op.kind === "put") {
      cl.apply(...objects(op.svc, family));
      live.set(op.svc.name, op.svc);
      continue;
    }
    const was = live.get(op.name);
    if (!was) continue;
    cl.remove(...objects(was, family));
    live.delete(op.name);
  }
}

for (const family of ["IPv4", "IPv6"] as const)
  describe(`netlink partial syncs read back as nft's over generated clusters (${family}, fresh netns)`, () => {
    test(
      "every step of every generated sequence",
      async () => {
        let overNetlink = 0;
        await fc.assert(
          fc.asyncProperty(genSteps, async (steps) => {
            const pair = await createWriterPair(family, new FakeClock(1_000_000));
            try {
              // One record of what each side holds: both get the same steps.
              const live = { nft: new Map<string, GenService>(), netlink: new Map<string, GenService>() };
              for (const step of steps)
                await pair.step((cl) =>
                  applyStep(cl, step, family, cl === pair.nftSide.cluster ? live.nft : live.netlink),
                );
              overNetlink += pair.netlinkClient.sent.netlink;
            } finally {
              await pair.close();
            }
          }),
          { numRuns: 25 },
        );
        // The steps after the first were mostly partial syncs sent over netlink.
        expect(overNetlink).toBeGreaterThan(25);
      },
      scaled(240_000),
    );
  });
