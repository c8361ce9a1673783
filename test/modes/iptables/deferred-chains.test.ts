// The ports' chain rules are counted when a sync is computed and written only as the restore
// reads them: the counts (rule metrics, the sync's log) must be what is then written, and the
// deferred blocks must read as the joined ones would, every time they are read.

import { describe, expect, test } from "bun:test";
import type { ProxyConfig } from "../../../src/config/types.ts";
import { DeferredLineBlocks, LineBlocks, OWN_BLOCK_CHARS } from "../../../src/modes/iptables/line-blocks.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { endpointSlice, ep, NODE, service, setup, tableGauge, tableSection } from "./harness.ts";
import { overallIPv4, overallIPv6 } from "./scenarios.ts";

const variants: { name: string; config: (c: ProxyConfig) => void }[] = [
  { name: "defaults", config: () => {} },
  { name: "masqueradeAll", config: (c) => (c.iptables.masqueradeAll = true) },
  { name: "no local traffic detection", config: (c) => (c.clusterCIDRs = []) },
];

const families: { family: IPFamily; objects: typeof overallIPv4 }[] = [
  { family: "IPv4", objects: overallIPv4 },
  { family: "IPv6", objects: overallIPv6 },
];

describe("deferred chain rules", () => {
  for (const v of variants) {
    for (const f of families) {
      test(`${f.family}, ${v.name}: the nat rules counted are the nat rules written`, async () => {
        const s = setup({ family: f.family, config: v.config });
        s.cluster.apply(...f.objects());
        // Affinity and Local policy with several endpoints, some on this node.
        s.cluster.apply(
          service("ns7", "svc7", {
            type: "LoadBalancer",
            clusterIP: f.family === "IPv4" ? "198.51.100.47" : "2001:db8:100::47",
            externalTrafficPolicy: "Local",
            healthCheckNodePort: 30007,
            sessionAffinity: "ClientIP",
            ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3007 }],
          }),
          endpointSlice(
            "ns7",
            "svc7",
            f.family === "IPv4"
              ? [ep("192.0.2.171", { node: NODE }), ep("192.0.2.172"), ep("192.0.2.173", { node: NODE })]
              : [ep("2001:db8:1::171", { node: NODE }), ep("2001:db8:1::172")],
            f.family === "IPv4" ? {} : { addressType: "IPv6" },
          ),
        );
        const full = await s.sync();
        const written = (payload: string) => tableSection(payload, "nat").filter((l) => l.startsWith("-A "));
        expect(written(full).length).toBeGreaterThan(10);
        expect(await tableGauge(s.metrics.iptablesRulesLastSync, "nat")).toBe(written(full).length);
        const held = (await s.ipt.save("nat")).split("\n").filter((l) => l.startsWith("-A KUBE-"));
        expect(await tableGauge(s.metrics.iptablesRulesTotal, "nat")).toBe(held.length);
        // A partial sync rewrites one port's chains: counted as written, the total unchanged.
        s.cluster.apply(
          endpointSlice(
            "ns7",
            "svc7",
            f.family === "IPv4"
              ? [ep("192.0.2.171", { node: NODE }), ep("192.0.2.174")]
              : [ep("2001:db8:1::171", { node: NODE })],
            f.family === "IPv4" ? {} : { addressType: "IPv6" },
          ),
        );
        const partial = await s.sync();
        expect(await tableGauge(s.metrics.iptablesRulesLastSync, "nat")).toBe(written(partial).length);
        const after = (await s.ipt.save("nat")).split("\n").filter((l) => l.startsWith("-A KUBE-"));
        expect(await tableGauge(s.metrics.iptablesRulesTotal, "nat")).toBe(after.length);
      });
    }
  }

  test("a restore input read twice gives the same text (an error's context reads it again)", async () => {
    const s = setup();
    s.cluster.apply(...overallIPv4());
    const text = await s.sync();
    const input = s.ipt.inputs.at(-1)!;
    expect(typeof input).not.toBe("string");
    expect([...input].join("")).toBe(text);
    expect([...input].join("")).toBe(text);
  });
});

describe("DeferredLineBlocks", () => {
  const long = Array.from({ length: 2000 }, (_, i) => `-A KUBE-SERVICES -d 100.64.${i >> 8}.${i & 255}`).join(
    "\n",
  );

  /** Lines a writer makes: `n` of them, named after `tag`. */
  const writer = (tag: string, n: number) => ({
    lines: n,
    write(sink: { push(line: string): void }) {
      for (let i = 0; i < n; i++) sink.push(`-A ${tag} ${i}`);
    },
  });

  test("reads as LineBlocks holding the same lines, each ended by a newline, across blocks and long entries", () => {
    expect(long.length).toBeGreaterThanOrEqual(OWN_BLOCK_CHARS);
    const deferred = new DeferredLineBlocks();
    const joined = new LineBlocks();
    const add = (entry: string) => {
      deferred.push(entry);
      joined.push(entry);
    };
    for (let i = 0; i < 3000; i++) {
      if (i % 5 === 0) add(`-A KUBE-SERVICES ${i}\n-A KUBE-NODEPORTS ${i}`);
      if (i === 1000 || i === 1001) add(long);
      const w = writer(`C${i}`, i % 4);
      deferred.defer(w);
      w.write(joined);
    }
    expect(deferred.length).toBe(602);
    expect(deferred.deferredLines).toBe(4500);
    const want = `${joined.joinedBlocks().join("\n")}\n`;
    const pieces = [...deferred.pieces()];
    expect(pieces.join("")).toBe(want);
    expect([...deferred.pieces()].join("")).toBe(want);
    // A long entry is still a piece of its own, the very string pushed, and then its newline.
    expect(pieces.filter((b) => b === long)).toHaveLength(2);
    // Otherwise each piece is a block of lines with their newlines, never a newline alone.
    expect(pieces.filter((b, i) => b === "\n" && pieces[i - 1] !== long)).toEqual([]);
  });

  test("nothing pushed, or only writers that write nothing: no text", () => {
    const d = new DeferredLineBlocks();
    expect([...d.pieces()]).toEqual([]);
    d.defer(writer("X", 0));
    expect([...d.pieces()]).toEqual([]);
  });
});
