// Names in the kube-proxy tables as upstream's nftables mode spells them (its documented
// examples: "ULMVA6XW-ns1/svc1/tcp/p80" and "5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80").

import { describe, expect, test } from "bun:test";
import {
  endpointNames,
  isAffinitySetName,
  isServiceChainName,
  portChainNames,
} from "../../../src/modes/nftables/names.ts";

const PORT = { namespace: "ns1", name: "svc1", port: "p80", protocol: "TCP" } as const;

describe("nftables names", () => {
  test("a service port's four chains share one hashed base", () => {
    expect(portChainNames(PORT, "tcp")).toEqual({
      cluster: "service-ULMVA6XW-ns1/svc1/tcp/p80",
      local: "local-ULMVA6XW-ns1/svc1/tcp/p80",
      external: "external-ULMVA6XW-ns1/svc1/tcp/p80",
      firewall: "firewall-ULMVA6XW-ns1/svc1/tcp/p80",
    });
  });

  test("an endpoint's chain and affinity set", () => {
    expect(endpointNames(PORT, "tcp", "10.180.0.1", 80)).toEqual({
      chain: "endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80",
      affinitySet: "affinity-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80",
    });
  });

  test("an IPv6 endpoint's colons become dots (colons are not allowed in names)", () => {
    const n = endpointNames(PORT, "tcp", "2001:db8::1", 80);
    expect(n.chain).toMatch(/^endpoint-[A-Z2-7]{8}-ns1\/svc1\/tcp\/p80__2001\.db8\.\.1\/80$/);
  });

  test("an unnamed port ends in an empty segment, as upstream's", () => {
    const n = portChainNames({ ...PORT, port: "" }, "udp");
    expect(n.cluster).toMatch(/^service-[A-Z2-7]{8}-ns1\/svc1\/udp\/$/);
  });

  test("a name too long for nft is cut with ... after its hash", () => {
    const long = {
      namespace: "n".repeat(63),
      name: "s".repeat(63),
      port: "p".repeat(63),
      protocol: "TCP",
    } as const;
    const n = endpointNames(long, "tcp", "2001:db8:1234:5678:9abc:def0:1234:5678", 65535);
    expect(n.chain.length).toBe("endpoint-".length + 240);
    expect(n.chain.endsWith("...")).toBe(true);
  });

  test("service chains are told from fixed ones by their slash; affinity sets by prefix", () => {
    expect(isServiceChainName("service-ULMVA6XW-ns1/svc1/tcp/p80")).toBe(true);
    expect(isServiceChainName("services")).toBe(false);
    expect(isServiceChainName("mark-for-masquerade")).toBe(false);
    expect(isAffinitySetName("affinity-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80")).toBe(true);
    expect(isAffinitySetName("cluster-ips")).toBe(false);
  });
});
