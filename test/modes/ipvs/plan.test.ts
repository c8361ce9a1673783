import { describe, expect, test } from "bun:test";
import { DEFAULT_FEATURE_GATES } from "../../../src/config/feature-gates.ts";
import { compareKeys, renderRestore } from "../../../src/host/ipvs/format.ts";
import { ipPortEntry } from "../../../src/modes/ipvs/entries.ts";
import { setCatalog } from "../../../src/modes/ipvs/ipsets.ts";
import { IpvsChangeList } from "../../../src/modes/ipvs/ipvs-diff.ts";
import { type PlanContext, planningServicePort, planServicePort } from "../../../src/modes/ipvs/port-plan.ts";
import {
  addressSortKey,
  DesiredVirtualServer,
  desiredReals,
  IPVS_SCHEDULERS,
  realId,
  schedulerFlags,
  virtualServerOrder,
  virtualServerTemplate,
} from "../../../src/modes/ipvs/virtual-servers.ts";
import { familyView } from "../../../src/proxy/family-view.ts";
import type { ServicePortInfo } from "../../../src/proxy/types.ts";
import { compareIPs } from "../../../src/util/net/address.ts";
import { lowerProtocol } from "../../../src/util/net/protocol.ts";
import { ITEMS_PER_STEP } from "../../../src/util/time-slice.ts";

describe("real server order", () => {
  test("the sort key orders addresses byte-wise, as ipvsadm lists real servers", () => {
    const v4 = ["192.0.2.100", "192.0.2.9", "10.0.0.1", "192.0.2.10", "203.0.113.1", "9.255.255.255"];
    const v6 = [
      "2001:db8::10",
      "2001:db8::9",
      "2001:db8:0:1::",
      "::ffff:192.0.2.1",
      "2001:db8::a",
      "fe80::1",
    ];
    for (const list of [v4, v6]) {
      const byKey = [...list].sort((a, b) => (addressSortKey(a) < addressSortKey(b) ? -1 : 1));
      expect(byKey).toEqual([...list].sort(compareIPs));
    }
  });

  test("real servers are deduplicated by ip:port and sorted by address then port", () => {
    const reals = desiredReals([
      { ip: "192.0.2.12", port: 80 },
      { ip: "192.0.2.11", port: 81 },
      { ip: "192.0.2.11", port: 80 },
      { ip: "192.0.2.12", port: 80 },
    ]);
    expect(reals.toArray().map(realId)).toEqual(["192.0.2.11:80", "192.0.2.11:81", "192.0.2.12:80"]);
    expect(reals.at(0)).toEqual({ address: "192.0.2.11", port: 80, weight: 1 });
  });
});

describe("schedulers", () => {
  test("only mh carries a scheduler flag (upstream's FlagSourceHash = mh-port)", () => {
    const flagged = IPVS_SCHEDULERS.filter((s) => schedulerFlags(s).length > 0);
    expect(flagged).toEqual(["mh"]);
    expect(schedulerFlags("mh")).toEqual(["mh-port"]);
  });
});

function port(extra: Partial<ServicePortInfo>): ServicePortInfo {
  return {
    name: { namespace: "ns1", name: "lb", port: "p80", protocol: "TCP" },
    id: "ns1/lb:p80",
    clusterIPs: { IPv4: "198.51.100.70" },
    port: 80,
    protocol: "TCP",
    nodePort: 0,
    externalIPs: [],
    loadBalancerVIPs: [],
    loadBalancerSourceRanges: [],
    sessionAffinity: { type: "None", timeoutSeconds: 0 },
    externalPolicyLocal: false,
    internalPolicyLocal: false,
    healthCheckNodePort: 0,
    topologyMode: "",
    trafficDistribution: "",
    serviceType: "ClusterIP",
    ...extra,
  };
}

const context = (extra: Partial<PlanContext> = {}): PlanContext => ({
  family: "IPv4",
  sets: setCatalog("IPv4"),
  scheduler: { scheduler: "rr", flags: [] },
  nodeName: "node-a",
  nodeLabels: {},
  featureGates: DEFAULT_FEATURE_GATES,
  nodeIP: "203.0.113.10",
  nodePortIPs: ["203.0.113.10"],
  nodeAddresses: new Set(["203.0.113.10"]),
  ...extra,
});

