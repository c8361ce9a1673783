// fitServices (set-room.ts): which Services fit in sets of limited size, oldest first. Checked
// against its definition over generated Services: the Services taken never overfill a set, and
// each Service held out would overfill the set named on top of the older Services taken.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { SetId } from "../../../src/modes/ipvs/ipsets.ts";
import { BIND, PortPlan } from "../../../src/modes/ipvs/port-plan.ts";
import { fitServices, type ServicePlans, SoloTally, setOfMember } from "../../../src/modes/ipvs/set-room.ts";
import { runSteps } from "../../../src/util/time-slice.ts";

function plan(key: string, members: readonly string[]): PortPlan {
  return new PortPlan(key, [], members, [], false, false, []);
}

function service(key: string, createdAtMs: number | undefined, ...plans: string[][]): ServicePlans {
  return { key, createdAtMs, plans: plans.map((m) => plan(key, m)) };
}

const LIMITS = (clusterIP: number, ipvsIPs: number) =>
  new Map<SetId, number>([
    ["clusterIP", clusterIP],
    ["ipvsIPs", ipvsIPs],
  ]);

describe("fitServices", () => {
  test("the oldest Services are taken; a newer one that would overfill a set is held out", () => {
    const old = service("ns/old", 1, ["clusterIP", "a", "clusterIP", "b"]);
    const young = service("ns/young", 3, ["clusterIP", "c", "clusterIP", "d"]);
    const middle = service("ns/middle", 2, ["clusterIP", "e"]);
    const out = runSteps(fitServices([young, old, middle], LIMITS(3, 10)));
    expect([...out]).toEqual([["ns/young", { set: "clusterIP", wanted: 5, limit: 3 }]]);
  });

  test("members another Service taken already has cost nothing; bound addresses count in KUBE-IPVS-IPS", () => {
    const a = service("ns/a", 1, [BIND, "198.51.100.1", "clusterIP", "x"], [BIND, "198.51.100.1"]);
    const b = service("ns/b", 2, [BIND, "198.51.100.1", "clusterIP", "x"]);
    const c = service("ns/c", 3, [BIND, "198.51.100.2"]);
    const out = runSteps(fitServices([a, b, c], LIMITS(1, 1)));
    expect([...out]).toEqual([["ns/c", { set: "ipvsIPs", wanted: 2, limit: 1 }]]);
  });

  test("without a creationTimestamp a Service ranks last; equal ages rank by namespace/name", () => {
    const none = service("aaa/none", undefined, ["clusterIP", "a"]);
    const b = service("ns/b", 5, ["clusterIP", "b"]);
    const a = service("ns/a", 5, ["clusterIP", "c"]);
    expect([...runSteps(fitServices([none, b, a], LIMITS(2, 10))).keys()]).toEqual(["aaa/none"]);
    expect([...runSteps(fitServices([b, a], LIMITS(1, 10))).keys()]).toEqual(["ns/b"]);
  });

  test("sets not listed are not checked", () => {
    const a = service("ns/a", 1, ["externalIP", "a", "externalIP", "b"]);
    expect(runSteps(fitServices([a], LIMITS(0, 0))).size).toBe(0);
  });

  const SETS = ["clusterIP", "externalIP", BIND] as const;
  const member = fc.tuple(fc.constantFrom(...SETS), fc.integer({ min: 0, max: 9 }));
  const services = fc.uniqueArray(
    fc.record({
      name: fc.constantFrom("a", "b", "c", "d", "e", "f", "g"),
      createdAtMs: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
      plans: fc.array(fc.array(member, { maxLength: 6 }), { maxLength: 3 }),
    }),
    { selector: (s) => s.name, maxLength: 7 },
  );

  test("generated: taken Services fit, and each held-out one would overfill a set over the older ones taken", () => {
    fc.assert(
      fc.property(
        services,
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 0, max: 8 }),
        (specs, clusterLimit, ipsLimit) => {
          const input = specs.map((s) =>
            service(
              `ns/${s.name}`,
              s.createdAtMs,
              ...s.plans.map((p) => p.flatMap(([set, n]) => [set, `m${n}`])),
            ),
          );
          const limits = LIMITS(clusterLimit, ipsLimit);
          const heldOut = runSteps(fitServices(input, limits));
          const rank = (s: ServicePlans) => [s.createdAtMs ?? Number.POSITIVE_INFINITY, s.key] as const;
          const older = (a: ServicePlans, b: ServicePlans) =>
            rank(a)[0] < rank(b)[0] || (rank(a)[0] === rank(b)[0] && rank(a)[1] < rank(b)[1]);
          const union = (list: ServicePlans[]) => {
            const sets = new Map<SetId, Set<string>>();
            for (const s of list)
              for (const p of s.plans)
                for (let i = 0; i < p.members.length; i += 2) {
                  const set = setOfMember(p.members[i]!);
                  if (!sets.has(set)) sets.set(set, new Set());
                  sets.get(set)!.add(p.members[i + 1]!);
                }
            return sets;
          };
          const taken = input.filter((s) => !heldOut.has(s.key));
          const all = union(taken);
          for (const [set, limit] of limits) expect(all.get(set)?.size ?? 0).toBeLessThanOrEqual(limit);
          for (const [key, short] of heldOut) {
            const s = input.find((x) => x.key === key)!;
            const before = union([...taken.filter((t) => older(t, s)), s]);
            expect(short.limit).toBe(limits.get(short.set)!);
            // Exact up to the limit; past it, the rest is counted as listed (repeats included).
            const exact = before.get(short.set)?.size ?? 0;
            expect(exact).toBeGreaterThan(short.limit);
            expect(short.wanted).toBeGreaterThanOrEqual(exact);
          }
        },
      ),
      { seed: 2324, numRuns: 500 },
    );
  });
});

