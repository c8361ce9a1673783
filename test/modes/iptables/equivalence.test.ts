import { describe, expect, test } from "bun:test";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { endpointSlice, ep, NODE, service, setup } from "./harness.ts";

// Partial syncs must leave the kernel exactly as a fresh full sync of the same cluster would:
// this drives a few hundred Services (several output chunks) through random changes and, after
// every sync, compares the tables with those a new proxier writes from scratch.

function prng(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
}

type Kind = "ClusterIP" | "NodePort" | "LoadBalancer";

function makeService(i: number, kind: Kind, local: boolean): ServiceObject {
  const nodePort = kind === "ClusterIP" ? {} : { nodePort: 30000 + i };
  return service(
    "ns",
    `s${i}`,
    {
      type: kind,
      clusterIP: `198.51.100.${(i % 250) + 1}`,
      ...(local && kind !== "ClusterIP"
        ? { externalTrafficPolicy: "Local", healthCheckNodePort: 31000 + i }
        : {}),
      ...(i % 7 === 0 ? { sessionAffinity: "ClientIP" } : {}),
      ports: [{ name: "p", port: 1000 + i, protocol: i % 5 === 0 ? "UDP" : "TCP", ...nodePort }],
    },
    kind === "LoadBalancer"
      ? { loadBalancer: { ingress: [{ ip: `203.0.113.${(i % 200) + 1}` }] } }
      : undefined,
  );
}

function makeSlice(i: number, count: number, rand: () => number): EndpointSliceObject {
  const eps = [];
  for (let j = 0; j < count; j++) {
    eps.push(ep(`192.0.2.${(i * 7 + j) % 250}`, { node: rand() < 0.3 ? NODE : "node-b" }));
  }
  const protocol = i % 5 === 0 ? "UDP" : "TCP";
  return endpointSlice("ns", `s${i}`, eps, { ports: [{ name: "p", port: 8000 + i, protocol }] });
}

/** iptables-save of both tables without the timestamp comments. */
async function tables(s: ReturnType<typeof setup>): Promise<string> {
  const text = `${await s.ipt.save("filter")}${await s.ipt.save("nat")}`;
  return text
    .split("\n")
    .filter((l) => !l.startsWith("#"))
    .join("\n");
}

/** One table's chains from an iptables-save text, each with its rules sorted (order-free view). */
function rulesByChain(save: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of save.split("\n")) {
    if (line.startsWith(":")) out.set(line.slice(1, line.indexOf(" ")), []);
    const m = /^-A (\S+) /.exec(line);
    if (m) out.get(m[1]!)!.push(line);
  }
  for (const rules of out.values()) rules.sort();
  return out;
}

describe("partial syncs converge to the full-sync state", () => {
  // Large clusters (over 1000 endpoints) skip the iptables-save sweep between sync periods, so
  // stale chains are found from the previous state instead: both paths are exercised.
  test.each([
    ["small cluster", 0],
    ["large cluster", 4],
  ])("random Service and endpoint changes over several hundred Services (%s)", async (_name, extra) => {
    const rand = prng(42);
    const live = new Map<number, { svc: ServiceObject; slice?: EndpointSliceObject }>();
    const s = setup();
    const kinds: Kind[] = ["ClusterIP", "NodePort", "LoadBalancer"];
    for (let i = 0; i < 300; i++) {
      const svc = makeService(i, kinds[i % 3]!, i % 4 === 0);
      const slice = i % 11 === 0 ? undefined : makeSlice(i, 1 + (i % 4) + extra, rand);
      live.set(i, slice ? { svc, slice } : { svc });
      s.cluster.apply(svc, ...(slice ? [slice] : []));
    }
    await s.sync();
    expect(s.proxier.inLargeClusterMode).toBe(extra > 0);
    let next = 300;
    for (let round = 0; round < 25; round++) {
      for (let k = 0; k < 1 + Math.floor(rand() * 4); k++) {
        const ids = [...live.keys()];
        const i = ids[Math.floor(rand() * ids.length)]!;
        const entry = live.get(i)!;
        const op = rand();
        if (op < 0.5) {
          const slice = makeSlice(i, Math.floor(rand() * 4) + extra, rand);
          s.cluster.apply(slice);
          live.set(i, { ...entry, slice });
        } else if (op < 0.65) {
          s.cluster.remove(entry.svc, ...(entry.slice ? [entry.slice] : []));
          live.delete(i);
        } else if (op < 0.8) {
          const svc = makeService(i, kinds[Math.floor(rand() * 3)]!, rand() < 0.5);
          s.cluster.apply(svc);
          live.set(i, { ...entry, svc });
        } else {
          const svc = makeService(next, kinds[next % 3]!, false);
          const slice = makeSlice(next, 2, rand);
          s.cluster.apply(svc, slice);
          live.set(next++, { svc, slice });
        }
      }
      await s.sync();
      const fresh = setup();
      for (const { svc, slice } of live.values()) fresh.cluster.apply(svc, ...(slice ? [slice] : []));
      await fresh.sync();
      expect(s.proxier.inLargeClusterMode).toBe(extra > 0);
      expect(await tables(s)).toBe(await tables(fresh));
    }
    // Most of those syncs were partial: the test exercised the incremental paths.
    const partial = (await s.metrics.syncPartialProxyRulesLatency.get()).values as {
      metricName?: string;
      value: number;
    }[];
    expect(partial.find((v) => v.metricName?.endsWith("_count"))?.value).toBe(25);
  });
});

