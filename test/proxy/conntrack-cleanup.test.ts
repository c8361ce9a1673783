import { describe, expect, test } from "bun:test";
import { createConntrackClient } from "../../src/host/conntrack/client.ts";
import { type ConntrackFlow, FakeConntrack, flow } from "../../src/host/conntrack/testing/fake.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { endpointIP } from "../../src/proxy/conntrack-cleanup.ts";
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

/** A proxier whose conntrack is the real client over a stateful fake flow table. */
function withConntrack(opts: SetupOptions = {}) {
  const table = new FakeConntrack();
  const conntrack = createConntrackClient({ exec: table.install() });
  const s = setup({ ...opts, deps: { ...opts.deps, conntrack } });
  return { s, table };
}

const toService = (dst: string, dport: number, dnatTo?: string): ConntrackFlow =>
  flow("udp", { src: CLIENT, dst, sport: 40000, dport }, dnatTo ? { ip: dnatTo, port: 53 } : undefined);

const describeFlows = (flows: readonly ConntrackFlow[]) =>
  flows.map((f) => `${f.orig.dst}:${f.orig.dport}${f.reply.src !== f.orig.dst ? ` -> ${f.reply.src}` : ""}`);

describe("stale UDP conntrack entries", () => {
  test("a UDP service getting its first endpoint drops the entries cached without DNAT", async () => {
    const { s, table } = withConntrack();
    s.cluster.apply(udpService());
    await s.sync();
    table.add(
      toService("198.51.100.10", 53),
      toService("203.0.113.53", 53),
      toService(NODE_IP, 30053),
      toService("198.51.100.99", 53),
    );
    await s.sync();
    expect(table.flows).toHaveLength(4);
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

  test("a conntrack failure is logged and the rest of the cleanup still runs", async () => {
    const logger = memoryLogger();
    const calls: string[] = [];
    const conntrack = {
      clearEntriesForIP: async (ip: string) => {
        throw new Error(`conntrack -D --orig-dst ${ip}: exit code 2`);
      },
      clearEntriesForPort: async (port: number) => {
        calls.push(`port ${port}`);
        return 0;
      },
      clearEntriesForNAT: async () => 0,
      clearEntriesForPortNAT: async () => 0,
    };
    const s = setup({ logger, deps: { conntrack } });
    s.cluster.apply(udpService());
    await s.sync();
    s.cluster.apply(udpSlice("192.0.2.53"));
    await s.sync();
    expect(calls).toEqual(["port 30053"]);
    expect(logger.lines.join("\n")).toContain("Failed to delete stale service connections");
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

  test("endpointIP strips the port, and the brackets of IPv6", () => {
    expect(endpointIP("192.0.2.1:53")).toBe("192.0.2.1");
    expect(endpointIP("[2001:db8::1]:53")).toBe("2001:db8::1");
  });
});
