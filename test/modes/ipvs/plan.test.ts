import { describe, expect, test } from "bun:test";
import { DEFAULT_FEATURE_GATES } from "../../../src/config/feature-gates.ts";
import { setCatalog } from "../../../src/modes/ipvs/ipsets.ts";
import { type PlanContext, planServicePort } from "../../../src/modes/ipvs/port-plan.ts";
import {
  addressSortKey,
  desiredReals,
  IPVS_SCHEDULERS,
  schedulerFlags,
} from "../../../src/modes/ipvs/virtual-servers.ts";
import { familyView } from "../../../src/proxy/family-view.ts";
import type { ServicePortInfo } from "../../../src/proxy/types.ts";
import { compareIPs } from "../../../src/util/net/address.ts";

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
    expect(reals.map((r) => r.id)).toEqual(["192.0.2.11:80", "192.0.2.11:81", "192.0.2.12:80"]);
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
    expect(plan.entries.filter((e) => e.set === "loadBalancerSourceCIDR")).toEqual([
      { set: "loadBalancerSourceCIDR", entry: "203.0.113.70,tcp:80,198.51.100.0/24" },
    ]);
    expect(plan.virtualServers.map((v) => v.key)).toEqual(["TCP/198.51.100.70:80", "TCP/203.0.113.70:80"]);
  });

  test("a NodePort with no node address to listen on: no NodePort, no health check port", () => {
    const svc = port({ serviceType: "LoadBalancer", nodePort: 30070, healthCheckNodePort: 32000 });
    const plan = planServicePort(familyView(svc, "IPv4")!, [], context({ nodePortIPs: [] }));
    expect(plan.virtualServers.map((v) => v.key)).toEqual(["TCP/198.51.100.70:80"]);
    expect(plan.entries.map((e) => e.set)).toEqual(["clusterIP"]);
  });

  test("a port the family does not serve has no view, so no plan", () => {
    expect(familyView(port({}), "IPv6")).toBeUndefined();
  });
});
