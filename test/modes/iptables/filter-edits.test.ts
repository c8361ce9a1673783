// FilterEdits against a model of the kernel's filter table: whatever ports' filter lines do over
// time, the kernel holds every wanted line once, and what else it holds is only KUBE-SERVICES
// lines that went unwanted less than a sync period ago.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { FilterEdits, type PortFilterChange } from "../../../src/modes/iptables/filter-edits.ts";

const CHAINS = ["KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-PROXY-FIREWALL", "KUBE-NODEPORTS"];
const PERIOD = 30_000;

/** A port's possible lines: a few per chain, each naming its port. */
function lineOf(port: number, chain: number, variant: number): string {
  return `-A ${CHAINS[chain]} -m comment --comment "ns/s${port}:p v${variant}" -j REJECT`;
}

const step = fc.record({
  advanceMs: fc.integer({ min: 0, max: PERIOD }),
  ports: fc.array(
    fc.record({
      port: fc.integer({ min: 0, max: 5 }),
      lines: fc.uniqueArray(
        fc.tuple(fc.integer({ min: 0, max: CHAINS.length - 1 }), fc.integer({ min: 0, max: 2 })),
        { maxLength: 3, selector: ([c, v]) => `${c}/${v}` },
      ),
    }),
    { maxLength: 4 },
  ),
});

describe("FilterEdits", () => {
  test("the kernel holds every wanted line once, plus only recent unwanted KUBE-SERVICES lines", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 30 }), (steps) => {
        const edits = new FilterEdits();
        const wanted = new Map<number, string>(); // port -> joined lines
        let kernel: string[] = [];
        let now = 0;
        let wentStaleAt: number | undefined;
        for (const st of steps) {
          now += st.advanceMs;
          const changes: PortFilterChange[] = [];
          const next = new Map(wanted);
          for (const p of st.ports) {
            const after = p.lines.map(([c, v]) => lineOf(p.port, c, v)).join("\n");
            changes.push({ portId: `s${p.port}`, before: next.get(p.port) ?? "", after });
            next.set(p.port, after);
          }
          const edit = edits.plan({ changes, nowMs: now, maxStaleMs: PERIOD });
          const desired = [...next.values()].flatMap((t) => (t === "" ? [] : t.split("\n")));
          if (edit.kind === "whole") kernel = [...desired];
          else if (edit.kind === "appends") kernel.push(...edit.appends);
          edits.commit(edit);
          for (const [k, v] of next) wanted.set(k, v);

          const held = new Set(kernel);
          expect(held.size).toBe(kernel.length); // nothing twice
          for (const line of desired) expect(held.has(line)).toBe(true);
          const want = new Set(desired);
          const extra = kernel.filter((l) => !want.has(l));
          for (const line of extra) expect(line.startsWith("-A KUBE-SERVICES ")).toBe(true);
          expect(new Set(edit.stale.keys())).toEqual(new Set(extra));
          expect(edits.staleLines).toBe(extra.length);
          if (extra.length === 0) wentStaleAt = undefined;
          else {
            wentStaleAt ??= now;
            expect(now - wentStaleAt).toBeLessThan(PERIOD);
          }
        }
      }),
      { seed: 23, numRuns: 400 },
    );
  });

  test("a port with a stale line gets no appended one (a DROP never sits behind an old REJECT)", () => {
    const edits = new FilterEdits();
    const reject = lineOf(1, 0, 0);
    const drop = lineOf(1, 0, 1);
    edits.commit(
      edits.plan({ changes: [{ portId: "s1", before: "", after: reject }], nowMs: 0, maxStaleMs: PERIOD }),
    );
    const gone = edits.plan({
      changes: [{ portId: "s1", before: reject, after: "" }],
      nowMs: 1,
      maxStaleMs: PERIOD,
    });
    expect(gone.kind).toBe("none");
    expect([...gone.stale.keys()]).toEqual([reject]);
    edits.commit(gone);
    const back = edits.plan({
      changes: [{ portId: "s1", before: "", after: drop }],
      nowMs: 2,
      maxStaleMs: PERIOD,
    });
    expect(back.kind).toBe("whole");
  });
});
