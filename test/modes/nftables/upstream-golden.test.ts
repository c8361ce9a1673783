// Upstream v1.37's TestOverallNFTablesRules and its IPv6 variant, transcribed: the same
// Services, EndpointSlices and node set-up go through our proxier's first sync, and the table
// it leaves, printed and sorted as upstream's test compares, must equal upstream's expected
// dump (golden/upstream-1.37-overall*.nft, verbatim). Two documented differences are mapped
// before comparing: our masquerade mark is printed 8 digits wide, and our endpoint choice is
// n numgen rules where upstream writes one numgen map (knftables-dump.ts says why both are
// the same choice).

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { IPFamily } from "../../../src/util/net/family.ts";
import {
  canonicalMarks,
  knftablesDump,
  sortLikeUpstream,
  withUpstreamEndpointChoice,
} from "./knftables-dump.ts";
import { overallSetup } from "./upstream-overall.ts";

const golden = (name: string) => readFileSync(join(import.meta.dir, "golden", name), "utf8");

/** The localhost NodePort rejects of upstream's test need the alpha gate this test does not turn on. */
const withoutLocalhostNodePorts = (lines: string[]) => lines.filter((l) => !l.includes("localhost-nodeport"));

async function ourSortedDump(family: IPFamily): Promise<string[]> {
  const s = overallSetup(family);
  await s.sync();
  const dump = knftablesDump(s.nft.transactions).map(canonicalMarks);
  return sortLikeUpstream(withUpstreamEndpointChoice(dump));
}

describe("nftables: upstream v1.37's TestOverallNFTablesRules", () => {
  test("IPv4: the table equals upstream's expected dump", async () => {
    const expected = withoutLocalhostNodePorts(
      sortLikeUpstream(golden("upstream-1.37-overall.nft").split("\n")),
    );
    expect(await ourSortedDump("IPv4")).toEqual(expected);
  });

  test("IPv6 (TestOverallNFTablesRulesIPv6): the table equals upstream's expected dump", async () => {
    const expected = withoutLocalhostNodePorts(
      sortLikeUpstream(golden("upstream-1.37-overall-ipv6.nft").split("\n")),
    );
    expect(await ourSortedDump("IPv6")).toEqual(expected);
  });
});
