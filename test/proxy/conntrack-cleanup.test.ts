import { describe, expect, test } from "bun:test";
import { createConntrackClient } from "../../src/host/conntrack/client.ts";
import { type ConntrackFlow, FakeConntrack, flow } from "../../src/host/conntrack/testing/fake.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { conntrackSettled, desiredUDPState, staleFlowFilters } from "../../src/proxy/conntrack-cleanup.ts";
import { RECONCILE_PERIOD_MS } from "../../src/proxy/sync-bookkeeping.ts";
import { endpointSlice, ep, NODE_IP, type SetupOptions, service, setup } from "../modes/iptables/harness.ts";

const CLIENT = "192.0.2.200";
const udp = [{ name: "dns", port: 53, protocol: "UDP" }];
const udpService = (extra = {}) =>
  service("ns1", "dns", {
    type: "NodePort",
    clusterIP: "198.51.100.10",
    externalIPs: ["203.0.113.53"],
    ports: [{ name: "dns", port: 53, protocol: "UDP", nodePort: 30053 }],
    ...extra,
  });
const udpSlice = (...ips: string[]) =>
  endpointSlice(
    "ns1",
    "dns",
    ips.map((ip) => ep(ip)),
    { ports: udp },
  );

/**
 * A proxier whose conntrack is the real client over a stateful fake flow table; `s.sync()` also
 * waits for the reconcile pass the sync started in the background.
 */
function withConntrack(opts: SetupOptions = {}) {
  const table = new FakeConntrack();
  const conntrack = createConntrackClient({ exec: table.install() });
  const inner = setup({ ...opts, deps: { ...opts.deps, conntrack } });
  const sync = async () => {
    const out = await inner.sync();
    await conntrackSettled(conntrack);
    return out;
  };
  return { s: { ...inner, sync }, table };
}

const toService = (dst: string, dport: number, dnatTo?: string): ConntrackFlow =>
  flow("udp", { src: CLIENT, dst, sport: 40000, dport }, dnatTo ? { ip: dnatTo, port: 53 } : undefined);

const describeFlows = (flows: readonly ConntrackFlow[]) =>
  flows.map((f) => `${f.orig.dst}:${f.orig.dport}${f.reply.src !== f.orig.dst ? ` -> ${f.reply.src}` : ""}`);