describe("a big filter table is edited, not rewritten (filter-edits.ts), and still converges", () => {
  test("random changes: nat as a full sync writes it; filter the same rules, plus stale KUBE-SERVICES ones that go after a sync period", async () => {
    const rand = prng(7);
    const live = new Map<number, { svc: ServiceObject; slice?: EndpointSliceObject }>();
    // Every table counts as big here.
    const s = setup({ deps: { filterLinesForEdits: 1 } });
    const kinds: Kind[] = ["ClusterIP", "NodePort", "LoadBalancer"];
    for (let i = 0; i < 200; i++) {
      const svc = makeService(i, kinds[i % 3]!, i % 4 === 0);
      const slice = i % 3 === 0 ? undefined : makeSlice(i, 1 + (i % 3), rand);
      live.set(i, slice ? { svc, slice } : { svc });
      s.cluster.apply(svc, ...(slice ? [slice] : []));
    }
    await s.sync();
    let appended = 0;
    let stale = 0;
    let next = 200;
    for (let round = 0; round < 40; round++) {
      for (let k = 0; k < 1 + Math.floor(rand() * 3); k++) {
        const ids = [...live.keys()];
        const i = ids[Math.floor(rand() * ids.length)]!;
        const entry = live.get(i)!;
        const op = rand();
        if (op < 0.6) {
          // Endpoints come and go: the REJECT rules of ClusterIPs appear and go stale.
          const slice = makeSlice(i, Math.floor(rand() * 3), rand);
          s.cluster.apply(slice);
          live.set(i, { ...entry, slice });
        } else if (op < 0.7) {
          s.cluster.remove(entry.svc, ...(entry.slice ? [entry.slice] : []));
          live.delete(i);
        } else if (op < 0.8) {
          const svc = makeService(i, kinds[Math.floor(rand() * 3)]!, rand() < 0.5);
          s.cluster.apply(svc);
          live.set(i, { ...entry, svc });
        } else {
          // A Service before its endpoints: a new REJECT rule, appended.
          const svc = makeService(next, "ClusterIP", false);
          s.cluster.apply(svc);
          live.set(next++, { svc });
        }
      }
      const payload = await s.sync();
      const filter = payload.slice(
        payload.indexOf("*filter"),
        payload.indexOf("COMMIT", payload.indexOf("*filter")),
      );
      if (!filter.includes(":KUBE-SERVICES") && filter.includes("-A KUBE-SERVICES")) appended++;
      const fresh = setup();
      for (const { svc, slice } of live.values()) fresh.cluster.apply(svc, ...(slice ? [slice] : []));
      await fresh.sync();
      const nat = async (x: ReturnType<typeof setup>) =>
        (await x.ipt.save("nat"))
          .split("\n")
          .filter((l) => !l.startsWith("#"))
          .join("\n");
      expect(await nat(s)).toBe(await nat(fresh));
      const got = rulesByChain(await s.ipt.save("filter"));
      const want = rulesByChain(await fresh.ipt.save("filter"));
      for (const [chain, rules] of want) {
        if (chain !== "KUBE-SERVICES") {
          expect([chain, got.get(chain)]).toEqual([chain, rules]);
          continue;
        }
        // Every wanted rule is there; what else is there is a stale ClusterIP rule.
        const held = got.get(chain)!;
        const wanted = new Set(rules);
        expect(rules.filter((r) => !held.includes(r))).toEqual([]);
        const extra = held.filter((r) => !wanted.has(r));
        stale = Math.max(stale, extra.length);
        for (const r of extra)
          expect(r).toMatch(/^-A KUBE-SERVICES .* -d 198\.51\.100\.\d+\/32 .*-j (REJECT|DROP)/);
      }
      // The clock stands still: stale rules stay (a sync period is 30 s).
    }
    // The sequence exercised both edits.
    expect(appended).toBeGreaterThan(0);
    expect(stale).toBeGreaterThan(0);
    // A sync period later, the next sync writes the table whole: exactly a full sync's rules.
    s.clock.advance(s.config.iptables.syncPeriod);
    await s.sync();
    const fresh = setup();
    for (const { svc, slice } of live.values()) fresh.cluster.apply(svc, ...(slice ? [slice] : []));
    await fresh.sync();
    expect(await tables(s)).toBe(await tables(fresh));
  });
});
