// nftables drift: WrittenRecord follows the operations of transactions (rules counted per
// chain, sets and maps, elements outside the element store), and nftablesDrift finds exactly
// what a listing lacks or has in excess of the record. Property: a listing made from the record
// has no drift, and removing any one element or rule from it is one difference naming it.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { ListedTable } from "../../../src/host/nft/table-listing.ts";
import { NftTransaction } from "../../../src/host/nft/transaction.ts";
import { nftablesDrift, type RecordedTable } from "../../../src/modes/nftables/drift.ts";
import { WrittenRecord } from "../../../src/modes/nftables/written-record.ts";

const WHERE = "ip kube-proxy";

describe("WrittenRecord", () => {
  test("counts rules per chain from adds and flushes, forgets deleted chains and sets", () => {
    const record = new WrittenRecord((c) => c === "service-ips");
    const tx = new NftTransaction("ip", "kube-proxy", { observe: record.observe });
    tx.add({ kind: "chain", name: "services" });
    tx.flush({ kind: "chain", name: "services" });
    tx.add({ kind: "rule", chain: "services", rule: "ip daddr . meta l4proto . th dport vmap @service-ips" });
    tx.add({ kind: "chain", name: "service-x" });
    tx.add({ kind: "rule", chain: "service-x", rule: "goto endpoint-y" });
    tx.add({ kind: "rule", chain: "service-x", rule: "goto endpoint-z" });
    tx.add({ kind: "chain", name: "gone" });
    tx.delete({ kind: "chain", name: "gone" });
    tx.add({ kind: "set", name: "nodeport-ips", type: "ipv4_addr" });
    tx.add({ kind: "element", container: "nodeport-ips", key: ["192.0.2.10"] });
    tx.add({
      kind: "element",
      container: "service-ips",
      key: ["198.51.100.1", "tcp", "80"],
      value: ["goto x"],
    });
    tx.add({ kind: "set", name: "affinity-y", type: "ipv4_addr" });
    tx.add({ kind: "element", container: "affinity-y", key: ["203.0.113.1"] });
    expect([...record.chains]).toEqual([
      ["services", 1],
      ["service-x", 2],
    ]);
    expect([...record.containers]).toEqual(["nodeport-ips", "affinity-y"]);
    // The element store keeps service-ips; the kernel fills affinity sets.
    expect([...record.elements]).toEqual([["nodeport-ips", new Map([["192.0.2.10", ""]])]]);
    tx.flush({ kind: "chain", name: "service-x" });
    tx.delete({ kind: "set", name: "nodeport-ips" });
    expect(record.chains.get("service-x")).toBe(0);
    expect(record.elements.size).toBe(0);
  });
});

/** A listing that holds exactly what `r` says. */
function listingOf(r: {
  chains: [string, number][];
  containers: string[];
  elements: [string, string, string][];
}): ListedTable {
  const containers = new Map(
    r.containers.map((c) => [c, { kind: "map" as const, elements: new Map<string, string>() }]),
  );
  for (const [c, k, v] of r.elements) containers.get(c)!.elements.set(k, v);
  return { chains: new Map(r.chains), containers };
}

describe("nftablesDrift", () => {
  const record: RecordedTable = {
    chains: [
      ["services", 1],
      ["service-x", 2],
    ],
    containers: ["service-ips", "nodeport-ips", "affinity-y"],
    elements: [
      ["service-ips", "198.51.100.1 . tcp . 80", "goto service-x"],
      ["nodeport-ips", "192.0.2.10", ""],
    ],
  };

  test("a table gone is the one difference", () => {
    expect(nftablesDrift(record, undefined, WHERE, "IPv4")).toEqual([
      { kind: "table", what: WHERE, expected: "present", found: "absent", ipFamily: "IPv4" },
    ]);
  });

  test("each kind of difference is named", () => {
    const listed = listingOf({
      chains: [["services", 0]],
      containers: ["service-ips"],
      elements: [
        ["service-ips", "198.51.100.1 . tcp . 80", "goto service-other"],
        ["service-ips", "198.51.100.9 . tcp . 80", "drop"],
      ],
    });
    expect(nftablesDrift(record, listed, WHERE)).toEqual([
      { kind: "rule", what: `${WHERE} chain services`, expected: "1 rule", found: "0 rules" },
      { kind: "chain", what: `${WHERE} chain service-x`, expected: "2 rules", found: "absent" },
      { kind: "set", what: `${WHERE} nodeport-ips`, expected: "present", found: "absent" },
      {
        kind: "set-element",
        what: `${WHERE} service-ips { 198.51.100.1 . tcp . 80 }`,
        expected: "goto service-x",
        found: "goto service-other",
      },
      {
        kind: "set-element",
        what: `${WHERE} service-ips { 198.51.100.9 . tcp . 80 }`,
        expected: "absent",
        found: "drop",
      },
    ]);
  });

  test("random records: no drift against themselves; one thing removed is one difference", () => {
    const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/);
    const arb = fc
      .record({
        chains: fc.uniqueArray(fc.tuple(name, fc.integer({ min: 1, max: 5 })), {
          selector: (c) => c[0],
          maxLength: 6,
        }),
        containers: fc.uniqueArray(
          name.map((n) => `set-${n}`),
          { minLength: 1, maxLength: 3 },
        ),
        keys: fc.uniqueArray(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 254 })), {
          selector: (k) => k[1],
          maxLength: 10,
        }),
      })
      .map(({ chains, containers, keys }) => ({
        chains,
        containers,
        elements: keys.map(
          ([c, k]) =>
            [containers[c % containers.length]!, `198.51.100.${k} . tcp . 80`, "goto x"] as [
              string,
              string,
              string,
            ],
        ),
      }));
    fc.assert(
      fc.property(arb, fc.nat(), (r, pick) => {
        expect(nftablesDrift(r, listingOf(r), WHERE)).toEqual([]);
        if (r.elements.length > 0) {
          const gone = r.elements[pick % r.elements.length]!;
          const less = listingOf({ ...r, elements: r.elements.filter((e) => e !== gone) });
          expect(nftablesDrift(r, less, WHERE)).toEqual([
            {
              kind: "set-element",
              what: `${WHERE} ${gone[0]} { ${gone[1]} }`,
              expected: "goto x",
              found: "absent",
            },
          ]);
        }
        if (r.chains.length > 0) {
          const [chain, n] = r.chains[pick % r.chains.length]!;
          const less = listingOf({ ...r, chains: r.chains.map(([c, k]) => [c, c === chain ? k - 1 : k]) });
          expect(nftablesDrift(r, less, WHERE)).toEqual([
            {
              kind: "rule",
              what: `${WHERE} chain ${chain}`,
              expected: n === 1 ? "1 rule" : `${n} rules`,
              found: n - 1 === 1 ? "1 rule" : `${n - 1} rules`,
            },
          ]);
        }
      }),
    );
  });
});
