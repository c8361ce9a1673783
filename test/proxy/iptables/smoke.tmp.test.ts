import { expect, test } from "bun:test";
import { endpointSlice, ep, service, setup } from "./harness.ts";

test("smoke", async () => {
  const s = setup();
  s.cluster.apply(
    service("ns1", "svc1", { clusterIP: "198.51.100.41" }),
    endpointSlice("ns1", "svc1", [
      ep("192.0.2.130"),
      ep("192.0.2.131"),
      ep("192.0.2.132", { node: "node-a" }),
    ]),
    service(
      "ns2",
      "svc2",
      {
        type: "LoadBalancer",
        clusterIP: "198.51.100.42",
        externalTrafficPolicy: "Local",
        externalIPs: ["203.0.113.22"],
        healthCheckNodePort: 30000,
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3001 }],
      },
      { loadBalancer: { ingress: [{ ip: "203.0.113.100" }] } },
    ),
    endpointSlice("ns2", "svc2", [ep("192.0.2.140")]),
    service(
      "ns5",
      "svc5",
      {
        type: "LoadBalancer",
        clusterIP: "198.51.100.45",
        sessionAffinity: "ClientIP",
        loadBalancerSourceRanges: [" 203.0.113.0/25"],
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3002 }],
      },
      { loadBalancer: { ingress: [{ ip: "203.0.113.105" }] } },
    ),
    endpointSlice("ns5", "svc5", [ep("192.0.2.150")]),
    service("ns6", "svc6", { clusterIP: "198.51.100.46" }),
  );
  const out = await s.sync();
  console.log(out);
  console.log(await s.ipt.saveAll());
  expect(out).toContain("*filter");
});