// The conntrack reconciler (upstream 1.32+): after each successful sync, every UDP flow to a
// Service frontend whose reply does not come from a serving endpoint (IP and target port) goes.
describe("conntrack reconciler", () => {
  test("flows cached without DNAT (before the rules existed) go, whether or not endpoints exist yet", async () => {
    const { s, table } = withConntrack();
    s.cluster.apply(udpService());
    await s.sync();
    const cached = () => [
      toService("198.51.100.10", 53),
      toService("203.0.113.53", 53),
      toService(NODE_IP, 30053),
      toService("198.51.100.99", 53),
    ];
    table.add(...cached());
    // No endpoint yet (1.37: reconciled with an empty set): the Service's frontends are cleaned
    // by the periodic pass (no change asked for one).
    s.clock.advance(RECONCILE_PERIOD_MS);
    await s.sync();
    expect(describeFlows(table.flows)).toEqual(["198.51.100.99:53"]);
    table.flows = [];
    table.add(...cached());
    s.cluster.apply(udpSlice("192.0.2.53"));
    await s.sync();
    expect(describeFlows(table.flows)).toEqual(["198.51.100.99:53"]);
  });

  test("a removed UDP endpoint loses the NATed entries towards it, from every service address", async () => {
    const { s, table } = withConntrack();
    s.cluster.apply(udpService(), udpSlice("192.0.2.53", "192.0.2.54"));
    await s.sync();
    table.add(
      toService("198.51.100.10", 53, "192.0.2.53"),
      toService("203.0.113.53", 53, "192.0.2.53"),
      toService(NODE_IP, 30053, "192.0.2.53"),
      toService("198.51.100.10", 53, "192.0.2.54"),
    );
    s.cluster.apply(udpSlice("192.0.2.54"));
    await s.sync();
    expect(describeFlows(table.flows)).toEqual(["198.51.100.10:53 -> 192.0.2.54"]);
  });

  test("a deleted UDP service loses the entries to its cluster IP", async () => {
    const { s, table } = withConntrack();
    s.cluster.apply(udpService(), udpSlice("192.0.2.53"));
    await s.sync();
    table.add(toService("198.51.100.10", 53, "192.0.2.53"), toService("198.51.100.11", 53, "192.0.2.9"));
    s.cluster.remove(udpService());
    await s.sync();
    expect(describeFlows(table.flows)).toEqual(["198.51.100.11:53 -> 192.0.2.9"]);
  });

  test("nothing is cleared when the restore failed", async () => {
    const { s, table } = withConntrack();
    s.cluster.apply(udpService());
    await s.sync();
    table.add(toService("198.51.100.10", 53));
    s.cluster.apply(udpSlice("192.0.2.53"));
    s.ipt.fake.failNextRestore(2);
    await expect(s.sync()).rejects.toThrow();
    expect(table.flows).toHaveLength(1);
  });

  test("a failed delete is logged and the next sync's pass deletes what is still stale", async () => {
    const logger = memoryLogger();
    const table = new FakeConntrack();
    const real = createConntrackClient({ exec: table.install() });
    let failOnce = true;
    const conntrack = {
      listFlows: real.listFlows,
      deleteFlows: async (f: Parameters<typeof real.deleteFlows>[0]) => {
        if (failOnce) {
          failOnce = false;
          throw new Error("conntrack --load-file: exit code 2");
        }
        return real.deleteFlows(f);
      },
    };
    const s = setup({ logger, deps: { conntrack } });
    const sync = async () => {
      await s.sync();
      await conntrackSettled(conntrack);
    };
    s.cluster.apply(udpService(), udpSlice("192.0.2.53"));
    await sync();
    table.add(toService("198.51.100.10", 53, "192.0.2.99"), toService("203.0.113.53", 53, "192.0.2.99"));
    s.clock.advance(RECONCILE_PERIOD_MS);
    await sync();
    expect(logger.lines.join("\n")).toContain("Failed to clear all conntrack entries");
    expect(table.flows).toHaveLength(2);
    s.clock.advance(RECONCILE_PERIOD_MS);
    await sync();
    expect(table.flows).toEqual([]);
  });

  test("a pass that deleted fewer flows than it found runs again at once (the tool's walk can miss some)", async () => {
    const table = new FakeConntrack();
    const real = createConntrackClient({ exec: table.install() });
    let calls = 0;
    const conntrack = {
      listFlows: real.listFlows,
      // The first batch only gets through its first filter, as a walk disturbed by deletes can.
      deleteFlows: async (f: Parameters<typeof real.deleteFlows>[0]) =>
        real.deleteFlows(++calls === 1 ? f.slice(0, 1) : f),
    };
    const s = setup({ deps: { conntrack } });
    s.cluster.apply(udpService(), udpSlice("192.0.2.53"));
    await s.sync();
    await conntrackSettled(conntrack);
    table.add(toService("198.51.100.10", 53, "192.0.2.98"), toService("203.0.113.53", 53, "192.0.2.99"));
    s.cluster.apply(udpService({ externalIPs: ["203.0.113.53", "203.0.113.54"] }));
    await s.sync();
    await conntrackSettled(conntrack);
    expect(table.flows).toEqual([]);
    expect(calls).toBe(2);
  });

  test("a stale flow left by a missed event goes at the next change's sync, or within the period without one", async () => {
    const { s, table } = withConntrack();
    s.cluster.apply(udpService(), udpSlice("192.0.2.53"));
    await s.sync();
    // DNATed to an endpoint the cluster never told us about, or to the right IP but an old port.
    table.add(
      toService("198.51.100.10", 53, "192.0.2.77"),
      flow(
        "udp",
        { src: CLIENT, dst: "198.51.100.10", sport: 40001, dport: 53 },
        { ip: "192.0.2.53", port: 5353 },
      ),
      toService("198.51.100.10", 53, "192.0.2.53"),
    );
    // A sync with no change, before the period is up: no pass (listing a big table costs).
    await s.sync();
    expect(table.flows).toHaveLength(3);
    // Once the period is up, the next sync's pass removes them.
    s.clock.advance(RECONCILE_PERIOD_MS);
    await s.sync();
    expect(describeFlows(table.flows)).toEqual(["198.51.100.10:53 -> 192.0.2.53"]);
    const deleted = (await s.metrics.conntrackReconcilerDeletedEntries.get()).values;
    expect(deleted).toContainEqual(expect.objectContaining({ labels: { ip_family: "IPv4" }, value: 2 }));
  });

  test("a UDP Service whose last endpoint went loses its flows (1.37)", async () => {
    const { s, table } = withConntrack();
    s.cluster.apply(udpService(), udpSlice("192.0.2.53"));
    await s.sync();
    table.add(toService("198.51.100.10", 53, "192.0.2.53"), toService(NODE_IP, 30053, "192.0.2.53"));
    s.cluster.apply(udpSlice());
    await s.sync();
    expect(table.flows).toEqual([]);
  });

  test("TCP services never touch conntrack", async () => {
    const { s, table } = withConntrack();
    const tcp = flow("tcp", { src: CLIENT, dst: "198.51.100.80", sport: 40000, dport: 80 });
    table.add(tcp);
    s.cluster.apply(service("ns1", "web", { clusterIP: "198.51.100.80" }));
    await s.sync();
    s.cluster.apply(endpointSlice("ns1", "web", [ep("192.0.2.80")]));
    await s.sync();
    s.cluster.remove(service("ns1", "web", {}));
    await s.sync();
    expect(table.flows).toEqual([tcp]);
  });

  test("filters: one per frontend and reply, NodePorts by port; no duplicates; never a flow to no frontend", () => {
    const services = new Map([
      [
        "ns1/dns:dns",
        {
          protocol: "UDP",
          port: 53,
          nodePort: 30053,
          clusterIPs: { IPv4: "198.51.100.10" },
          externalIPs: ["203.0.113.53", "2001:db8::53"],
          loadBalancerVIPs: [],
        },
      ],
    ]) as unknown as Parameters<typeof desiredUDPState>[0];
    const endpoints = new Map([
      ["ns1/dns:dns", [{ ip: "192.0.2.53", port: 53, serving: true, family: "IPv4" }]],
    ]) as unknown as Parameters<typeof desiredUDPState>[1];
    const desired = desiredUDPState(services, endpoints, "IPv4");
    const f = (origDst: string, origDport: number, replySrc: string, replySport = 53) => ({
      origDst,
      origDport,
      replySrc,
      replySport,
    });
    const { filters, staleFlows } = staleFlowFilters(
      [
        f("198.51.100.10", 53, "192.0.2.53"),
        f("198.51.100.10", 53, "192.0.2.9"),
        f("198.51.100.10", 53, "192.0.2.9"),
        f("203.0.113.53", 53, "203.0.113.53"),
        f("192.0.2.200", 30053, "192.0.2.9"),
        f("198.51.100.99", 53, "192.0.2.9"),
      ],
      desired,
      "IPv4",
    );
    // Each names its frontend (a NodePort only by its port); the flow to 198.51.100.99, no
    // frontend, stays whoever answers it.
    expect(
      filters.map((x) => `${x.origDst ?? "*"}:${x.origDport ?? "*"}>${x.replySrc}:${x.replySport}`),
    ).toEqual(["198.51.100.10:53>192.0.2.9:53", "203.0.113.53:53>203.0.113.53:53", "*:30053>192.0.2.9:53"]);
    expect(staleFlows).toBe(4);
  });
});
