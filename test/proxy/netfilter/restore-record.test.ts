// RestoreRecord and iptablesDrift: the record follows what successful restores did to the chains
// they named (declared chains flushed, appended rules, deleted chains; a failed restore changes
// nothing), and the comparison with iptables-save output finds exactly the rules and chains
// that went missing or appeared, whatever order iptables-save prints options in.

import { heapStats } from "bun:jsc";
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  type DeclaredChains,
  iptablesDrift,
  LINES_KEPT,
  RestoreRecord,
} from "../../../src/proxy/netfilter/restore-record.ts";

/** Reads `input` through the record's tap, in pieces cut anywhere (as a restore would read it). */
function restore(record: RestoreRecord, input: string, cut = 7, declared?: DeclaredChains): string {
  const pieces: string[] = [];
  for (let i = 0; i < input.length; i += cut) pieces.push(input.slice(i, i + cut));
  return [...record.tap(pieces, declared)].join("");
}

const FULL = [
  "*nat",
  ":KUBE-SERVICES - [0:0]",
  ":KUBE-SVC-A - [0:0]",
  ":KUBE-SEP-A - [0:0]",
  '-A KUBE-SERVICES -m comment --comment "ns/a:p cluster IP" -m tcp -p tcp -d 198.51.100.1 --dport 80 -j KUBE-SVC-A',
  "-A KUBE-SVC-A -j KUBE-SEP-A",
  "-A KUBE-SEP-A -m tcp -p tcp -j DNAT --to-destination 203.0.113.1:8080",
  "COMMIT",
  "",
].join("\n");

/** What iptables-save prints for FULL's nat table (its own option order and defaults). */
const SAVED = [
  "*nat",
  ":PREROUTING ACCEPT [0:0]",
  ":KUBE-SERVICES - [0:0]",
  ":KUBE-SVC-A - [0:0]",
  ":KUBE-SEP-A - [0:0]",
  ":KUBE-OTHER - [0:0]",
  '-A KUBE-SERVICES -d 198.51.100.1/32 -p tcp -m comment --comment "ns/a:p cluster IP" -m tcp --dport 80 -j KUBE-SVC-A',
  "-A KUBE-SVC-A -j KUBE-SEP-A",
  "-A KUBE-SEP-A -p tcp -m tcp -j DNAT --to-destination 203.0.113.1:8080",
  "-A KUBE-OTHER -j ACCEPT",
  "COMMIT",
  "",
].join("\n");

function recorded(): RestoreRecord {
  const r = new RestoreRecord();
  expect(restore(r, FULL)).toBe(FULL);
  r.commit(true);
  return r;
}

const drift = (r: RestoreRecord, saved: string) => iptablesDrift(r.rules, saved);

describe("RestoreRecord", () => {
  test("invalid until a full restore succeeded; a failed one changes nothing and invalidates", () => {
    const r = new RestoreRecord();
    expect(r.valid).toBe(false);
    restore(r, FULL);
    r.commit(false);
    expect(r.valid).toBe(false);
    const ok = recorded();
    expect(ok.valid).toBe(true);
    restore(ok, "*nat\n:KUBE-SVC-A - [0:0]\nCOMMIT\n");
    ok.abandon();
    expect(ok.valid).toBe(false);
    expect(ok.rules.get("nat")?.get("KUBE-SVC-A")?.count).toBe(1);
  });

  test("a partial restore rewrites the chains it declares, appends to others, deletes -X'd ones", () => {
    const r = recorded();
    restore(
      r,
      [
        "*nat",
        ":KUBE-SVC-A - [0:0]",
        "-A KUBE-SVC-A -j KUBE-SEP-B",
        "-A KUBE-SVC-A -j KUBE-SEP-C",
        "-A KUBE-SERVICES -j KUBE-NODEPORTS",
        "-X KUBE-SEP-A",
        "COMMIT",
      ].join("\n"),
    );
    r.commit(false);
    const nat = r.rules.get("nat")!;
    expect(nat.get("KUBE-SVC-A")).toEqual({
      count: 2,
      lines: ["-A KUBE-SVC-A -j KUBE-SEP-B", "-A KUBE-SVC-A -j KUBE-SEP-C"],
    });
    expect(nat.get("KUBE-SERVICES")?.count).toBe(2);
    expect(nat.has("KUBE-SEP-A")).toBe(false);
    expect(r.valid).toBe(true);
  });
});

