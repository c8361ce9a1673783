// Registered by ipvs-fake-vs-real.vm.ts, so it runs in that guest's boot (one emulated boot costs
// ~20 s), on a kernel with IPVS and dummy devices:
// the P2 hostile-object property of ipvs mode with nothing left out. Generated Services,
// EndpointSlices, Node and ServiceCIDRs (test/support/hostile-objects.ts) go through one recorded
// ipvs sync, and every input it writes — ipset restore, `ipvsadm --restore`, the kube-ipvs0
// dummy device and `ip -batch`, the iptables inputs with their `-m ipvs` rules, nfacct — is
// replayed into a namespace of this file with the real tools and must be accepted. (On the host,
// hostile-objects-kernel.property.test.ts replays all but ipvsadm and the ipvs match.)

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { clusterArb, PROPERTY_SEED } from "../support/hostile-objects.ts";
import { programOf } from "../support/hostile-sync.ts";
import { scaled } from "../support/kernel-vm.ts";
import { createRealHost, type RealHost, syncAndReplay } from "../support/real-restore.ts";

// An emulated CPU is slow: fewer cases than the host's property, the same seed.
const RUNS = 8;

export function describeHostileRestore(): void {
  describe("ipvs mode, hostile objects, real tools with IPVS", () => {
    let host: RealHost;
    beforeAll(async () => {
      // What a real ipvs run loads in its prerequisite check, and the ipvs match the rules use.
      for (const m of ["ip_vs", "xt_ipvs", "dummy"]) {
        expect(spawnSync("modprobe", [m], { timeout: scaled(10_000) }).status, `modprobe ${m}`).toBe(0);
      }
      host = await createRealHost({ ipvsadm: true });
    }, scaled(30_000));
    afterAll(async () => {
      await host?.remove();
    }, scaled(20_000));

    test(
      "P2: every input of a sync, ipvsadm --restore included, is accepted by the real tools",
      async () => {
        let ipvsadmInputs = 0;
        await fc.assert(
          fc.asyncProperty(clusterArb, async (cluster) => {
            // A sync that throws is P1's failure; nothing was written.
            const commands = await syncAndReplay(host, "ipvs", cluster);
            ipvsadmInputs += (commands ?? []).filter((c) => programOf(c) === "ipvsadm").length;
          }),
          { seed: PROPERTY_SEED, numRuns: RUNS },
        );
        // The property exercised ipvsadm, not only the other tools.
        expect(ipvsadmInputs).toBeGreaterThan(0);
      },
      scaled(120_000),
    );
  });
}
