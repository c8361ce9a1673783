// The nftables proxier across syncs, from upstream's documented behaviour: after the first full
// sync a transaction touches only the chains and elements of changed Services; chains no longer
// used are flushed at once and deleted a second later in a transaction of their own; affinity
// sets go at once; a failed transaction changes nothing, and the next sync is a full one;
// leftovers of an earlier run are found by listing the table at a full sync.

import { describe, expect, test } from "bun:test";
import { memoryLogger } from "../../../src/log/logger.ts";
import { endpointNames, portChainNames } from "../../../src/modes/nftables/names.ts";
import { FAILED_TRANSACTION_DUMP_INTERVAL_MS } from "../../../src/modes/nftables/proxier.ts";
import { endpointSlice, ep, NODE, service } from "../../support/proxy-cluster.ts";
import { chainIn, elementsIn, serviceChainsIn, setupNft } from "./harness.ts";

const port = (ns: string, name: string) => ({ namespace: ns, name, port: "p80", protocol: "TCP" }) as const;
const chains = (ns: string, name: string) => portChainNames(port(ns, name), "tcp");
const epChain = (ns: string, name: string, ip: string) =>
  endpointNames(port(ns, name), "tcp", ip, 8080).chain;
const clusterIP = (ip: string) => ({ clusterIP: ip, clusterIPs: [ip] });

/** Two Services with endpoints, synced once (full); `a` may have more to its spec. */
async function twoServices(a: Parameters<typeof service>[2] = {}) {
  const s = setupNft();
  s.cluster.apply(
    service("ns1", "a", { ...clusterIP("198.51.100.1"), ...a }),
    endpointSlice("ns1", "a", [ep("192.0.2.10"), ep("192.0.2.11")]),
    service("ns1", "b", clusterIP("198.51.100.2")),
    endpointSlice("ns1", "b", [ep("192.0.2.20")]),
  );
  await s.sync();
  return s;
}

/**
 * A proxier whose nft client notes each transaction's size when nft starts reading it and once
 * it has: a part made as nft reads it shows as growth. `s` holds the fake host.
 */
function watchedRuns() {
  const s = setupNft();
  const real = s.nft.client("ip");
  const seen: { before: number; after: number }[] = [];
  const reading = setupNft({
    host: s.nft,
    deps: {
      nft: {
        ...real,
        family: real.family,
        table: real.table,
        async run(tx) {
          const before = tx.size;
          await real.run(tx);
          seen.push({ before, after: tx.size });
        },
      },
    },
  });
  return { s, reading, seen };
}

/**
 * Service ns1/`name` synced with ports(false), then updated to ports(true) and synced again; only
 * the update's transaction stays in `seen`.
 */
async function syncedUpdate(
  { reading, seen }: ReturnType<typeof watchedRuns>,
  name: string,
  ip: string,
  ports: (updated: boolean) => { name: string; port: number; protocol: string }[],
): Promise<void> {
  reading.cluster.apply(service("ns1", name, { ...clusterIP(ip), ports: ports(false) }));
  await reading.sync();
  reading.cluster.apply(service("ns1", name, { ...clusterIP(ip), ports: ports(true) }));
  seen.length = 0;
  await reading.sync();
}

/** Names of the chains and containers a transaction writes to (set, map, chain names). */
function touched(tx: string): string[] {
  const names = new Set<string>();
  for (const line of tx.split("\n")) {
    const m = /^(?:add|flush|delete) (?:chain|rule|set|map|element) ip6? kube-proxy (\S+)/.exec(line);
    if (m) names.add(m[1]!);
  }
  return [...names].sort();
}

