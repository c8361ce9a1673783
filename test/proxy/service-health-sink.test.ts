import { describe, expect, test } from "bun:test";
import { nullLogger } from "../../src/log/logger.ts";
import { EndpointsMap } from "../../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../../src/proxy/endpoints-tracker.ts";
import { localEndpointCounts } from "../../src/proxy/service-health-sink.ts";
import { ServiceMap } from "../../src/proxy/service-map.ts";
import { ServiceChangeTracker } from "../../src/proxy/service-tracker.ts";
import { ep, service, slice } from "./builders.ts";

function cluster(clusterIPs: string[]) {
  const services = new ServiceMap();
  const endpoints = new EndpointsMap();
  const st = new ServiceChangeTracker({ logger: nullLogger });
  const et = new EndpointsChangeTracker({ nodeName: "node-a", logger: nullLogger });
  st.serviceChanged(
    undefined,
    service("web", {
      type: "LoadBalancer",
      externalTrafficPolicy: "Local",
      healthCheckNodePort: 32000,
      clusterIP: clusterIPs[0],
      clusterIPs,
    }),
  );
  // On this node: two IPv4 endpoints and one IPv6 one (one pod dual-stack); the rest elsewhere.
  et.endpointSliceChanged(
    slice("web-v4", [ep("192.0.2.1", "node-a"), ep("192.0.2.2", "node-a"), ep("192.0.2.3")]),
    false,
  );
  et.endpointSliceChanged(
    slice("web-v6", [ep("2001:db8::1", "node-a"), ep("2001:db8::2")], { addressType: "IPv6" }),
    false,
  );
  services.update(st);
  endpoints.update(et);
  return { services, endpoints };
}

describe("health check local endpoint counts", () => {
  test("a dual-stack Service counts its primary family's local endpoints: 2, not 3", () => {
    const { services, endpoints } = cluster(["198.51.100.10", "2001:db8:2::10"]);
    expect(localEndpointCounts(services, endpoints)).toEqual(new Map([["ns/web", 2]]));
  });

  test("an IPv6-primary Service counts its IPv6 endpoints", () => {
    const v6 = cluster(["2001:db8:2::10", "198.51.100.10"]);
    expect(localEndpointCounts(v6.services, v6.endpoints)).toEqual(new Map([["ns/web", 1]]));
  });

  test("a single-stack Service ignores endpoints of the other family", () => {
    const { services, endpoints } = cluster(["198.51.100.10"]);
    expect(localEndpointCounts(services, endpoints)).toEqual(new Map([["ns/web", 2]]));
  });
});
