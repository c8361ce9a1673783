// Our table against upstream's expected one, by behaviour: upstream v1.37's TestOverallNFTablesRules
// dumps (golden/, IPv4 and IPv6) are loaded into a fake nft as they stand, our proxier syncs the
// same inputs (upstream-overall.ts), and a grid of new connections (pods, the node, clients
// inside and outside the LoadBalancer source range, hairpinning endpoints; to every ClusterIP,
// an unallocated one, external and LB IPs and node IPs; on Service ports and NodePorts; TCP and
// UDP) is traced through both. Every packet must end the same way: same DNAT targets, drop or
// reject, same masquerade. Upstream's test has no flow rows of its own; this stands in for them
// and also checks the tracer on upstream's own rule forms (numgen maps and vmaps).

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { FakeNftTable } from "../../../src/host/nft/testing/fake.ts";
import { FakeNft } from "../../../src/host/nft/testing/fake.ts";
import { type L4Protocol, tracePacket } from "../../../src/host/nft/trace.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { TRACER_NODE_IPS, tableSnapshot } from "./upstream-fake-proxier.ts";
import { overallSetup } from "./upstream-overall.ts";

const ORDER: Readonly<Record<string, number>> = { table: 0, chain: 1, set: 1, map: 1, rule: 2, element: 3 };

/**
 * Upstream's expected dump as a table: its `add` lines (without the localhost NodePort rejects,
 * which need an alpha gate we do not turn on, as in upstream-golden.test.ts), objects before the
 * rules that name them, as nft needs them.
 */
function upstreamTable(golden: string, family: "ip" | "ip6"): FakeNftTable {
  const lines = readFileSync(join(import.meta.dir, "golden", golden), "utf8")
    .split("\n")
    .filter((l) => l.startsWith("add ") && !l.includes("localhost-nodeport"));
  lines.sort((a, b) => (ORDER[a.split(" ")[1]!] ?? 9) - (ORDER[b.split(" ")[1]!] ?? 9));
  const nft = new FakeNft();
  const r = nft.handle({ cmd: "nft", args: ["-f", "-"], stdin: lines.join("\n") });
  if (r.code !== 0) throw new Error(`upstream's dump does not load: ${r.stderr}`);
  return nft.tableState(family, "kube-proxy")!;
}

interface Grid {
  readonly sources: readonly string[];
  readonly destinations: readonly string[];
}

const PORTS = [80, 443, 3001, 3002, 3003];
const PROTOCOLS: readonly L4Protocol[] = ["tcp", "udp"];

const V4: Grid = {
  sources: [
    "10.0.0.2",
    "192.168.0.2",
    "203.0.113.2",
    "203.0.113.200",
    "10.180.0.1",
    "10.180.0.3",
    "10.180.0.4",
    "10.180.0.5",
  ],
  destinations: [
    ...[41, 42, 43, 44, 45, 46, 50].map((n) => `172.30.0.${n}`),
    "172.31.0.1",
    "192.168.99.22",
    "192.168.99.33",
    "1.2.3.4",
    "5.6.7.8",
    "192.168.0.2",
    "192.168.1.2",
    "192.168.99.11",
  ],
};

const V6: Grid = {
  sources: [
    "fd00:10::2",
    "2001:db8::1",
    "2001:db8:203::2",
    "2001:db8:204::2",
    "fd00:10:180::1",
    "fd00:10:180::3",
    "fd00:10:180::4",
    "fd00:10:180::5",
  ],
  destinations: [
    ...[41, 42, 43, 44, 45, 46, 50].map((n) => `fd00:172:30::${n}`),
    "fd00:10:96::50",
    "2001:db8:99::22",
    "2001:db8:99::33",
    "5555::1",
    "5555::2",
    "2001:db8::1",
    "2001:db8:1::2",
  ],
};

describe("nftables: our TestOverallNFTablesRules table routes packets as upstream's expected one", () => {
  const cases: [IPFamily, "ip" | "ip6", string, Grid][] = [
    ["IPv4", "ip", "upstream-1.37-overall.nft", V4],
    ["IPv6", "ip6", "upstream-1.37-overall-ipv6.nft", V6],
  ];
  for (const [family, nftFamily, golden, grid] of cases) {
    test(family, async () => {
      const theirs = upstreamTable(golden, nftFamily);
      const s = overallSetup(family);
      await s.sync();
      const ours = tableSnapshot(s, family);
      const differences: string[] = [];
      const outputs = new Set<string>();
      for (const saddr of grid.sources)
        for (const daddr of grid.destinations)
          for (const dport of PORTS)
            for (const protocol of PROTOCOLS) {
              const packet = { saddr, daddr, dport, protocol };
              const opts = { family: nftFamily, localIPs: TRACER_NODE_IPS };
              const a = tracePacket(theirs, packet, opts);
              const b = tracePacket(ours, packet, opts);
              outputs.add(
                `${a.output === "" ? "none" : a.output.replace(/[\d.:[\]a-f]+:\d+/g, "dnat")} masq=${a.masq}`,
              );
              if (a.output !== b.output || a.masq !== b.masq)
                differences.push(
                  `${saddr} -> ${daddr}:${dport}/${protocol}: upstream ${a.output || '""'} masq=${a.masq}, ours ${b.output || '""'} masq=${b.masq}`,
                );
            }
      expect(differences).toEqual([]);
      // The grid reaches every kind of outcome, so agreeing means something.
      expect([...outputs].sort()).toEqual(
        expect.arrayContaining([
          "DROP masq=false",
          "REJECT masq=false",
          "dnat masq=false",
          "dnat masq=true",
          "dnat, dnat masq=true",
          "none masq=false",
        ]),
      );
    });
  }
});