describe("nftables: partial syncs", () => {
  test("an endpoint change rewrites only that Service's chains, and no fixed part", async () => {
    const s = await twoServices();
    s.cluster.apply(endpointSlice("ns1", "a", [ep("192.0.2.10"), ep("192.0.2.11"), ep("192.0.2.12")]));
    const tx = await s.sync();
    expect(touched(tx)).toEqual([chains("ns1", "a").cluster]);
    expect(tx).not.toContain("add table");
    expect(tx).not.toContain(" element ");
    expect(chainIn(s.nft.dump(), chains("ns1", "a").cluster)?.[0]).toBe(
      "numgen random mod 3 0 meta l4proto tcp dnat to 192.0.2.10:8080",
    );
    expect(s.metrics.syncPartialProxyRulesLatency).toBeDefined();
  });

  test("a sync with nothing changed runs no transaction", async () => {
    const s = await twoServices();
    const before = s.nft.transactions.length;
    await s.sync();
    expect(s.nft.transactions.length).toBe(before);
  });

  test("the IPv6 table does not visit an IPv4 Service's ports: 2,000 of them run no transaction", async () => {
    const s = setupNft({ family: "IPv6" });
    s.cluster.apply(service("ns1", "web", { clusterIP: "2001:db8:2::41", ipFamilies: ["IPv6"] }));
    await s.sync();
    const before = s.nft.transactions.length;
    const ports = Array.from({ length: 2000 }, (_, i) => ({
      name: `p${i}`,
      port: 1000 + i,
      protocol: "TCP",
    }));
    s.cluster.apply(service("ns1", "many", { clusterIP: "198.51.100.3", ports }));
    await s.sync();
    expect(s.nft.transactions.length).toBe(before);
    // Nor does a full sync write anything of it.
    s.proxier.requestFullSync();
    await s.sync();
    expect(s.nft.transactions.at(-1)).not.toContain("many");
    expect(s.nft.dump("ip6")).toContain("2001:db8:2::41");
  });

  test("a removed endpoint's chain is flushed at once and deleted a second later, on its own", async () => {
    const s = await twoServices({ sessionAffinity: "ClientIP" });
    const gone = epChain("ns1", "a", "192.0.2.11");
    s.cluster.apply(endpointSlice("ns1", "a", [ep("192.0.2.10")]));
    const tx = await s.sync();
    expect(tx).toContain(`flush chain ip kube-proxy ${gone}`);
    expect(chainIn(s.nft.dump(), gone)).toEqual([]);

    // Less than a second later: still there.
    s.clock.advance(500);
    s.cluster.apply(endpointSlice("ns1", "b", [ep("192.0.2.21")]));
    await s.sync();
    expect(chainIn(s.nft.dump(), gone)).toEqual([]);

    s.clock.advance(600);
    s.cluster.apply(endpointSlice("ns1", "b", [ep("192.0.2.22")]));
    const before = s.nft.transactions.length;
    await s.sync();
    const [deletion] = s.nft.transactions.slice(before);
    expect(deletion).toBe(`delete chain ip kube-proxy ${gone}\n`);
    expect(chainIn(s.nft.dump(), gone)).toBeUndefined();
  });

  test("a Service that gets its first endpoint moves from no-endpoint-services to service-ips", async () => {
    const s = setupNft();
    s.cluster.apply(service("ns1", "a", clusterIP("198.51.100.1")));
    await s.sync();
    expect(elementsIn(s.nft.dump(), "map", "no-endpoint-services")).toEqual([
      "198.51.100.1 . tcp . 80 : goto reject-chain",
    ]);
    s.cluster.apply(endpointSlice("ns1", "a", [ep("192.0.2.10")]));
    const tx = await s.sync();
    expect(tx).toContain("delete element ip kube-proxy no-endpoint-services { 198.51.100.1 . tcp . 80 }");
    const dump = s.nft.dump();
    expect(elementsIn(dump, "map", "no-endpoint-services")).toEqual([]);
    expect(elementsIn(dump, "map", "service-ips")).toEqual([
      `198.51.100.1 . tcp . 80 : goto ${chains("ns1", "a").cluster}`,
    ]);
    // The cluster IP stays in @cluster-ips: it was not deleted and re-added.
    expect(tx).not.toContain("cluster-ips");
  });

  test("a deleted Service: its elements deleted, its chains flushed then deleted, its affinity sets deleted", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "a", { ...clusterIP("198.51.100.1"), sessionAffinity: "ClientIP" }),
      endpointSlice("ns1", "a", [ep("192.0.2.10")]),
      service("ns1", "b", clusterIP("198.51.100.2")),
      endpointSlice("ns1", "b", [ep("192.0.2.20")]),
    );
    await s.sync();
    const set = endpointNames(port("ns1", "a"), "tcp", "192.0.2.10", 8080).affinitySet;
    expect(s.nft.dump()).toContain(`set ${set} `);
    s.cluster.remove(service("ns1", "a", clusterIP("198.51.100.1")), endpointSlice("ns1", "a", []));
    await s.sync();
    let dump = s.nft.dump();
    expect(elementsIn(dump, "set", "cluster-ips")).toEqual(["198.51.100.2"]);
    expect(elementsIn(dump, "map", "service-ips")).toEqual([
      `198.51.100.2 . tcp . 80 : goto ${chains("ns1", "b").cluster}`,
    ]);
    expect(dump).not.toContain(`set ${set} `);
    expect(chainIn(dump, chains("ns1", "a").cluster)).toEqual([]);
    s.clock.advance(1000);
    s.cluster.apply(endpointSlice("ns1", "b", [ep("192.0.2.21")]));
    await s.sync();
    dump = s.nft.dump();
    expect(serviceChainsIn(dump).filter((c) => c.includes("ns1/a/"))).toEqual([]);
  });

  test("one port of a two-port Service removed: the shared cluster IP stays in @cluster-ips", async () => {
    const s = setupNft();
    const twoPorts = service("ns1", "a", {
      ...clusterIP("198.51.100.1"),
      ports: [
        { name: "p80", port: 80, protocol: "TCP" },
        { name: "p81", port: 81, protocol: "TCP" },
      ],
    });
    s.cluster.apply(twoPorts, endpointSlice("ns1", "a", [ep("192.0.2.10")]));
    await s.sync();
    s.cluster.apply(service("ns1", "a", clusterIP("198.51.100.1")));
    const tx = await s.sync();
    expect(tx).not.toContain("delete element ip kube-proxy cluster-ips");
    expect(elementsIn(s.nft.dump(), "set", "cluster-ips")).toEqual(["198.51.100.1"]);
  });
});

