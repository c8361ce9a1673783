// The v1.37 gates and GA behaviours that change what kube-proxy programs, each proven where it
// takes effect: AllowServiceExternalIPs and the (now unconditional) LoadBalancer ipMode in the
// service model, and PreferSameNode / PreferSameZone hints in every proxier's endpoint choice.
// The gates come in as an effective-gates object, never from global state.
import { describe, expect, test } from "bun:test";
import { DEFAULT_FEATURE_GATES, effectiveFeatureGates } from "../../src/config/feature-gates.ts";
import type { ServiceObject } from "../../src/k8s/objects.ts";
import { ProblemList } from "../../src/proxy/problems.ts";
import { isVIPMode } from "../../src/proxy/service-fields.ts";
import { servicePorts } from "../../src/proxy/service-port.ts";
import { ServiceChangeTracker } from "../../src/proxy/service-tracker.ts";
import { chainRules, endpointSlice, ep, service, setup } from "../modes/iptables/harness.ts";
import { setup as ipvsSetup, realsOf } from "../modes/ipvs/harness.ts";
import { setupNft as nftSetup } from "../modes/nftables/harness.ts";
import { NODE } from "../support/proxy-cluster.ts";
import { service as portService } from "./builders.ts";

function lbService(): ServiceObject {
  return portService(
    "lb",
    {
      type: "LoadBalancer",
      clusterIP: "198.51.100.10",
      externalIPs: ["203.0.113.50"],
      ports: [{ name: "http", port: 80, nodePort: 30080 }],
    },
    {
      status: {
        loadBalancer: {
          ingress: [
            { ip: "203.0.113.100" },
            { ip: "203.0.113.101", ipMode: "VIP" },
            { ip: "203.0.113.102", ipMode: "Proxy" },
          ],
        },
      },
    },
  );
}

const portOf = (gates = DEFAULT_FEATURE_GATES) =>
  servicePorts(lbService(), "ns", "lb", new ProblemList({ kind: "Service", name: "lb" }), gates)[0];

describe("LoadBalancer ipMode (LoadBalancerIPMode GA since 1.32, gate gone)", () => {
  test("an ipMode Proxy ingress IP is never programmed", () => {
    expect(portOf()?.loadBalancerVIPs).toEqual(["203.0.113.100", "203.0.113.101"]);
  });

  test("only a missing ipMode or VIP counts as VIP mode", () => {
    expect([undefined, null, "VIP", "Proxy", "vip", ""].map((m) => isVIPMode(m))).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });
});

describe("AllowServiceExternalIPs (1.36, GA, on by default)", () => {
  test("on: externalIPs are programmed; off: none is, the rest of the Service is", () => {
    expect(portOf()?.externalIPs).toEqual(["203.0.113.50"]);
    const off = portOf(effectiveFeatureGates({ AllowServiceExternalIPs: false }));
    expect(off?.externalIPs).toEqual([]);
    expect(off?.loadBalancerVIPs).toEqual(["203.0.113.100", "203.0.113.101"]);
  });

  test("the service tracker applies the gates it was given", () => {
    const tracker = new ServiceChangeTracker({
      featureGates: effectiveFeatureGates({ AllowServiceExternalIPs: false }),
    });
    tracker.serviceChanged(undefined, lbService());
    const change = [...tracker.checkout().values()][0];
    expect(change?.current.ports[0]?.externalIPs).toEqual([]);
  });
});

describe("topology hints in the proxiers (PreferSameNode, then PreferSameZone)", () => {
  const zoneA = { "topology.kubernetes.io/zone": "zone-a" };
  // trafficDistribution: PreferSameNode, as the EndpointSlice controller hints it: node and zone.
  const objects = (nodeHintsFor = NODE) => [
    service("ns1", "svc1", { clusterIP: "198.51.100.41", trafficDistribution: "PreferSameNode" }),
    endpointSlice("ns1", "svc1", [
      ep("192.0.2.11", { node: nodeHintsFor, zone: "zone-a", hints: ["zone-a"], nodeHints: [nodeHintsFor] }),
      ep("192.0.2.12", { node: "node-c", zone: "zone-a", hints: ["zone-a"], nodeHints: ["node-c"] }),
      ep("192.0.2.13", { node: "node-d", zone: "zone-b", hints: ["zone-b"], nodeHints: ["node-d"] }),
    ]),
  ];

  async function iptablesEndpoints(nodeHintsFor = NODE): Promise<string[]> {
    const s = setup();
    s.cluster.node = { ...s.cluster.node!, labels: zoneA };
    s.cluster.apply(...objects(nodeHintsFor));
    const payload = await s.sync();
    const svcChain =
      payload
        .split("\n")
        .find((l) => l.startsWith(":KUBE-SVC-"))
        ?.slice(1)
        .split(" ")[0] ?? "";
    return chainRules(payload, "nat", svcChain)
      .map((r) => /-> (\S+)"/.exec(r)?.[1] ?? "")
      .filter(Boolean);
  }

  test("iptables: the endpoint hinted for this node only; none for it: the zone's", async () => {
    expect(await iptablesEndpoints()).toEqual(["192.0.2.11:8080"]);
    expect(await iptablesEndpoints("node-e")).toEqual(["192.0.2.11:8080", "192.0.2.12:8080"]);
  });

  async function ipvsReals(nodeHintsFor = NODE): Promise<string[] | undefined> {
    const s = ipvsSetup();
    s.cluster.node = { ...s.cluster.node!, labels: zoneA };
    s.cluster.apply(...objects(nodeHintsFor));
    await s.sync();
    return realsOf(s.host, "TCP", "198.51.100.41", 80);
  }

  test("ipvs: the same choice decides the real servers", async () => {
    expect(await ipvsReals()).toEqual(["192.0.2.11:8080 w1"]);
    expect(await ipvsReals("node-e")).toEqual(["192.0.2.11:8080 w1", "192.0.2.12:8080 w1"]);
  });

  async function nftDnatTargets(nodeHintsFor = NODE): Promise<string[]> {
    const s = nftSetup();
    s.cluster.node = { ...s.cluster.node!, labels: zoneA };
    s.cluster.apply(...objects(nodeHintsFor));
    const payload = await s.sync();
    return [...payload.matchAll(/dnat to (\S+)/g)].map((m) => m[1] ?? "").sort();
  }

  test("nftables: the same choice decides the DNAT targets", async () => {
    expect(await nftDnatTargets()).toEqual(["192.0.2.11:8080"]);
    expect(await nftDnatTargets("node-e")).toEqual(["192.0.2.11:8080", "192.0.2.12:8080"]);
  });

  test("PreferSameTrafficDistribution is locked on: setting it false is refused", async () => {
    const { featureGateProblems } = await import("../../src/config/feature-gates.ts");
    expect(featureGateProblems({ PreferSameTrafficDistribution: false })[0]?.message).toBe(
      "cannot set feature gate PreferSameTrafficDistribution to false, feature is locked to true",
    );
  });
});
