// Upstream v1.37's TestOverallIPTablesRules, transcribed: its Services, EndpointSlices and node
// set-up go through our proxier's first sync, and the restore input it writes, sorted as
// upstream's assertIPTablesRulesEqual sorts (upstream-dump.ts), must equal upstream's expected
// dump (golden/upstream-1.37-overall.iptables, verbatim from kubernetes/kubernetes
// pkg/proxy/iptables/proxier_test.go @ 531be81208e2274ef42e72525a26610a9622bcdf). The one
// mapping: upstream's test proxier is handed the mark as "0x4000", ours is formatted
// "0x00004000" as upstream's real proxier formats it.
//
// Between the v1.31-era copy of the same test (golden/upstream-1.31-era-overall.iptables, from
// the vendored tree ashierj/superdemo @ c1cf94e91feedf4d7b64e64bcdefc7f21f8224f3) and v1.37 the
// rules did not change; the test's fake proxier gained both nfacct counters, so 1.37's dump
// has the ct_state_invalid_dropped_pkts match on the INVALID drop and a localhost NodePort rule
// (-d 127.0.0.0/8 ... localhost_nps_accepted_pkts) before each NodePort jump. Without nfacct our
// proxier writes the 1.31-era dump, as upstream's does.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { shortMarks, sortLikeUpstream } from "./upstream-dump.ts";
import { upstreamOverallSetup } from "./upstream-overall.ts";

const golden = (name: string) => readFileSync(join(import.meta.dir, "golden", name), "utf8");

describe("iptables: upstream v1.37's TestOverallIPTablesRules", () => {
  test("the expected dump is already in upstream's sorted order", () => {
    const expected = golden("upstream-1.37-overall.iptables");
    expect(sortLikeUpstream(expected)).toBe(expected);
  });

  test("our first sync's restore input equals upstream's expected dump", async () => {
    const s = upstreamOverallSetup();
    const payload = await s.sync();
    expect(sortLikeUpstream(shortMarks(payload))).toBe(golden("upstream-1.37-overall.iptables"));
  });

  test("without nfacct counters: the v1.31-era expected dump", async () => {
    const s = upstreamOverallSetup({ nfacct: false });
    const payload = await s.sync();
    expect(sortLikeUpstream(shortMarks(payload))).toBe(golden("upstream-1.31-era-overall.iptables"));
  });
});
