import { describe, expect, test } from "bun:test";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { createConntrackClient } from "../../../src/host/conntrack/client.ts";
import { type ConntrackFlow, FakeConntrack, flow } from "../../../src/host/conntrack/testing/fake.ts";
import { FULL_SYNC_PERIOD_MS } from "../../../src/proxy/proxier.ts";
import { endpointSlice, ep, NODE_IP, service, setup } from "./harness.ts";

const CLIENT = "192.0.2.200";
const dnsPorts = [{ name: "dns", port: 53, protocol: "UDP", nodePort: 30053 }];
const dns = () => service("ns1", "dns", { type: "NodePort", clusterIP: "198.51.100.10", ports: dnsPorts });
const dnsSlice = (...ips: string[]) =>
  endpointSlice(
    "ns1",
    "dns",
    ips.map((ip) => ep(ip)),
    { ports: [{ name: "dns", port: 53, protocol: "UDP" }] },
  );
const toService = (dst: string, dport: number, dnatTo?: string): ConntrackFlow =>
  flow("udp", { src: CLIENT, dst, sport: 40000, dport }, dnatTo ? { ip: dnatTo, port: 53 } : undefined);

function withConntrack() {
  const table = new FakeConntrack();
  const conntrack = createConntrackClient({ exec: table.install() });
  return { s: setup({ deps: { conntrack } }), table };
}

describe("stale UDP conntrack entries (shared with the iptables proxier)", () => {
  test("a removed UDP endpoint loses its NATed entries; others stay", async () => {
    const { s, table } = withConntrack();
    s.cluster.apply(dns(), dnsSlice("192.0.2.53", "192.0.2.54"));
    await s.sync();
    table.add(
      toService("198.51.100.10", 53, "192.0.2.53"),
      toService(NODE_IP, 30053, "192.0.2.53"),
      toService("198.51.100.10", 53, "192.0.2.54"),
    );
    s.cluster.apply(dnsSlice("192.0.2.54"));
    await s.sync();
    expect(table.flows.map((f) => f.reply.src)).toEqual(["192.0.2.54"]);
  });

  test("a UDP Service getting its first endpoint drops entries cached without DNAT", async () => {
    const { s, table } = withConntrack();
    s.cluster.apply(dns());
    await s.sync();
    table.add(toService("198.51.100.10", 53), toService("198.51.100.99", 53));
    s.cluster.apply(dnsSlice("192.0.2.53"));
    await s.sync();
    expect(table.flows.map((f) => f.orig.dst)).toEqual(["198.51.100.99"]);
  });
});