describe("port plans", () => {
  test("an entry ipset would refuse is left out and reported; the rest of the port stays", () => {
    const svc = port({
      serviceType: "LoadBalancer",
      loadBalancerVIPs: ["203.0.113.70"],
      // The trackers never produce this; a plan must still survive it.
      loadBalancerSourceRanges: ["198.51.100.0/24", "not-a-cidr"],
    });
    const plan = planServicePort(familyView(svc, "IPv4")!, [], context());
    expect(plan.rejected).toEqual([
      { set: "loadBalancerSourceCIDR", entry: "203.0.113.70,tcp:80,not-a-cidr" },
    ]);
    expect(plan.entries.loadBalancerSourceCIDR).toEqual(["203.0.113.70,tcp:80,198.51.100.0/24"]);
    expect(plan.virtualServers.map((v) => v.key)).toEqual(["198.51.100.70,tcp:80", "203.0.113.70,tcp:80"]);
  });

  test("a NodePort with no node address to listen on: no NodePort, no health check port", () => {
    const svc = port({ serviceType: "LoadBalancer", nodePort: 30070, healthCheckNodePort: 32000 });
    const plan = planServicePort(familyView(svc, "IPv4")!, [], context({ nodePortIPs: [] }));
    expect(plan.virtualServers.map((v) => v.key)).toEqual(["198.51.100.70,tcp:80"]);
    expect(plan.entries).toEqual({ clusterIP: ["198.51.100.70,tcp:80"] });
  });

  test("a port the family does not serve has no view, so no plan", () => {
    expect(familyView(port({}), "IPv6")).toBeUndefined();
  });

  test("a port of long lists is planned in steps, the same plan as at once", () => {
    const n = ITEMS_PER_STEP * 40;
    const svc = port({
      serviceType: "LoadBalancer",
      externalIPs: Array.from({ length: n }, (_, i) => `10.3.${i >> 8}.${i & 255}`),
      loadBalancerVIPs: ["203.0.113.70"],
      loadBalancerSourceRanges: Array.from({ length: n }, (_, i) => `10.4.${i >> 8}.${i & 255}/32`),
    });
    const view = familyView(svc, "IPv4")!;
    const steps = planningServicePort(view, [], context());
    let yields = 0;
    let next = steps.next();
    for (; !next.done; next = steps.next()) yields++;
    expect(yields).toBeGreaterThanOrEqual((2 * n) / ITEMS_PER_STEP - 2);
    expect(next.value.members).toEqual(planServicePort(view, [], context()).members);
  });
});

