// Names in the kube-proxy tables as upstream's nftables mode spells them (its documented
// examples: "ULMVA6XW-ns1/svc1/tcp/p80" and "5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80").

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { HostInputError } from "../../../src/host/errors.ts";
import { nftIdentifierProblem } from "../../../src/host/nft/script-text.ts";
import { NftTransaction } from "../../../src/host/nft/transaction.ts";
import {
  endpointNames,
  isAffinitySetName,
  isServiceChainName,
  portChainNames,
} from "../../../src/modes/nftables/names.ts";
import { createTestNetns } from "../../host/iptables/netns.ts";

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

// ---- every valid Kubernetes name makes names nft takes; nothing else gets through ----

const label = (max: number, first: string) =>
  fc
    .tuple(
      fc.constantFrom(...first),
      fc.string({ unit: fc.constantFrom(..."abcxyz0189-"), maxLength: max - 2 }),
      fc.constantFrom(..."az09"),
    )
    .map(([a, mid, z]) => `${a}${mid}${z}`.slice(0, max));
const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join("."));
const ipv6 = fc.ipV6();
const validPort = fc.record({
  namespace: label(63, "abz09"),
  name: label(63, "abz"),
  port: fc.oneof(fc.constant(""), label(15, "abz")),
  protocol: fc.constantFrom("TCP", "UDP", "SCTP"),
  ip: fc.oneof(ipv4, ipv6),
  targetPort: fc.integer({ min: 1, max: 65535 }),
});

describe("nftables names from valid Kubernetes names (property; real nft in a netns)", () => {
  test("are always names nftIdentifier takes", () => {
    fc.assert(
      fc.property(validPort, (p) => {
        const proto = p.protocol.toLowerCase();
        const c = portChainNames(p, proto);
        for (const name of [c.cluster, c.local, c.external, c.firewall]) {
          expect(nftIdentifierProblem(name)).toBeUndefined();
        }
        const e = endpointNames(p, proto, p.ip, p.targetPort);
        expect(nftIdentifierProblem(e.chain)).toBeUndefined();
        expect(nftIdentifierProblem(e.affinitySet)).toBeUndefined();
      }),
      { seed: 4242, numRuns: 1000 },
    );
  });

  test("and nft takes them", async () => {
    const ns = await createTestNetns();
    try {
      const tx = new NftTransaction("ip", "kpts-names");
      tx.add({ kind: "table" });
      for (const p of fc.sample(validPort, { seed: 4243, numRuns: 150 })) {
        const proto = p.protocol.toLowerCase();
        const c = portChainNames(p, proto);
        const e = endpointNames(p, proto, p.ip, p.targetPort);
        for (const name of [c.cluster, c.local, c.external, c.firewall, e.chain])
          tx.add({ kind: "chain", name });
        tx.add({
          kind: "set",
          name: e.affinitySet,
          type: "ipv4_addr",
          flags: ["dynamic", "timeout"],
          timeoutSeconds: 10,
        });
        tx.add({ kind: "rule", chain: c.cluster, rule: `ip saddr @${e.affinitySet} goto ${e.chain}` });
      }
      const res = await ns.exec.run({ cmd: "nft", args: ["-c", "-f", "-"], stdin: tx.render() });
      expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: "" });
    } finally {
      await ns.remove();
    }
  }, 60_000);

  test("a name that is no nft name is refused, not written", () => {
    expect(() => portChainNames({ ...PORT, name: "svc 1" }, "tcp")).toThrow(HostInputError);
    expect(() => portChainNames({ ...PORT, namespace: "ns;flush" }, "tcp")).toThrow(HostInputError);
    expect(() => endpointNames(PORT, "tcp", "10.0.0.1\n", 80)).toThrow(HostInputError);
  });
});
