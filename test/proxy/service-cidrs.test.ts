// ServiceCIDRSet: the union of every ServiceCIDR's spec.cidrs, canonical and sorted, whatever the
// order objects arrive in; a bad CIDR is skipped and reported with its field, the rest still count.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { memoryRecorder } from "../../src/k8s/events.ts";
import type { ServiceCIDRObject } from "../../src/k8s/objects.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { ServiceCIDRSet } from "../../src/proxy/service-cidrs.ts";

const cidr = (name: string, cidrs: unknown): ServiceCIDRObject =>
  ({ metadata: { name }, spec: { cidrs } }) as ServiceCIDRObject;

describe("ServiceCIDRSet", () => {
  test("the union of every object's CIDRs, IPv4 first; a change is reported only when it changes", () => {
    const set = new ServiceCIDRSet();
    expect(set.update(cidr("kubernetes", ["198.51.100.0/24", "2001:db8::/112"]), false)).toBe(true);
    expect(set.update(cidr("extra", ["192.0.2.0/25"]), false)).toBe(true);
    expect(set.cidrs).toEqual(["192.0.2.0/25", "198.51.100.0/24", "2001:db8::/112"]);
    expect(set.update(cidr("extra", ["192.0.2.0/25"]), false)).toBe(false);
    expect(set.update(cidr("extra", []), true)).toBe(true);
    expect(set.cidrs).toEqual(["198.51.100.0/24", "2001:db8::/112"]);
    expect(set.update(cidr("never-seen", []), true)).toBe(false);
  });

  test("CIDRs are canonical (host bits cleared, IPv6 compressed); duplicates across objects count once", () => {
    const set = new ServiceCIDRSet();
    set.update(cidr("a", ["198.51.100.7/24", "2001:DB8:0:0::/112"]), false);
    set.update(cidr("b", ["198.51.100.0/24"]), false);
    expect(set.cidrs).toEqual(["198.51.100.0/24", "2001:db8::/112"]);
    // One object going keeps a CIDR another still holds.
    set.update(cidr("b", []), true);
    expect(set.cidrs).toEqual(["198.51.100.0/24", "2001:db8::/112"]);
  });

  test("an object whose name the API server would refuse is skipped, logged with field and value", () => {
    const logger = memoryLogger();
    const set = new ServiceCIDRSet({ logger });
    expect(set.update(cidr("a/b", ["192.0.2.0/24"]), false)).toBe(false);
    expect(set.update({ spec: { cidrs: ["192.0.2.0/24"] } } as ServiceCIDRObject, false)).toBe(false);
    expect(set.update(null as never, false)).toBe(false);
    expect(set.cidrs).toEqual([]);
    expect(logger.lines.some((l) => l.includes('field="metadata.name"') && l.includes("a/b"))).toBe(true);
    expect(set.update(cidr("a/b", ["192.0.2.0/24"]), true)).toBe(false);
  });

  test("a spec that is not an object, or cidrs that are not a list, count nothing and never throw", () => {
    const logger = memoryLogger();
    const set = new ServiceCIDRSet({ logger });
    for (const spec of ["x", 5, null, [], { cidrs: "198.51.100.0/24" }, { cidrs: { a: 1 } }])
      set.update({ metadata: { name: "k" }, spec } as never, false);
    expect(set.cidrs).toEqual([]);
    expect(logger.lines.some((l) => l.includes('field="spec.cidrs"'))).toBe(true);
  });

  test("a bad CIDR is skipped with a warning and an event naming field and value", () => {
    const logger = memoryLogger();
    const recorder = memoryRecorder();
    const set = new ServiceCIDRSet({ logger, recorder });
    set.update(cidr("bad", ["198.51.100.0/24", "not-a-cidr", 7]), false);
    expect(set.cidrs).toEqual(["198.51.100.0/24"]);
    expect(recorder.events.map((e) => e.message)).toEqual([
      'ServiceCIDR bad: spec.cidrs[1] "not-a-cidr": not a CIDR; skipped',
      "ServiceCIDR bad: spec.cidrs[2] 7: not a CIDR; skipped",
    ]);
    expect(recorder.events[0]?.ref).toMatchObject({ kind: "ServiceCIDR", name: "bad" });
    set.update(cidr("odd", "198.51.100.0/24"), false);
    expect(recorder.events.at(-1)?.message).toContain("spec.cidrs");
  });

  test("property: the result depends only on the final objects, not on the order of events", () => {
    const v4 = fc
      .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 8, max: 32 }))
      .map(([o, p]) => `198.51.${o}.0/${p}`);
    const objects = fc.array(fc.tuple(fc.constantFrom("a", "b", "c"), fc.array(v4, { maxLength: 3 })), {
      maxLength: 8,
    });
    fc.assert(
      fc.property(objects, fc.boolean(), (events, reverse) => {
        const replay = (list: readonly (readonly [string, string[]])[]) => {
          const set = new ServiceCIDRSet();
          for (const [name, cidrs] of list) set.update(cidr(name, cidrs), false);
          return set.cidrs;
        };
        // The last event per name wins; replaying only those, in any order, gives the same union.
        const last = new Map(events.map(([n, c]) => [n, c] as const));
        const finals = [...last].map(([n, c]) => [n, c] as [string, string[]]);
        expect(replay(events)).toEqual(replay(reverse ? finals.reverse() : finals));
      }),
    );
  });
});
