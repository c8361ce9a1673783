// nftables mode's drift: the proxier's record of what its transactions wrote (chains with their
// rule counts, sets and maps, their elements) against the table as nft lists it. Pure: both in,
// the differences out. Only our own objects are looked at: chains nobody recorded (stale ones
// awaiting deletion, another program's) are not differences; elements of affinity sets, which
// the kernel fills, neither.

import type { ListedTable } from "../../host/nft/table-listing.ts";
import { type Difference, ruleCount as rules } from "../../proxy/drift.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { isAffinitySetName } from "./names.ts";

export interface RecordedTable {
  /** Chain -> rules written into it. */
  readonly chains: Iterable<[string, number]>;
  /** Sets and maps. */
  readonly containers: Iterable<string>;
  /** [container, key text, value text ("" in a set)]. */
  readonly elements: Iterable<readonly [string, string, string]>;
}

/**
 * `where` names the table ("ip kube-proxy"); `listed` undefined: the table is not there at all
 * (then that is the one difference named).
 */
export function nftablesDrift(
  record: RecordedTable,
  listed: ListedTable | undefined,
  where: string,
  family?: IPFamily,
): Difference[] {
  const tag = family ? { ipFamily: family } : {};
  if (!listed) return [{ kind: "table", what: where, expected: "present", found: "absent", ...tag }];
  const out: Difference[] = [];
  for (const [chain, count] of record.chains) {
    const have = listed.chains.get(chain);
    const what = `${where} chain ${chain}`;
    if (have === undefined)
      out.push({ kind: "chain", what, expected: rules(count), found: "absent", ...tag });
    else if (have !== count)
      out.push({ kind: "rule", what, expected: rules(count), found: rules(have), ...tag });
  }
  const missingContainers = new Set<string>();
  const ours = new Set<string>();
  for (const name of record.containers) {
    if (isAffinitySetName(name)) continue;
    ours.add(name);
    if (!listed.containers.has(name)) {
      missingContainers.add(name);
      out.push({ kind: "set", what: `${where} ${name}`, expected: "present", found: "absent", ...tag });
    }
  }
  const expected = new Map<string, Set<string>>();
  for (const [container, key, value] of record.elements) {
    if (missingContainers.has(container)) continue;
    let keys = expected.get(container);
    if (!keys) {
      keys = new Set();
      expected.set(container, keys);
    }
    keys.add(key);
    const have = listed.containers.get(container)?.elements.get(key);
    const what = `${where} ${container} { ${key} }`;
    const want = value === "" ? "present" : value;
    if (have === undefined) out.push({ kind: "set-element", what, expected: want, found: "absent", ...tag });
    else if (have !== value)
      out.push({ kind: "set-element", what, expected: want, found: have === "" ? "present" : have, ...tag });
  }
  for (const name of ours) {
    const listedElements = listed.containers.get(name)?.elements;
    if (!listedElements) continue;
    const keys = expected.get(name);
    for (const [key, value] of listedElements)
      if (!keys?.has(key))
        out.push({
          kind: "set-element",
          what: `${where} ${name} { ${key} }`,
          expected: "absent",
          found: value === "" ? "present" : value,
          ...tag,
        });
  }
  return out;
}
