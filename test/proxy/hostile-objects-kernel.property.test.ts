// P2 of the hostile-object properties, against the REAL tools: whatever generated Services,
// EndpointSlices, Node and ServiceCIDRs (test/support/hostile-objects.ts) one full sync turns
// into, every restore input is accepted by the tool it is for, in a network namespace this file
// creates and deletes (test/support/real-restore.ts): iptables-restore and ip6tables-restore,
// nfacct, `nft -f` (nft 1.0.6 here), `ipset restore` and `ip -batch`. One namespace serves the
// whole file and is emptied between cases. A missing tool fails the file with its name (the
// tools are installed here and in CI). ipvsadm's inputs are held to the in-repo parser in
// hostile-objects.property.test.ts (no IPVS on this host) and to the real ipvsadm in a VM test.

import { afterAll, beforeAll, describe, test } from "bun:test";
import fc from "fast-check";
import type { ModeName } from "../../src/modes/registry.ts";
import { clusterArb, PROPERTY_SEED } from "../support/hostile-objects.ts";
import { createRealHost, type RealHost, syncAndReplay } from "../support/real-restore.ts";

const MODES: readonly ModeName[] = ["iptables", "nftables", "ipvs"];
const RUNS = 40;
const TIMEOUT_MS = 55_000;

let host: RealHost;
beforeAll(async () => {
  host = await createRealHost();
});
afterAll(async () => {
  await host?.remove();
});

describe.each(MODES)("%s mode, hostile objects, real tools", (mode) => {
  test(
    "P2: every restore input the sync produces is accepted by the real tool",
    async () => {
      await fc.assert(
        fc.asyncProperty(clusterArb, async (cluster) => {
          // A sync that throws is P1's failure; nothing was written.
          await syncAndReplay(host, mode, cluster);
        }),
        { seed: PROPERTY_SEED, numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );
});