describe("full syncs", () => {
  const ensureCalls = (s: ReturnType<typeof setup>) =>
    s.host.exec.calls.filter(
      (c) => (c.cmd === "iptables-nft" && c.args.includes("-C")) || c.args[0] === "link",
    ).length;

  test("jump rules and the dummy device are ensured on full syncs only", async () => {
    const s = setup();
    await s.sync();
    const afterFirst = ensureCalls(s);
    expect(afterFirst).toBe(10);
    await s.sync();
    expect(ensureCalls(s)).toBe(afterFirst);
    s.proxier.requestFullSync();
    await s.sync();
    expect(ensureCalls(s)).toBe(2 * afterFirst);
    s.clock.advance(FULL_SYNC_PERIOD_MS);
    await s.sync();
    expect(s.proxier.lastSyncStats()?.fullSync).toBe(true);
    expect(ensureCalls(s)).toBe(3 * afterFirst);
  });

  test("prepare makes the baseline before the first sync, which then does not make it again", async () => {
    const s = setup();
    await s.proxier.prepare();
    // On a fresh node every chain is new, so no jump into one can exist: chains and jumps go in
    // one restore, with nothing checked one by one.
    expect(ensureCalls(s)).toBe(1);
    const iptables = s.host.exec.calls.filter((c) => c.cmd.startsWith("iptables-nft"));
    expect(iptables.filter((c) => c.cmd === "iptables-nft-restore")).toHaveLength(1);
    expect(iptables.filter((c) => c.args.includes("-N") || c.args.includes("-I"))).toEqual([]);
    expect(s.host.net.addresses("kube-ipvs0")).toEqual([]);
    const jumps = () => [
      ...s.host.ipt.IPv4.rules("filter", "INPUT"),
      ...s.host.ipt.IPv4.rules("filter", "FORWARD"),
      ...s.host.ipt.IPv4.rules("filter", "OUTPUT"),
      ...s.host.ipt.IPv4.rules("nat", "OUTPUT"),
      ...s.host.ipt.IPv4.rules("nat", "PREROUTING"),
      ...s.host.ipt.IPv4.rules("nat", "POSTROUTING"),
    ];
    expect(jumps()).toHaveLength(9);
    expect(s.host.ipt.IPv4.rules("filter", "INPUT")).toContain(
      '-m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER',
    );
    await s.proxier.prepare();
    await s.sync();
    expect(s.proxier.lastSyncStats()?.fullSync).toBe(true);
    expect(ensureCalls(s)).toBe(1);
    // Later full syncs make it again, checking each jump.
    s.proxier.requestFullSync();
    await s.sync();
    expect(ensureCalls(s)).toBe(11);
    // A restart over the chains checks every jump and adds none twice.
    const again = setup({ host: s.host });
    await again.proxier.prepare();
    expect(ensureCalls(s)).toBe(21);
    expect(jumps()).toHaveLength(9);
  });

  test("prepare's one restore leaves the tables as the first sync's chain-by-chain baseline does", async () => {
    const prepared = setup();
    await prepared.proxier.prepare();
    await prepared.sync();
    const plain = setup();
    await plain.sync();
    expect(prepared.host.ipt.IPv4.save()).toBe(plain.host.ipt.IPv4.save());
  });

  test("prepare on a node that has one of our chains makes the rest one by one, checking its jump", async () => {
    const s = setup();
    s.host.ipt.IPv4.load("*filter\n:KUBE-FORWARD - [0:0]\nCOMMIT\n");
    await s.proxier.prepare();
    const checks = s.host.exec.calls.filter((c) => c.args.includes("-C"));
    expect(checks.map((c) => c.args.at(-1))).toEqual(["KUBE-FORWARD"]);
    await s.sync();
    expect(s.host.ipt.IPv4.rules("filter", "FORWARD")).toEqual([
      '-m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL',
      '-m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
    ]);
  });

  test("a prepare that failed leaves the baseline to the first sync", async () => {
    const s = setup();
    const ip = s.host.exec;
    let refuse = true;
    const real = (req: Parameters<typeof ip.run>[0]) => s.host.net.install(new FakeExec()).run(req);
    ip.on("ip", (req) =>
      refuse && req.args[0] === "link"
        ? { code: 2, stdout: "", stderr: "RTNETLINK answers: Operation not permitted\n" }
        : real(req),
    );
    await s.proxier.prepare();
    refuse = false;
    await s.sync();
    // The first sync's own baseline checks every jump.
    expect(ensureCalls(s)).toBe(1 + 10);
    expect(s.host.ipt.IPv4.rules("filter", "INPUT")).toContain(
      '-m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER',
    );
    expect(s.host.net.addresses("kube-ipvs0")).toEqual([]);
  });

  test("a deleted jump rule comes back with the next full sync", async () => {
    const s = setup();
    await s.sync();
    s.host.ipt.IPv4.load("*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n");
    expect(s.host.ipt.IPv4.rules("filter", "INPUT")).toEqual([]);
    s.proxier.requestFullSync();
    await s.sync();
    expect(s.host.ipt.IPv4.rules("filter", "INPUT")).toContain(
      '-m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER',
    );
  });
});

describe("health checks and metrics", () => {
  test("the health check servers get the node ports and local endpoint counts after a sync", async () => {
    const seen: { services?: ReadonlyMap<string, number>; endpoints?: ReadonlyMap<string, number> } = {};
    const s = setup({
      deps: {
        healthCheck: {
          syncServices: (m) => {
            seen.services = new Map(m);
          },
          syncEndpoints: (m) => {
            seen.endpoints = new Map(m);
          },
        },
      },
    });
    s.cluster.apply(
      service(
        "ns1",
        "lb",
        {
          type: "LoadBalancer",
          clusterIP: "198.51.100.70",
          externalTrafficPolicy: "Local",
          healthCheckNodePort: 32000,
          ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30070 }],
        },
        { loadBalancer: { ingress: [{ ip: "203.0.113.70" }] } },
      ),
      endpointSlice("ns1", "lb", [ep("192.0.2.12", { node: "node-a" })]),
    );
    await s.sync();
    expect(seen.services).toEqual(new Map([["ns1/lb", 32000]]));
    expect(seen.endpoints).toEqual(new Map([["ns1/lb", 1]]));
  });

  test("Services with a Local policy and no local endpoint are counted once per Service", async () => {
    const s = setup();
    s.cluster.apply(
      service("ns1", "itp", {
        clusterIP: "198.51.100.43",
        internalTrafficPolicy: "Local",
        ports: [
          { name: "a", port: 80, protocol: "TCP" },
          { name: "b", port: 81, protocol: "TCP" },
        ],
      }),
      endpointSlice("ns1", "itp", [ep("192.0.2.11")], {
        ports: [
          { name: "a", port: 8080, protocol: "TCP" },
          { name: "b", port: 8081, protocol: "TCP" },
        ],
      }),
    );
    await s.sync();
    const values = (await s.metrics.syncProxyRulesNoLocalEndpointsTotal.get()).values;
    expect(values.find((v) => v.labels.traffic_policy === "internal")?.value).toBe(1);
    expect(values.find((v) => v.labels.traffic_policy === "external")?.value).toBe(0);
  });
});