describe("iptablesDrift", () => {
  test("nothing when the kernel holds what was written (other chains are not looked at)", () => {
    expect(drift(recorded(), SAVED)).toEqual([]);
  });

  test("a deleted rule, a deleted chain and an added rule are each named", () => {
    const r = recorded();
    const saved = SAVED.replace("-A KUBE-SVC-A -j KUBE-SEP-A\n", "")
      .replace(":KUBE-SEP-A - [0:0]\n", "")
      .replace(/-A KUBE-SEP-A [^\n]*\n/, "")
      .replace("COMMIT", "-A KUBE-SERVICES -j DROP\nCOMMIT");
    expect(drift(r, saved)).toEqual([
      { kind: "rule", what: "nat KUBE-SERVICES", expected: "absent", found: "-A KUBE-SERVICES -j DROP" },
      { kind: "rule", what: "nat KUBE-SVC-A", expected: "-A KUBE-SVC-A -j KUBE-SEP-A", found: "absent" },
      { kind: "chain", what: "nat KUBE-SEP-A", expected: "1 rule", found: "absent" },
    ]);
  });

  test("past LINES_KEPT rules a chain is known by its count, and compared by it", () => {
    const r = new RestoreRecord();
    const rules = Array.from(
      { length: LINES_KEPT + 2 },
      (_, i) => `-A KUBE-BIG -s 192.0.2.${i % 250} -m comment --comment r${i} -j ACCEPT`,
    );
    restore(
      r,
      [
        "*filter",
        ":KUBE-SMALL - [0:0]",
        "-A KUBE-SMALL -j DROP",
        ":KUBE-BIG - [0:0]",
        ...rules,
        "COMMIT",
        "",
      ].join("\n"),
      4096,
    );
    r.commit(true);
    const filter = r.rules.get("filter")!;
    expect(filter.get("KUBE-SMALL")).toEqual({ count: 1, lines: ["-A KUBE-SMALL -j DROP"] });
    expect(filter.get("KUBE-BIG")).toEqual({ count: LINES_KEPT + 2, lines: undefined });
    const saved = (big: readonly string[]) =>
      [
        "*filter",
        ":KUBE-SMALL - [0:0]",
        ":KUBE-BIG - [0:0]",
        "-A KUBE-SMALL -j DROP",
        ...big,
        "COMMIT",
        "",
      ].join("\n");
    expect(drift(r, saved(rules))).toEqual([]);
    expect(drift(r, saved(rules.slice(1)))).toEqual([
      {
        kind: "rule",
        what: "filter KUBE-BIG",
        expected: `${LINES_KEPT + 2} rules`,
        found: `${LINES_KEPT + 1} rules`,
      },
    ]);
  });

  test("random tables: unchanged there is no drift; each deleted rule is one difference", () => {
    const rule = fc.record({
      chain: fc.constantFrom("KUBE-SVC-A", "KUBE-SVC-B", "KUBE-SEP-C"),
      dst: fc.integer({ min: 1, max: 254 }),
      port: fc.integer({ min: 1, max: 65535 }),
    });
    fc.assert(
      fc.property(fc.array(rule, { minLength: 1, maxLength: 20 }), fc.nat(), (rules, pick) => {
        const chains = [...new Set(rules.map((x) => x.chain))];
        const written = (x: (typeof rules)[number]) =>
          `-A ${x.chain} -m tcp -p tcp -d 198.51.100.${x.dst} --dport ${x.port} -j ACCEPT`;
        const saved = (x: (typeof rules)[number]) =>
          `-A ${x.chain} -d 198.51.100.${x.dst}/32 -p tcp -m tcp --dport ${x.port} -j ACCEPT`;
        const r = new RestoreRecord();
        restore(
          r,
          ["*filter", ...chains.map((c) => `:${c} - [0:0]`), ...rules.map(written), "COMMIT", ""].join("\n"),
          5,
        );
        r.commit(true);
        const save = (rs: typeof rules) =>
          ["*filter", ...chains.map((c) => `:${c} - [0:0]`), ...rs.map(saved), "COMMIT", ""].join("\n");
        expect(drift(r, save(rules))).toEqual([]);
        const gone = pick % rules.length;
        const left = rules.filter((_, i) => i !== gone);
        const found = drift(r, save(left));
        expect(found).toHaveLength(1);
        expect(found[0]).toMatchObject({
          kind: "rule",
          what: `filter ${rules[gone]!.chain}`,
          found: "absent",
        });
      }),
    );
  });
});

