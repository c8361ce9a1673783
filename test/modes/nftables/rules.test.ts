// Golden tests of what the nftables proxier writes, from upstream's documented behaviour of its
// nftables mode: the fixed table, dispatch maps, per-service chains with numgen, affinity,
// masquerading, traffic policies, source ranges, endpoints that cannot serve, and the
// incremental syncs that touch only what changed.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { endpointSlice, ep, NODE, service } from "../../support/proxy-cluster.ts";
import { setupNft } from "./harness.ts";

const GOLDEN = join(import.meta.dir, "golden");
const golden = (name: string) => readFileSync(join(GOLDEN, name), "utf8");

describe("full sync", () => {
  test("the whole first transaction of a small cluster", async () => {
    const s = setupNft();
    s.cluster.apply(
      service("ns1", "svc1", { clusterIP: "198.51.100.1", clusterIPs: ["198.51.100.1"] }),
      endpointSlice("ns1", "svc1", [ep("192.0.2.10"), ep("192.0.2.11", { node: NODE })]),
      service("ns2", "np", {
        type: "NodePort",
        clusterIP: "198.51.100.2",
        clusterIPs: ["198.51.100.2"],
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30080 }],
      }),
      endpointSlice("ns2", "np", [ep("192.0.2.20")]),
      service("ns3", "empty", { clusterIP: "198.51.100.3", clusterIPs: ["198.51.100.3"] }),
    );
    expect(await s.sync()).toBe(golden("small-cluster.nft"));
  });
});
