import { describe, expect, test } from "bun:test";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { endpointSlice, ep, NODE, type Setup, service, setup } from "./harness.ts";

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

/** iptables-save of one table, or both, without the timestamp comments. */
async function tables(s: Setup, only?: "nat"): Promise<string> {
  const text = only ? await s.ipt.save(only) : `${await s.ipt.save("filter")}${await s.ipt.save("nat")}`;
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

const KINDS: Kind[] = ["ClusterIP", "NodePort", "LoadBalancer"];

/** The cluster the proxier under test is fed, kept alongside so a fresh proxier can be fed it too. */
class Churn {
  readonly live = new Map<number, { svc: ServiceObject; slice?: EndpointSliceObject }>();
  private next: number;

  constructor(
    private readonly s: Setup,
    private readonly rand: () => number,
    private readonly o: {
      readonly services: number;
      /** Service i starts without a slice when this says so. */
      readonly sliceless: (i: number) => boolean;
      /** Endpoints per slice: 0..maxEndpoints-1 more than `extra`. */
      readonly maxEndpoints: number;
      readonly extra: number;
      /** Odds of an endpoint change, a deletion and a Service update (else a new Service). */
      readonly odds: readonly [number, number, number];
      /** A new Service: with a slice of 2 endpoints, or alone (its endpoints come later). */
      readonly newWithSlice: boolean;
    },
  ) {
    for (let i = 0; i < o.services; i++) {
      const svc = makeService(i, KINDS[i % 3]!, i % 4 === 0);
      const slice = o.sliceless(i) ? undefined : makeSlice(i, 1 + (i % o.maxEndpoints) + o.extra, rand);
      this.live.set(i, slice ? { svc, slice } : { svc });
      s.cluster.apply(svc, ...(slice ? [slice] : []));
    }
    this.next = o.services;
  }

  /** 1..maxChanges random changes. */
  changes(maxChanges: number): void {
    const { s, rand, live, o } = this;
    for (let k = 0; k < 1 + Math.floor(rand() * maxChanges); k++) {
      const ids = [...live.keys()];
      const i = ids[Math.floor(rand() * ids.length)]!;
      const entry = live.get(i)!;
      const op = rand();
      if (op < o.odds[0]) {
        const slice = makeSlice(i, Math.floor(rand() * o.maxEndpoints) + o.extra, rand);
        s.cluster.apply(slice);
        live.set(i, { ...entry, slice });
      } else if (op < o.odds[1]) {
        s.cluster.remove(entry.svc, ...(entry.slice ? [entry.slice] : []));
        live.delete(i);
      } else if (op < o.odds[2]) {
        const svc = makeService(i, KINDS[Math.floor(rand() * 3)]!, rand() < 0.5);
        s.cluster.apply(svc);
        live.set(i, { ...entry, svc });
      } else if (o.newWithSlice) {
        const svc = makeService(this.next, KINDS[this.next % 3]!, false);
        const slice = makeSlice(this.next, 2, rand);
        s.cluster.apply(svc, slice);
        live.set(this.next++, { svc, slice });
      } else {
        live.set(this.next, { svc: makeService(this.next, "ClusterIP", false) });
        s.cluster.apply(live.get(this.next++)!.svc);
      }
    }
  }

  /** A new proxier synced once from the same cluster: what a full sync writes. */
  async fresh(): Promise<Setup> {
    const fresh = setup();
    for (const { svc, slice } of this.live.values()) fresh.cluster.apply(svc, ...(slice ? [slice] : []));
    await fresh.sync();
    return fresh;
  }
}

describe("partial syncs converge to the full-sync state", () => {
  // Large clusters (over 1000 endpoints) skip the iptables-save sweep between sync periods, so
  // stale chains are found from the previous state instead: both paths are exercised.
  test.each([
    ["small cluster", 0],
    ["large cluster", 4],
  ])("random Service and endpoint changes over several hundred Services (%s)", async (_name, extra) => {
    const s = setup();
    const churn = new Churn(s, prng(42), {
      services: 300,
      sliceless: (i) => i % 11 === 0,
      maxEndpoints: 4,
      extra,
      odds: [0.5, 0.65, 0.8],
      newWithSlice: true,
    });
    await s.sync();
    expect(s.proxier.inLargeClusterMode).toBe(extra > 0);
    for (let round = 0; round < 25; round++) {
      churn.changes(4);
      await s.sync();
      const fresh = await churn.fresh();
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
    // Every table counts as big here.
    const s = setup({ deps: { filterLinesForEdits: 1 } });
    // Mostly endpoint changes, so ClusterIP REJECTs appear and go stale; new Services come
    // without endpoints, so their REJECT is appended.
    const churn = new Churn(s, prng(7), {
      services: 200,
      sliceless: (i) => i % 3 === 0,
      maxEndpoints: 3,
      extra: 0,
      odds: [0.6, 0.7, 0.8],
      newWithSlice: false,
    });
    await s.sync();
    let appended = 0;
    let stale = 0;
    for (let round = 0; round < 40; round++) {
      churn.changes(3);
      const payload = await s.sync();
      const from = payload.indexOf("*filter");
      const filter = payload.slice(from, payload.indexOf("COMMIT", from));
      if (!filter.includes(":KUBE-SERVICES") && filter.includes("-A KUBE-SERVICES")) appended++;
      const fresh = await churn.fresh();
      expect(await tables(s, "nat")).toBe(await tables(fresh, "nat"));
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
    expect(await tables(s)).toBe(await tables(await churn.fresh()));
  });
});

describe("ports whose cached text is long (kept as blocks of their own, never joined again)", () => {
  test("endpoint-only partial syncs around Services with hundreds of externalIPs", async () => {
    const rand = prng(7);
    const s = setup();
    const externalIPs = (i: number) =>
      Array.from({ length: 400 }, (_, k) => `100.${64 + (k >> 8)}.${i}.${k & 255}`);
    const big = (i: number) => i % 40 === 0;
    const svcOf = (i: number): ServiceObject =>
      big(i)
        ? service("ns", `s${i}`, {
            clusterIP: `198.51.100.${(i % 250) + 1}`,
            externalIPs: externalIPs(i),
            ports: [{ name: "p", port: 1000 + i, protocol: "TCP" }],
          })
        : makeService(i, "ClusterIP", false);
    const slices = new Map<number, EndpointSliceObject>();
    for (let i = 0; i < 300; i++) {
      // Some big ones without endpoints: a REJECT per externalIP in the filter table.
      const slice = big(i) && i % 80 === 0 ? undefined : makeSlice(i, 1 + (i % 3), rand);
      s.cluster.apply(svcOf(i), ...(slice ? [slice] : []));
      if (slice) slices.set(i, slice);
    }
    await s.sync();
    for (let round = 0; round < 12; round++) {
      for (let k = 0; k < 3; k++) {
        // A big one now and then: its chunk is rebuilt around a long text.
        const i = k === 0 && round % 2 === 0 ? 40 * Math.floor(rand() * 7) : Math.floor(rand() * 300);
        const slice = makeSlice(i, Math.floor(rand() * 3), rand);
        s.cluster.apply(slice);
        slices.set(i, slice);
      }
      await s.sync();
      const fresh = setup();
      for (let i = 0; i < 300; i++) {
        const slice = slices.get(i);
        fresh.cluster.apply(svcOf(i), ...(slice ? [slice] : []));
      }
      await fresh.sync();
      expect(await tables(s)).toBe(await tables(fresh));
    }
    // The long texts were there: 400 externalIP rules per big port.
    const first = s.ipt.restores[0]!;
    expect(first.split("\n").filter((l) => l.includes("100.64.40.")).length).toBeGreaterThanOrEqual(250);
    const partial = (await s.metrics.syncPartialProxyRulesLatency.get()).values as {
      metricName?: string;
      value: number;
    }[];
    expect(partial.find((v) => v.metricName?.endsWith("_count"))?.value).toBe(12);
  });
});