describe("SoloTally", () => {
  test("repeats do not count: the same bound address on every port never passes the limit", () => {
    const tally = new SoloTally(LIMITS(10, 1));
    for (let i = 0; i < 50; i++)
      expect(tally.add("ns/a", plan("ns/a", [BIND, "198.51.100.1"]))).toBeUndefined();
  });

  test("the port that passes a limit is counted to its end; other Services are counted apart", () => {
    const tally = new SoloTally(LIMITS(3, 10));
    expect(tally.add("ns/a", plan("ns/a", ["clusterIP", "a", "clusterIP", "b"]))).toBeUndefined();
    expect(
      tally.add("ns/b", plan("ns/b", ["clusterIP", "a", "clusterIP", "b", "clusterIP", "c"])),
    ).toBeUndefined();
    const short = tally.add(
      "ns/a",
      plan("ns/a", ["clusterIP", "b", "clusterIP", "c", "clusterIP", "d", "clusterIP", "e"]),
    );
    expect(short).toEqual({ set: "clusterIP", wanted: 5, limit: 3 });
  });

  test("generated: a Service trips on the first plan after which its own members pass a limit", () => {
    const members = fc.array(fc.tuple(fc.constantFrom("clusterIP", BIND), fc.integer({ min: 0, max: 12 })), {
      maxLength: 6,
    });
    fc.assert(
      fc.property(fc.array(members, { maxLength: 12 }), fc.integer({ min: 0, max: 8 }), (plans, limit) => {
        const limits = LIMITS(limit, limit);
        const tally = new SoloTally(limits);
        const seen = new Map<SetId, Set<string>>();
        for (const m of plans) {
          const p = plan(
            "ns/a",
            m.flatMap(([set, n]) => [set, `m${n}`]),
          );
          const short = tally.add("ns/a", p);
          for (const [set, n] of m) {
            const id = setOfMember(set);
            if (!seen.has(id)) seen.set(id, new Set());
            seen.get(id)!.add(`m${n}`);
          }
          const over = [...limits].find(([id, l]) => (seen.get(id)?.size ?? 0) > l);
          expect(short !== undefined).toBe(over !== undefined);
          if (short) {
            expect(short.wanted).toBe(seen.get(short.set)!.size);
            return;
          }
        }
      }),
      { seed: 2325, numRuns: 500 },
    );
  });
});