describe("RestoreRecord, partial restores and size", () => {
  /** What the record should say: every chain's lines, never dropped (a model without the limit). */
  type Model = Map<string, string[]>;

  function applyToModel(model: Model, lines: readonly string[]): void {
    const removed: [string, string][] = [];
    for (const line of lines) {
      const [op, chain] = line.startsWith(":") ? [":", line.slice(1).split(" ")[0]!] : line.split(" ");
      if (op === ":" || op === "-F") model.set(chain!, []);
      else if (op === "-X") model.delete(chain!);
      else if (op === "-A") {
        const held = model.get(chain!);
        if (held) held.push(line);
        else model.set(chain!, [line]);
      } else if (op === "-D") removed.push([chain!, line]);
    }
    // A "-D" takes one rule of the same text (the generator only removes rules a chain holds).
    for (const [chain, line] of removed) {
      const held = model.get(chain)!;
      held.splice(held.indexOf(`-A${line.slice(2)}`), 1);
    }
  }

  test("random full and partial restores, some failing: counts and kept lines follow the chains", () => {
    const chain = fc.constantFrom("KUBE-SVC-A", "KUBE-SVC-B", "KUBE-SEP-C", "KUBE-SEP-D", "KUBE-FW-E");
    const rule = (c: string, n: number) => `-A ${c} -s 192.0.2.${n} -j ACCEPT`;
    const step = fc.record({
      // The chains the input declares told up front (as the proxier does), with one more that
      // the input never names: it must not be recorded.
      told: fc.boolean(),
      full: fc.boolean(),
      fails: fc.boolean(),
      declared: fc.uniqueArray(chain, { maxLength: 3 }),
      appended: fc.array(fc.tuple(chain, fc.integer({ min: 1, max: 9 })), { maxLength: 12 }),
      removed: fc.array(fc.tuple(chain, fc.integer({ min: 1, max: 9 })), { maxLength: 2 }),
      deleted: fc.uniqueArray(chain, { maxLength: 1 }),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 8 }), (steps) => {
        const r = new RestoreRecord();
        let model: Model = new Map();
        let valid = false;
        for (const s of steps) {
          const declared = s.full ? [...new Set([...s.declared, ...s.appended.map(([c]) => c)])] : s.declared;
          const deleted = s.deleted.filter(
            (c) => !declared.includes(c) && !s.appended.some(([a]) => a === c),
          );
          // A "-D" removes a rule the chain holds (iptables-restore refuses others), of a chain
          // the input does not declare, delete or append to (as a sync writes them).
          const removed = s.full
            ? []
            : [...new Map(s.removed.map(([c, n]) => [rule(c, n), [c, n] as const])).values()].filter(
                ([c, n]) =>
                  model.get(c)?.includes(rule(c, n)) &&
                  !declared.includes(c) &&
                  !deleted.includes(c) &&
                  !s.appended.some(([a]) => a === c),
              );
          const lines = [
            ...declared.map((c) => `:${c} - [0:0]`),
            ...s.appended.map(([c, n]) => rule(c, n)),
            ...removed.map(([c, n]) => rule(c, n).replace("-A ", "-D ")),
            ...deleted.map((c) => `-X ${c}`),
          ];
          const told = s.told ? { table: "filter", chains: [...declared, "KUBE-NEVER-NAMED"] } : undefined;
          restore(r, ["*filter", ...lines, "COMMIT", ""].join("\n"), 6, told);
          if (s.fails) {
            r.abandon();
            valid = false;
            continue;
          }
          r.commit(s.full);
          if (s.full) model = new Map();
          applyToModel(model, lines);
          if (s.full) valid = true;
          expect(r.valid).toBe(valid);
          if (!valid) continue;
          const table = r.rules.get("filter");
          const seen = new Set<string>();
          for (const [c, rec] of table ?? []) {
            seen.add(c);
            const want = model.get(c);
            expect(want).toBeDefined();
            expect(rec.count).toBe(want!.length);
            if (rec.lines) expect([...rec.lines].sort()).toEqual([...want!].sort());
          }
          expect([...seen].sort()).toEqual([...model.keys()].sort());
        }
      }),
      { numRuns: 300 },
    );
  });

  test("a chain past the kept lines costs no object of its own (one Service of 100,000 ports has 300,000)", () => {
    const chains = 60_000;
    const input = ["*nat"];
    for (let i = 0; i < chains; i++) input.push(`:KUBE-SEP-${i} - [0:0]`);
    for (let i = 0; i < chains; i++)
      input.push(`-A KUBE-SEP-${i} -p tcp -j DNAT --to-destination 203.0.113.1:${i}`);
    input.push("COMMIT", "");
    const objects = () => {
      Bun.gc(true);
      const counts = heapStats().objectTypeCounts;
      return (counts.Object ?? 0) + (counts.Array ?? 0);
    };
    const r = new RestoreRecord();
    const before = objects();
    restore(r, input.join("\n"), 64 * 1024);
    r.commit(true);
    const after = objects();
    expect(r.rules.get("nat")?.size).toBe(chains);
    expect(r.rules.get("nat")?.get(`KUBE-SEP-${chains - 1}`)).toEqual({ count: 1, lines: undefined });
    // The kept lines' chains (at most LINES_KEPT) have an array each; the others none.
    expect(after - before).toBeLessThan(LINES_KEPT + 1_000);
  });
});