describe("nftables: ServiceCIDRs and the hairpin set across syncs", () => {
  test("a ServiceCIDR added or removed rewrites cluster-ips-check at the next (partial) sync", async () => {
    const s = await twoServices();
    const check = () => chainIn(s.nft.dump(), "cluster-ips-check");
    const reject = 'ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"';
    expect(check()).toEqual([reject]);
    s.cluster.serviceCIDRs = ["198.51.100.0/24", "2001:db8:2::/112"];
    const added = await s.sync();
    expect(added).not.toContain("add table");
    expect(check()).toEqual([
      reject,
      'ip daddr { 198.51.100.0/24 } drop comment "Drop traffic to unallocated ClusterIPs"',
    ]);
    s.cluster.serviceCIDRs = ["2001:db8:2::/112"];
    await s.sync();
    expect(check()).toEqual([reject]);
    // Nothing changed since: no transaction at all.
    const before = s.nft.transactions.length;
    await s.sync();
    expect(s.nft.transactions.length).toBe(before);
  });

  test("an endpoint that moves to this node enters the hairpin set, and leaves it when it goes", async () => {
    const s = await twoServices();
    const hairpin = () => elementsIn(s.nft.dump(), "set", "hairpin-connections");
    expect(hairpin()).toEqual([]);
    s.cluster.apply(endpointSlice("ns1", "a", [ep("192.0.2.10", { node: NODE }), ep("192.0.2.11")]));
    const tx = await s.sync();
    expect(tx).toContain(
      "add element ip kube-proxy hairpin-connections { 192.0.2.10 . 192.0.2.10 . tcp . 8080 }",
    );
    expect(hairpin()).toEqual(["192.0.2.10 . 192.0.2.10 . tcp . 8080"]);
    // The same endpoint serving a second Service: one element, kept while either needs it.
    s.cluster.apply(endpointSlice("ns1", "b", [ep("192.0.2.10", { node: NODE })]));
    await s.sync();
    expect(hairpin()).toEqual(["192.0.2.10 . 192.0.2.10 . tcp . 8080"]);
    s.cluster.apply(endpointSlice("ns1", "a", [ep("192.0.2.11")]));
    await s.sync();
    expect(hairpin()).toEqual(["192.0.2.10 . 192.0.2.10 . tcp . 8080"]);
    s.cluster.apply(endpointSlice("ns1", "b", [ep("192.0.2.20")]));
    await s.sync();
    expect(hairpin()).toEqual([]);
  });
});

