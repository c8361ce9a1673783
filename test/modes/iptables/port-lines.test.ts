// Lines made from fragments (port-lines.ts) read exactly as the same lines made one by one, and
// a writer's long multi-line entries pass through DeferredLineBlocks as pieces of their own.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  DeferredLineBlocks,
  type LineSink,
  OWN_BLOCK_CHARS,
} from "../../../src/modes/iptables/line-blocks.ts";
import { arrayLineSink, joinedLineSteps, PortLines } from "../../../src/modes/iptables/port-lines.ts";

/** One call on a sink: a single line, or a list of lines sharing a head and a tail. */
type Call = { line: string } | { head: string; items: string[]; tail: string };

const text = fc.string({ maxLength: 12 }).map((s) => s.replace(/\n/g, " "));
const call: fc.Arbitrary<Call> = fc.oneof(
  text.map((line) => ({ line })),
  fc.record({ head: text, items: fc.array(text, { maxLength: 30 }), tail: text }),
);

function replay(
  calls: readonly Call[],
  sink: { push(l: string): void; pushEach(h: string, i: string[], t: string): void },
) {
  for (const c of calls) {
    if ("line" in c) sink.push(c.line);
    else sink.pushEach(c.head, c.items, c.tail);
  }
}

describe("PortLines", () => {
  test("its text and line count are those of the same lines made one by one (generated calls)", () => {
    fc.assert(
      fc.property(fc.array(call, { maxLength: 12 }), (calls) => {
        const lines: string[] = [];
        replay(calls, arrayLineSink(lines));
        const p = new PortLines();
        p.push("left over");
        p.clear();
        replay(calls, p);
        expect(p.lines).toBe(lines.length);
        expect(p.text()).toBe(lines.join("\n"));
      }),
      { numRuns: 500, seed: 3901 },
    );
  });

  test("a 100,000-item list is one text of 100,000 lines", () => {
    const items = Array.from({ length: 100_000 }, (_, i) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    const p = new PortLines();
    p.push("-A KUBE-SERVICES first");
    p.pushEach("-A KUBE-SERVICES -d ", items, " --dport 80 -j KUBE-EXT-X");
    const t = p.text();
    expect(p.lines).toBe(100_001);
    const split = t.split("\n");
    expect(split).toHaveLength(100_001);
    expect(split[100_000]).toBe("-A KUBE-SERVICES -d 10.1.134.159 --dport 80 -j KUBE-EXT-X");
  });
});

describe("joinedLineSteps through DeferredLineBlocks", () => {
  test("the section reads as the lines one by one; long entries are pieces of their own (generated writers)", () => {
    const writer = fc.record({
      head: text,
      items: fc.array(text, { maxLength: 5000 }),
      tail: text,
      before: fc.array(text, { maxLength: 3 }),
    });
    fc.assert(
      fc.property(fc.array(writer, { maxLength: 6 }), (writers) => {
        const d = new DeferredLineBlocks();
        const lines: string[] = [];
        for (const w of writers) {
          d.push(`-A PUSHED ${w.head}`);
          lines.push(`-A PUSHED ${w.head}`);
          for (const b of w.before) lines.push(b);
          for (const item of w.items) lines.push(`${w.head}${item}${w.tail}`);
          lines.push(`-A AFTER ${w.tail}`);
          function* steps(sink: LineSink): Generator<number> {
            for (const b of w.before) sink.push(b);
            yield* joinedLineSteps(sink, w.head, w.items, w.tail);
            sink.push(`-A AFTER ${w.tail}`);
          }
          d.defer({
            lines: w.before.length + w.items.length + 1,
            write: (sink) => {
              for (const _ of steps(sink));
            },
            steps,
          });
        }
        const pieces = [...d.pieces()];
        expect(pieces.join("")).toBe(lines.length > 0 ? `${lines.join("\n")}\n` : "");
        // A piece is a long entry as written, its newline, or a block of at most 2,048 lines.
        for (const piece of pieces) {
          if (piece.length >= OWN_BLOCK_CHARS || piece === "\n") continue;
          expect(piece.endsWith("\n")).toBe(true);
        }
      }),
      { numRuns: 60, seed: 3902 },
    );
  });
});
