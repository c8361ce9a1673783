// `explain` agrees with real traffic: in the real-kernel topology of the shared Service cases
// (test/support/e2e-service-cases.ts), with the daemon programming the node in iptables and in
// nftables mode, the built binary's `explain` is run in the node namespace against the live
// rules for each Service case those suites send traffic to, and its verdict and endpoint set
// must be what probes from the same source observe (test/support/e2e-explain.ts): DNAT -> the
// backends that answer (and masquerade -> the backend sees the node's address), reject ->
// refused at once, drop -> timed out, not handled -> no Service answers.
//
// Run as root (iproute2, iptables, nft, conntrack installed):
// `node_modules/.bin/bun test test/e2e/explain-traffic.test.ts`.

import { afterAll, beforeAll, describe } from "bun:test";
import { agrees, CASES } from "../support/e2e-explain.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest, type Harness, tearDownHarness } from "../support/e2e-harness.ts";
import { IPTABLES_RULES, type ModeRules, NFTABLES_RULES } from "../support/e2e-mode-rules.ts";
import { serviceChainsWithEndpoints } from "../support/e2e-nft.ts";
import { ALL, firstSync, PODS, setUp } from "../support/e2e-service-cases.ts";

const NFT_RULES: ModeRules<unknown> = {
  ...NFTABLES_RULES,
  serviceChains: serviceChainsWithEndpoints,
} as ModeRules<unknown>;

for (const rules of [IPTABLES_RULES as ModeRules<unknown>, NFT_RULES]) {
  describe(`${rules.mode} mode: explain on the live node agrees with the traffic`, () => {
    const h: Harness = {};

    beforeAll(async () => {
      await setUp(h, rules, PODS, ALL);
      await firstSync(h, rules, ALL);
    }, E2E_TEST_TIMEOUT_MS);

    afterAll(async () => {
      await tearDownHarness(h);
    }, E2E_TEST_TIMEOUT_MS);

    for (const c of CASES) {
      e2eTest(h, `${c.name}: ${c.from} -> ${c.target}/${c.proto ?? "tcp"}`, () => agrees(h, rules.mode, c));
    }
  });
}
