// A run's elements (NftTransaction.elementRun + addRunElement) are the elements push() writes:
// the same lines, the same kept and observed operations, and a refusal of the same runs (the
// message may name another bad part: a run's shared parts are checked first), for generated
// runs (odd but valid parts, comments to be cleaned, keys of one part, sets and maps). The same
// holds for a run of deletes (deleteRun + deleteRunElement) against push()'s deletes of the key
// as the element store names it: the first part and the rest's text as one part.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { HostInputError } from "../../../src/host/errors.ts";
import { NftTransaction } from "../../../src/host/nft/transaction.ts";
import type { NftOperation } from "../../../src/host/nft/types.ts";

const part = fc.oneof(
  fc.constantFrom("203.0.113.7", "tcp", "80", "goto external-X", "drop", "a b", "x.y"),
  fc.string({ minLength: 1, maxLength: 6 }),
);

interface Run {
  container: string;
  firsts: string[];
  rest: string[];
  value?: string[];
  comment?: string;
}

const run: fc.Arbitrary<Run> = fc.record(
  {
    container: fc.constantFrom("service-ips", "cluster-ips", "no-endpoint-services"),
    firsts: fc.array(part, { minLength: 1, maxLength: 5 }),
    rest: fc.array(part, { maxLength: 3 }),
    value: fc.array(part, { minLength: 1, maxLength: 2 }),
    comment: fc.oneof(fc.string({ maxLength: 140 }), fc.constant('ns/"q":p')),
  },
  { requiredKeys: ["container", "firsts", "rest"] },
);

type Outcome = { text: string; kept: unknown; seen: NftOperation[] } | string;

/** The text, kept and observed operations of what `write` adds to a transaction, or the refusal's message. */
function outcome(write: (tx: NftTransaction) => void): Outcome {
  const seen: NftOperation[] = [];
  const tx = new NftTransaction("ip", "kube-proxy", { keepOperations: true, observe: (op) => seen.push(op) });
  try {
    write(tx);
  } catch (err) {
    if (err instanceof HostInputError) return err.message;
    throw err;
  }
  return { text: tx.render(), kept: tx.operations(), seen };
}

/** Writing `runs`, as runs or as push() of each element. */
function written(runs: Run[], asRuns: boolean): Outcome {
  return outcome((tx) => {
    for (const r of runs) {
      if (asRuns) {
        const shared = tx.elementRun(r.container, r.rest, r.value, r.comment);
        for (const first of r.firsts) tx.addRunElement(shared, first);
        continue;
      }
      for (const first of r.firsts)
        tx.add({
          kind: "element",
          container: r.container,
          key: [first, ...r.rest],
          ...(r.value ? { value: r.value } : {}),
          ...(r.comment !== undefined ? { comment: r.comment } : {}),
        });
    }
  });
}

/** A run of deletes: keys `first + restText` of one container. */
interface DeleteRun {
  container: string;
  firsts: string[];
  restText: string;
}

const deleteRun: fc.Arbitrary<DeleteRun> = fc.record({
  container: fc.constantFrom("service-ips", "cluster-ips", "no-endpoint-services", "bad name"),
  firsts: fc.array(part, { minLength: 1, maxLength: 5 }),
  restText: fc.oneof(
    fc.constant(""),
    fc.array(part, { minLength: 1, maxLength: 3 }).map((parts) => ["", ...parts].join(" . ")),
  ),
});

/** Deleting `runs`, as runs or as push()'s deletes of each key. */
function deleted(runs: DeleteRun[], asRuns: boolean): Outcome {
  return outcome((tx) => {
    for (const r of runs) {
      if (asRuns) {
        const shared = tx.deleteRun(r.container, r.restText);
        for (const first of r.firsts) tx.deleteRunElement(shared, first);
        continue;
      }
      for (const first of r.firsts)
        tx.delete({ kind: "element", container: r.container, key: [first + r.restText] });
    }
  });
}

/**
 * Generated runs made as runs give what push() of each element gives, or both are refused
 * (each side's own message: a run's shared parts are checked first).
 */
function sameAsPush<R>(
  arb: fc.Arbitrary<R>,
  make: (runs: R[], asRuns: boolean) => Outcome,
  seed: number,
): void {
  fc.assert(
    fc.property(fc.array(arb, { maxLength: 4 }), (runs) => {
      const asRuns = make(runs, true);
      const each = make(runs, false);
      if (typeof asRuns === "string" || typeof each === "string") {
        expect([typeof asRuns, typeof each]).toEqual(["string", "string"]);
        expect(asRuns).toContain("nft");
      } else expect(asRuns).toEqual(each);
    }),
    { numRuns: 400, seed },
  );
}

describe("NftTransaction element runs", () => {
  test("delete what push() deletes for each element (generated runs)", () => {
    sameAsPush(deleteRun, deleted, 4003);
  });

  test("write what push() writes for each element (generated runs)", () => {
    sameAsPush(run, written, 4001);
  });

  test("an observer that does not want a container's elements is not told of them", () => {
    const seen: NftOperation[] = [];
    const tx = new NftTransaction("ip", "kube-proxy", {
      observe: (op) => seen.push(op),
      observesElementsOf: (c) => c !== "service-ips",
    });
    const quiet = tx.elementRun("service-ips", ["tcp", "80"], ["drop"]);
    const told = tx.elementRun("cluster-ips", []);
    tx.addRunElement(quiet, "203.0.113.1").addRunElement(told, "203.0.113.2");
    expect(seen.map((op) => op.object)).toEqual([
      { kind: "element", container: "cluster-ips", key: ["203.0.113.2"] },
    ]);
    expect(tx.render()).toBe(
      "add element ip kube-proxy service-ips { 203.0.113.1 . tcp . 80 : drop }\n" +
        "add element ip kube-proxy cluster-ips { 203.0.113.2 }\n",
    );
  });

  test("blocks hold 2,048 lines whichever way they were added", () => {
    const tx = new NftTransaction("ip", "kube-proxy");
    const r = tx.elementRun("cluster-ips", []);
    for (let i = 0; i < 3000; i++) {
      if (i % 2 === 0) tx.addRunElement(r, `198.51.100.${i % 256}`);
      else tx.add({ kind: "element", container: "cluster-ips", key: [`198.51.100.${i % 256}`] });
    }
    const blocks = [...tx.pieces()];
    expect(blocks.map((b) => b.split("\n").length - 1)).toEqual([2048, 952]);
  });
});