describe("nftables: failures and full syncs", () => {
  test("a failed transaction changes nothing; the next sync is a full one and catches up", async () => {
    const s = await twoServices();
    const good = s.nft.dump();
    s.nft.failNext = "/dev/stdin:3:1-10: Error: Could not process rule: Device or resource busy\nx\n^\n";
    s.cluster.apply(endpointSlice("ns1", "a", [ep("192.0.2.10")]));
    await expect(s.sync()).rejects.toThrow(/line 3/);
    expect(s.nft.dump()).toBe(good);
    expect(await s.metrics.nftablesSyncFailures.get()).toMatchObject({ values: [{ value: 1 }] });
    const tx = await s.sync();
    expect(tx).toContain("add table ip kube-proxy");
    expect(chainIn(s.nft.dump(), chains("ns1", "a").cluster)).toEqual([
      "meta l4proto tcp dnat to 192.0.2.10:8080",
    ]);
  });

  test("at verbosity 4 a failed transaction is logged whole, at most once a day (1.33)", async () => {
    const logger = memoryLogger({ verbosity: 4 });
    const s = setupNft({ logger });
    s.cluster.apply(
      service("ns1", "a", clusterIP("198.51.100.1")),
      endpointSlice("ns1", "a", [ep("192.0.2.10")]),
    );
    const fail = async () => {
      s.nft.failNext = "/dev/stdin:3:1-10: Error: Could not process rule: Device or resource busy\nx\n^\n";
      await expect(s.sync()).rejects.toThrow(/line 3/);
    };
    const dumps = () => logger.lines.filter((l) => l.includes("Failed nftables transaction"));
    await s.sync();
    // A partial sync's transaction is kept and written whole.
    s.cluster.apply(endpointSlice("ns1", "a", [ep("192.0.2.11")]));
    await fail();
    expect(dumps()).toHaveLength(1);
    expect(dumps()[0]).toContain("192.0.2.11");
    await fail();
    expect(dumps()).toHaveLength(1);
    // A day later; the retry is a full sync, whose input is not kept: said so.
    s.clock.advance(FAILED_TRANSACTION_DUMP_INTERVAL_MS);
    await fail();
    expect(dumps()).toHaveLength(2);
    expect(dumps()[1]).toContain("not kept");
    // At the default verbosity only the error line is written.
    const quiet = memoryLogger();
    const q = setupNft({ logger: quiet });
    q.cluster.apply(service("ns1", "a", clusterIP("198.51.100.1")));
    q.nft.failNext = "/dev/stdin:3:1-10: Error: Could not process rule: Device or resource busy\nx\n^\n";
    await expect(q.sync()).rejects.toThrow();
    expect(quiet.lines.some((l) => l.includes("Failed nftables transaction"))).toBe(false);
  });

  test("the table is listed at the first full sync and after a failure, not at a full resync after success", async () => {
    const s = await twoServices();
    const listings = () => s.nft.exec.callsTo("nft").filter((c) => c.args.includes("list")).length;
    expect(listings()).toBeGreaterThan(0);
    const atStart = listings();
    s.proxier.requestFullSync();
    const resync = await s.sync();
    expect(listings()).toBe(atStart);
    // The record says which chains exist: those are emptied before they are refilled.
    const a = chains("ns1", "a").cluster;
    expect(resync).toContain(`flush chain ip kube-proxy ${a}`);
    s.nft.failNext = "Error: Could not process rule: Device or resource busy\n";
    s.cluster.apply(endpointSlice("ns1", "a", [ep("192.0.2.10")]));
    await expect(s.sync()).rejects.toThrow();
    await s.sync();
    expect(listings()).toBeGreaterThan(atStart);
    expect(chainIn(s.nft.dump(), a)).toEqual(["meta l4proto tcp dnat to 192.0.2.10:8080"]);
  });

  test("a restart finds an earlier run's leftovers: chains flushed then deleted, affinity sets dropped", async () => {
    const earlier = setupNft();
    earlier.cluster.apply(
      service("old", "x", { ...clusterIP("198.51.100.9"), sessionAffinity: "ClientIP" }),
      endpointSlice("old", "x", [ep("192.0.2.90")]),
    );
    await earlier.sync();
    const leftover = [chains("old", "x").cluster, epChain("old", "x", "192.0.2.90")];
    const set = endpointNames(port("old", "x"), "tcp", "192.0.2.90", 8080).affinitySet;

    // A new process on the same kernel; the Service is gone.
    const s = setupNft({ host: earlier.nft });
    s.cluster.apply(
      service("ns1", "a", clusterIP("198.51.100.1")),
      endpointSlice("ns1", "a", [ep("192.0.2.10")]),
    );
    await s.sync();
    let dump = s.nft.dump();
    for (const c of leftover) expect(chainIn(dump, c)).toEqual([]);
    expect(dump).not.toContain(`set ${set} `);
    expect(elementsIn(dump, "set", "cluster-ips")).toEqual(["198.51.100.1"]);

    s.clock.advance(1000);
    s.cluster.apply(endpointSlice("ns1", "a", [ep("192.0.2.11")]));
    await s.sync();
    dump = s.nft.dump();
    expect(serviceChainsIn(dump).filter((c) => c.includes("old/x/"))).toEqual([]);
  });

  test("a Node label change makes the next sync a full one", async () => {
    const s = await twoServices();
    s.cluster.node = { ...s.cluster.node!, labels: { "topology.kubernetes.io/zone": "zone-b" } };
    const tx = await s.sync();
    expect(tx).toContain("add table ip kube-proxy");
  });

  test("a full sync flushes only the service chains the listing showed: none on a fresh table", async () => {
    const s = await twoServices();
    const first = s.nft.transactions[0]!;
    const a = chains("ns1", "a").cluster;
    expect(first).toContain(`add chain ip kube-proxy ${a}`);
    expect(first).not.toContain(`flush chain ip kube-proxy ${a}`);
    s.proxier.requestFullSync();
    const again = await s.sync();
    expect(again).toContain(`add chain ip kube-proxy ${a}\nflush chain ip kube-proxy ${a}`);
    expect(chainIn(s.nft.dump(), a)).toHaveLength(2);
  });

  test("a full sync's service ports are written as nft reads them, not held as text first", async () => {
    const { s, reading, seen } = watchedRuns();
    reading.cluster.apply(
      service("ns1", "a", clusterIP("198.51.100.1")),
      endpointSlice("ns1", "a", [ep("192.0.2.10"), ep("192.0.2.11")]),
    );
    await reading.sync();
    // Only the fixed part existed when nft was started; the Service's chains came as it read.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.after).toBeGreaterThan(seen[0]!.before);
    expect(chainIn(s.nft.dump(), chains("ns1", "a").cluster)).toHaveLength(2);
  });

  test("an update of a 2,000-port Service (one port moved, one dropped) is a partial sync made as nft reads it, ending where a full sync does", async () => {
    const watched = watchedRuns();
    const { s, reading, seen } = watched;
    // The update moves the last port and drops the first.
    const ports = (updated: boolean) =>
      Array.from({ length: 2000 }, (_, i) => ({
        name: `p${i}`,
        port: 1000 + i + (updated && i === 1999 ? 1 : 0),
        protocol: "TCP",
      })).slice(updated ? 1 : 0);
    await syncedUpdate(watched, "many", "198.51.100.3", ports);
    // Nothing of the Service was in the transaction when nft started; its change came as it read.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.before).toBe(0);
    expect(seen[0]!.after).toBeGreaterThan(0);
    const partial = s.nft.dump();
    expect(partial).toContain("198.51.100.3 . tcp . 3000 ");
    expect(partial).not.toContain("198.51.100.3 . tcp . 2999 ");
    expect(partial).not.toContain("198.51.100.3 . tcp . 1000 ");
    expect(partial).toContain("198.51.100.3 . tcp . 1001 ");
    reading.proxier.requestFullSync();
    await reading.sync();
    expect(s.nft.dump()).toBe(partial);
  });

  test("an update of 600 ports (1,200 ids written or wanted, 600 distinct) is written at once, before nft starts", async () => {
    const watched = watchedRuns();
    const { seen } = watched;
    const ports = (updated: boolean) =>
      Array.from({ length: 600 }, (_, i) => ({
        name: `p${i}`,
        port: 1000 + i + (updated ? 1 : 0),
        protocol: "TCP",
      }));
    await syncedUpdate(watched, "some", "198.51.100.4", ports);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.before).toBeGreaterThan(0);
    expect(seen[0]!.after).toBe(seen[0]!.before);
  });

  test("an hour after the last full sync, a full sync again", async () => {
    const s = await twoServices();
    s.clock.advance(60 * 60 * 1000);
    s.cluster.apply(endpointSlice("ns1", "b", [ep("192.0.2.21")]));
    const tx = await s.sync();
    expect(tx).toContain("add table ip kube-proxy");
  });
});
