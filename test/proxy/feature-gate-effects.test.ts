// The v1.31 gates that change what kube-proxy programs, each proven where it takes effect:
// LoadBalancerIPMode in the service model (which LoadBalancer IPs count), and TopologyAwareHints
// / ServiceTrafficDistribution in both proxiers' endpoint choice. The gates come in as an
// effective-gates object, never from global state.
import { describe, expect, test } from "bun:test";
import { DEFAULT_FEATURE_GATES, effectiveFeatureGates } from "../../src/config/feature-gates.ts";
import type { ServiceObject } from "../../src/k8s/objects.ts";
import { ProblemList } from "../../src/proxy/problems.ts";
import { isVIPMode } from "../../src/proxy/service-fields.ts";
import { servicePorts } from "../../src/proxy/service-port.ts";
import { ServiceChangeTracker } from "../../src/proxy/service-tracker.ts";
import { chainRules, endpointSlice, ep, service, setup } from "../modes/iptables/harness.ts";
import { setup as ipvsSetup, realsOf } from "../modes/ipvs/harness.ts";
import { service as portService } from "./builders.ts";

const ipModeOff = effectiveFeatureGates({ LoadBalancerIPMode: false });

function lbService(): ServiceObject {
  return portService(
    "lb",
    {
      type: "LoadBalancer",
      clusterIP: "198.51.100.10",
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

describe("LoadBalancerIPMode", () => {
  const vips = (gates = DEFAULT_FEATURE_GATES) =>
    servicePorts(lbService(), "ns", "lb", new ProblemList({ kind: "Service", name: "lb" }), gates)[0]
      ?.loadBalancerVIPs;

  test("on (the default): an ipMode Proxy ingress IP is not programmed", () => {
    expect(vips()).toEqual(["203.0.113.100", "203.0.113.101"]);
  });

  test("off: every ingress IP is programmed, ipMode or not", () => {
    expect(vips(ipModeOff)).toEqual(["203.0.113.100", "203.0.113.101", "203.0.113.102"]);
  });

  test("only a missing ipMode or VIP counts as VIP mode while the gate is on", () => {
    expect([undefined, null, "VIP", "Proxy", "vip", ""].map((m) => isVIPMode(m, true))).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(isVIPMode("Proxy", false)).toBe(true);
  });

  test("the service tracker applies the gates it was given", () => {
    const tracker = new ServiceChangeTracker({ featureGates: ipModeOff });
    tracker.serviceChanged(undefined, lbService());
    const change = [...tracker.checkout().values()][0];
    expect(change?.current.ports[0]?.loadBalancerVIPs).toContain("203.0.113.102");
  });
});

describe("topology gates in the proxiers", () => {
  const zoneA = { "topology.kubernetes.io/zone": "zone-a" };
  // trafficDistribution: PreferClose, as the EndpointSlice controller hints it: no annotation.
  const objects = () => [
    service("ns1", "svc1", { clusterIP: "198.51.100.41", trafficDistribution: "PreferClose" }),
    endpointSlice("ns1", "svc1", [
      ep("192.0.2.11", { zone: "zone-a", hints: ["zone-a"] }),
      ep("192.0.2.12", { zone: "zone-b", hints: ["zone-b"] }),
    ]),
  ];
  const bothOff = effectiveFeatureGates({ TopologyAwareHints: false, ServiceTrafficDistribution: false });
  const distributionOff = effectiveFeatureGates({ ServiceTrafficDistribution: false });

  async function iptablesEndpoints(gates = DEFAULT_FEATURE_GATES): Promise<string[]> {
    const s = setup({ deps: { featureGates: gates } });
    s.cluster.node = { ...s.cluster.node!, labels: zoneA };
    s.cluster.apply(...objects());
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

  test("iptables: hints keep traffic in the zone by default, and are ignored with both gates off", async () => {
    expect(await iptablesEndpoints()).toEqual(["192.0.2.11:8080"]);
    expect(await iptablesEndpoints(bothOff)).toEqual(["192.0.2.11:8080", "192.0.2.12:8080"]);
    // Without ServiceTrafficDistribution the Service would need the topology-mode annotation.
    expect(await iptablesEndpoints(distributionOff)).toEqual(["192.0.2.11:8080", "192.0.2.12:8080"]);
  });

  async function ipvsReals(gates = DEFAULT_FEATURE_GATES): Promise<string[] | undefined> {
    const s = ipvsSetup({ deps: { featureGates: gates } });
    s.cluster.node = { ...s.cluster.node!, labels: zoneA };
    s.cluster.apply(...objects());
    await s.sync();
    return realsOf(s.host, "TCP", "198.51.100.41", 80);
  }

  test("ipvs: the same gates decide the real servers", async () => {
    expect(await ipvsReals()).toEqual(["192.0.2.11:8080 w1"]);
    expect(await ipvsReals(bothOff)).toEqual(["192.0.2.11:8080 w1", "192.0.2.12:8080 w1"]);
  });
});
