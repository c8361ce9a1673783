// Property tests over hostile API objects, in every mode (iptables, nftables, ipvs), with the
// recording exec only (no kernel): generated Services, EndpointSlices, a Node and ServiceCIDRs
// (test/support/hostile-objects.ts) go through the informer handler calls, the trackers and
// one full sync (test/support/hostile-sync.ts), and then
//   P1  nothing threw and no promise rejection went unhandled, per kind of object and together,
//       and through updates and deletes of the same objects (a sync after each step);
//   P3  every line of every command the sync asked for is one the proxier writes
//       (test/support/restore-grammar.ts): no line, option, table or chain the model did not
//       generate, whatever text the objects carried;
//   ipvs: every ipvsadm --restore input is accepted by the in-repo ipvsadm parser and fake.
// The real-tool half (P2) is hostile-objects-kernel.property.test.ts; the counterexamples these
// found are pinned in hostile-objects-regressions.test.ts. Fixed seed, modest run counts.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { FakeExec } from "../../src/exec/testing/fake.ts";
import { FakeIpvs } from "../../src/host/ipvs/testing/fake.ts";
import type { ModeName } from "../../src/modes/registry.ts";
import { clusterArb, PROPERTY_SEED } from "../support/hostile-objects.ts";
import {
  type ClusterObjects,
  programOf,
  settle,
  syncOnce,
  syncWithChurn,
  watchUnhandledRejections,
} from "../support/hostile-sync.ts";
import { commandViolations } from "../support/restore-grammar.ts";

const MODES: readonly ModeName[] = ["iptables", "nftables", "ipvs"];
const RUNS = 60;
const TIMEOUT_MS = 50_000;

/** The cluster with only some kinds of object kept, so each kind's failures show on their own. */
const only = {
  "Services and EndpointSlices": clusterArb.map((c) => ({ ...c, node: undefined, serviceCIDRs: [] })),
  "the Node": clusterArb.map((c) => ({ ...c, services: [], slices: [], serviceCIDRs: [] })),
  ServiceCIDRs: clusterArb.map((c) => ({ ...c, services: [], slices: [], node: undefined })),
  "every kind together": clusterArb,
} satisfies Record<string, fc.Arbitrary<ClusterObjects>>;

let unhandled: ReturnType<typeof watchUnhandledRejections>;
beforeAll(() => {
  unhandled = watchUnhandledRejections();
});
afterAll(() => unhandled.stop());

async function check(arb: fc.Arbitrary<ClusterObjects>, predicate: (c: ClusterObjects) => Promise<void>) {
  await fc.assert(fc.asyncProperty(arb, predicate), { seed: PROPERTY_SEED, numRuns: RUNS });
}

/** Runs `sync`; fails when it throws or when a promise rejection goes unhandled meanwhile. */
async function withoutUnhandled(sync: () => Promise<unknown>): Promise<void> {
  unhandled.take();
  await sync();
  await settle();
  const left = unhandled.take();
  if (left.length > 0) throw new Error(`unhandled rejection: ${String(left[0])}`);
}

describe.each(MODES)("%s mode, hostile objects", (mode) => {
  for (const [kinds, arb] of Object.entries(only)) {
    test(
      `P1 ${kinds}: one full sync never throws and leaves no unhandled rejection`,
      async () => {
        await check(arb, (cluster) => withoutUnhandled(() => syncOnce(mode, cluster)));
      },
      TIMEOUT_MS,
    );
  }

  test(
    "P1 churn: every object updated, then deleted, a sync after each step, never throws",
    async () => {
      await check(clusterArb, (cluster) => withoutUnhandled(() => syncWithChurn(mode, cluster)));
    },
    TIMEOUT_MS,
  );

  test(
    "P3: every line of every command is one the proxier writes",
    async () => {
      await check(clusterArb, async (cluster) => {
        let record: Awaited<ReturnType<typeof syncOnce>>;
        try {
          record = await syncOnce(mode, cluster);
        } catch {
          return; // P1's failure, not this property's
        }
        const violations = record.commands.flatMap(commandViolations);
        if (violations.length > 0)
          throw new Error(`${violations.length} violations, the first: ${violations.slice(0, 3).join("\n")}`);
      });
    },
    TIMEOUT_MS,
  );
});

describe("ipvs mode, hostile objects: ipvsadm", () => {
  test(
    "every ipvsadm --restore input is accepted, line by line, by the in-repo ipvsadm",
    async () => {
      await check(clusterArb, async (cluster) => {
        let record: Awaited<ReturnType<typeof syncOnce>>;
        try {
          record = await syncOnce("ipvs", cluster);
        } catch {
          return;
        }
        for (const c of record.commands.filter((c) => programOf(c) === "ipvsadm")) {
          // A fresh kernel per input: the dry run records each family's restore against empty state.
          const exec = new FakeIpvs().install(new FakeExec());
          const r = await exec.run({ cmd: "ipvsadm", args: c.argv.slice(1), stdin: c.stdin ?? "" });
          if (r.code !== 0)
            throw new Error(`ipvsadm ${c.argv.slice(1).join(" ")} refused: ${r.stderr}\n${c.stdin}`);
        }
      });
    },
    TIMEOUT_MS,
  );
});

describe("the generator", () => {
  test(
    "a good share of generated clusters is valid enough to produce Service rules",
    async () => {
      const clusters = fc.sample(clusterArb, { seed: PROPERTY_SEED, numRuns: 60 });
      let withRules = 0;
      for (const cluster of clusters) {
        // A Node that breaks the sync says nothing about the Services: leave it out here.
        const record = await syncOnce("iptables", { ...cluster, node: undefined });
        const restores = record.commands.map((c) => c.stdin ?? "").join("\n");
        if (/^-A KUBE-SV[CL]-\S+ .*-j KUBE-SEP-/m.test(restores)) withRules++;
      }
      // Services with endpoints (not only "no endpoints" rejects) in at least a third of the cases.
      expect(withRules).toBeGreaterThanOrEqual(20);
    },
    TIMEOUT_MS,
  );
});
