import { describe, expect, test } from "bun:test";
import { PIECE_CHARS } from "../../src/util/line-pieces.ts";
import { streamedPieces } from "../../src/util/streamed-pieces.ts";

describe("streamedPieces", () => {
  const line = (i: number) => `add KUBE-EXTERNAL-IP 203.0.${i >> 8}.${i & 255},tcp:80`;

  test("the writer runs only as far as the pieces taken need", () => {
    let written = 0;
    const input = streamedPieces(function* (out) {
      for (let i = 0; i < 20_000; i++) {
        out.add(line(i));
        written++;
        yield;
      }
    });
    expect(written).toBe(0);
    const reading = input[Symbol.iterator]();
    const first = reading.next().value!;
    expect(first.length).toBeGreaterThanOrEqual(PIECE_CHARS);
    expect(written).toBeLessThan(20_000);
    expect(first.split("\n").length - 1).toBe(written);
  });

  test("every line, in whole-line pieces, made anew on each read", () => {
    const input = streamedPieces(function* (out) {
      for (let i = 0; i < 20_000; i++) {
        out.add(line(i));
        if (i % 1000 === 0) yield;
      }
    });
    const text = Array.from({ length: 20_000 }, (_, i) => `${line(i)}\n`).join("");
    const pieces = [...input];
    expect(pieces.length).toBeGreaterThan(5);
    for (const piece of pieces) expect(piece.endsWith("\n")).toBe(true);
    expect(pieces.join("")).toBe(text);
    expect([...input].join("")).toBe(text);
  });

  test("no line: no piece", () => {
    expect([...streamedPieces(function* () {})]).toEqual([]);
  });
});
