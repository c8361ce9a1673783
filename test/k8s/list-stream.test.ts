import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { ListStreamReader, readListStream } from "../../src/k8s/list-stream.ts";

const items = Array.from({ length: 50 }, (_, i) => ({
  metadata: {
    name: `s-${i}`,
    resourceVersion: String(i),
    // Quotes, escapes and brackets inside strings must not count as structure.
    annotations: { tricky: `a "quoted" \\ [ { ] } , : ${"é".repeat(i % 3)}` },
    items: [{ nested: true }],
  },
  endpoints: [{ addresses: [`10.0.0.${i}`], conditions: { ready: true } }],
  ports: [],
}));

/** Feeds `text` in chunks of `size` bytes; returns the items and the rest. */
function read(text: string, size: number): { got: unknown[]; rest: Record<string, unknown> } {
  const bytes = new TextEncoder().encode(text);
  const got: unknown[] = [];
  const r = new ListStreamReader((x) => got.push(x));
  for (let at = 0; at < bytes.length; at += size) r.write(bytes.subarray(at, at + size));
  return { got, rest: r.end() };
}

describe("ListStreamReader", () => {
  const list = { kind: "ThingList", apiVersion: "v1", metadata: { resourceVersion: "77" }, items };

  test("hands over every item, whatever the chunking and formatting; the rest has no items", () => {
    for (const indent of [0, 1, 4]) {
      const text = JSON.stringify(list, null, indent);
      for (const size of [1, 2, 3, 7, 64, 1000, text.length]) {
        const { got, rest } = read(text, size);
        expect(got).toEqual(items);
        expect(rest).toEqual({
          kind: "ThingList",
          apiVersion: "v1",
          metadata: { resourceVersion: "77" },
          items: [],
        });
      }
    }
  });

  test("items before the metadata, and an empty or missing items array", () => {
    const first = `{"items":[${JSON.stringify(items[0])}],"metadata":{"resourceVersion":"5"}}`;
    expect(read(first, 5)).toEqual({
      got: [items[0]],
      rest: { items: [], metadata: { resourceVersion: "5" } },
    });
    expect(read('{"items":[],"metadata":{}}', 3).got).toEqual([]);
    expect(read('{"items":null,"metadata":{}}', 3)).toEqual({ got: [], rest: { items: null, metadata: {} } });
    expect(read('{"metadata":{"items":[1]}}', 3).got).toEqual([]);
  });

  test("an items key spelled with escapes is read whole at the end, its items still handed over", () => {
    const { got, rest } = read(`{"\\u0069tems":[${JSON.stringify(items[1])}],"metadata":{}}`, 4);
    expect(got).toEqual([items[1]]);
    expect(rest.items).toEqual([]);
  });

  test("a body cut off, a broken item, or an item that is no object is an error", () => {
    const text = JSON.stringify(list);
    expect(() => read(text.slice(0, text.length - 10), 100)).toThrow(/ended before/);
    expect(() => read('{"items":[{"a":}]}', 100)).toThrow();
    expect(() => read('{"items":[1,2]}', 100)).toThrow(/not a JSON object/);
    expect(() => read("[]", 100)).toThrow(/not a JSON object/);
    expect(() => read('{"items":[{"a":"\\xff"}]}', 100)).toThrow();
  });

  test("readListStream reads a body stream to its end", async () => {
    const got: unknown[] = [];
    const rest = await readListStream(new Response(JSON.stringify(list)).body!, (x) => got.push(x));
    expect(got).toEqual(items);
    expect(rest.metadata).toEqual({ resourceVersion: "77" });
  });
});

describe("ListStreamReader against JSON.parse (generated)", () => {
  const json = fc.jsonValue({ maxDepth: 4 });
  /** Splits bytes at the given cut points (sorted, de-duplicated, inside the bytes). */
  const pieces = (bytes: Uint8Array, cuts: number[]) => {
    const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
    const out: Uint8Array[] = [];
    let from = 0;
    for (const c of [...at, bytes.length]) {
      out.push(bytes.subarray(from, c));
      from = c;
    }
    return out;
  };
  const feed = (chunks: Uint8Array[]) => {
    const got: unknown[] = [];
    const r = new ListStreamReader((x) => got.push(x));
    for (const c of chunks) r.write(c);
    return { got, rest: r.end() };
  };

  test("any list of objects, any other keys, any formatting, any chunking: the items and the rest JSON.parse reads", () => {
    fc.assert(
      fc.property(
        fc.array(fc.dictionary(fc.string(), json, { maxKeys: 4 }), { maxLength: 6 }),
        fc.dictionary(
          fc.string().filter((k) => k !== "items"),
          json,
          { maxKeys: 3 },
        ),
        fc.constantFrom(0, 1, 2),
        fc.array(fc.nat(), { maxLength: 8 }),
        (listItems, other, indent, cuts) => {
          const text = JSON.stringify({ ...other, items: listItems }, null, indent);
          // What JSON.parse reads is the reference (-0 written is 0 read, for one).
          const whole = JSON.parse(text) as { items: unknown[] };
          const { got, rest } = feed(pieces(new TextEncoder().encode(text), cuts));
          expect(got).toEqual(whole.items);
          expect(rest).toEqual({ ...whole, items: [] });
        },
      ),
      // A failing case the generator found (seed -345815095): -0 in the rest, read back as 0.
      { numRuns: 300, examples: [[[], { "": { "": -0 } }, 0, []]] },
    );
  });

  test("arbitrary bytes, any chunking: a result or an Error, never anything else thrown", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.array(fc.nat(), { maxLength: 4 }), (bytes, cuts) => {
        try {
          feed(pieces(bytes, cuts));
        } catch (err) {
          expect(err).toBeInstanceOf(Error);
        }
      }),
      { numRuns: 500 },
    );
  });
});