describe("virtual servers of one port", () => {
  const settings = { scheduler: "rr", flags: [] };
  const reals = desiredReals([
    { ip: "192.0.2.12", port: 8080 },
    { ip: "192.0.2.11", port: 8080 },
  ]);

  test("share one template: a virtual server holds its address, its key and a reference", () => {
    const svc = port({ externalIPs: ["203.0.113.71", "203.0.113.72", "203.0.113.73"] });
    const plan = planServicePort(familyView(svc, "IPv4")!, [], context());
    const external = plan.virtualServers.slice(1);
    expect(external.map((v) => v.key)).toEqual([
      "203.0.113.71,tcp:80",
      "203.0.113.72,tcp:80",
      "203.0.113.73,tcp:80",
    ]);
    expect(new Set(external.map((v) => v.template)).size).toBe(1);
    expect(Object.keys(external[0]!).sort()).toEqual(["address", "key", "template"]);
  });

  test("a key is spelled as the ipset member for the same address, protocol and port", () => {
    for (const protocol of ["TCP", "UDP", "SCTP"] as const)
      for (const address of ["198.51.100.7", "2001:db8::7"]) {
        const t = virtualServerTemplate("x", 8443, protocol, 0, settings, reals);
        expect(new DesiredVirtualServer(address, t).key).toBe(
          ipPortEntry(address, lowerProtocol(protocol), 8443),
        );
      }
  });

  test("read as VirtualServers, with the template's settings", () => {
    const t = virtualServerTemplate("ns/web:http", 443, "TCP", 10800, settings, reals);
    const vs = new DesiredVirtualServer("2001:db8::5", t);
    expect(vs.key).toBe("2001:db8::5,tcp:443");
    expect([vs.address, vs.port, vs.protocol, vs.scheduler, vs.flags, vs.timeout]).toEqual([
      "2001:db8::5",
      443,
      "TCP",
      "rr",
      [],
      10800,
    ]);
    expect(vs.reals.toArray()).toEqual([
      { address: "192.0.2.11", port: 8080, weight: 1 },
      { address: "192.0.2.12", port: 8080, weight: 1 },
    ]);
  });

  test("virtualServerOrder sorts as compareKeys does (protocol number, address bytes, port)", () => {
    const addresses = [
      "198.51.100.9",
      "198.51.100.10",
      "10.0.0.1",
      "203.0.113.1",
      "9.255.255.255",
      "255.255.255.255",
      "0.0.0.0",
      "128.0.0.0",
    ];
    const all: DesiredVirtualServer[] = [];
    for (const protocol of ["UDP", "SCTP", "TCP"] as const)
      for (const p of [8080, 80, 443])
        for (const a of addresses)
          all.push(new DesiredVirtualServer(a, virtualServerTemplate("x", p, protocol, 0, settings, reals)));
    const expected = [...all].sort(compareKeys).map((v) => v.key);
    expect(virtualServerOrder(all.reverse()).map((v) => v.key)).toEqual(expected);
    // Any arrangement (the result is rearranged in place, a cycle at a time).
    const shuffled = all.map((v, i) => ({ v, rank: (i * 37) % all.length })).sort((a, b) => a.rank - b.rank);
    expect(new Set(shuffled.map((s) => s.rank)).size).toBe(all.length);
    expect(virtualServerOrder(shuffled.map((s) => s.v)).map((v) => v.key)).toEqual(expected);
    const v6 = ["2001:db8::10", "2001:db8::9", "fe80::1", "2001:db8:0:1::", "::ffff:192.0.2.1"].map(
      (a) => new DesiredVirtualServer(a, virtualServerTemplate("x", 80, "TCP", 0, settings, reals)),
    );
    expect(virtualServerOrder(v6).map((v) => v.key)).toEqual([...v6].sort(compareKeys).map((v) => v.key));
    // An address that is not a canonical dotted quad sends the whole list down the string path.
    const mixed = [...all.slice(0, 20), new DesiredVirtualServer("1.2.3.4", all[0]!.template)];
    expect(virtualServerOrder(mixed).map((v) => v.key)).toEqual(
      [...mixed].sort(compareKeys).map((v) => v.key),
    );
    const odd = [...mixed, new DesiredVirtualServer("::1", all[0]!.template)];
    expect(virtualServerOrder(odd).map((v) => v.key)).toEqual([...odd].sort(compareKeys).map((v) => v.key));
  });

  test("a change list holds a new virtual server once per batch and reads as one change per line", () => {
    const t = virtualServerTemplate("x", 80, "TCP", 0, settings, reals);
    const a = new DesiredVirtualServer("198.51.100.1", t);
    const b = new DesiredVirtualServer(
      "198.51.100.2",
      virtualServerTemplate("x", 80, "TCP", 0, settings, desiredReals([])),
    );
    const list = new IpvsChangeList();
    list.addNew(a);
    list.push("realsDown", { op: "delete-real", key: b, real: { address: "192.0.2.99", port: 1 } });
    list.addNew(b);
    list.push("services", { op: "edit-service", server: b });
    expect(list.services.length + list.realsUp.length).toBe(4);
    const read: unknown[] = [];
    for (const c of list) read.push({ ...c });
    expect(read).toEqual([
      { op: "add-service", server: a },
      { op: "add-service", server: b },
      { op: "edit-service", server: b },
      { op: "add-reals", key: a, reals: a.reals },
      { op: "delete-real", key: b, real: { address: "192.0.2.99", port: 1 } },
    ]);
    expect(list.length).toBe(6);
    expect(renderRestore(list)).toBe(
      [
        "-A -t 198.51.100.1:80 -s rr",
        "-A -t 198.51.100.2:80 -s rr",
        "-E -t 198.51.100.2:80 -s rr",
        "-a -t 198.51.100.1:80 -r 192.0.2.11:8080 -m -w 1",
        "-a -t 198.51.100.1:80 -r 192.0.2.12:8080 -m -w 1",
        "-d -t 198.51.100.2:80 -r 192.0.2.99:1",
        "",
      ].join("\n"),
    );
  });
});
