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
