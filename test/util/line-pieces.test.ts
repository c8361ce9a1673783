import { describe, expect, test } from "bun:test";
import { LinePieces, PIECE_CHARS } from "../../src/util/line-pieces.ts";

describe("LinePieces", () => {
  test("no line: no piece", () => {
    const p = new LinePieces();
    expect(p.finish()).toEqual([]);
    expect(p.lines).toBe(0);
  });

  test("whole lines, newline-terminated, cut once a piece reaches its size; joined: the lines", () => {
    const p = new LinePieces();
    const lines = Array.from(
      { length: 20_000 },
      (_, i) => `add KUBE-EXTERNAL-IP 203.0.${i >> 8}.${i & 255},tcp:80`,
    );
    for (const line of lines) p.add(line);
    const pieces = p.finish();
    expect(p.lines).toBe(lines.length);
    expect(pieces.length).toBeGreaterThan(5);
    for (const piece of pieces) {
      expect(piece.endsWith("\n")).toBe(true);
      expect(piece.length).toBeLessThan(PIECE_CHARS + 100);
    }
    for (const piece of pieces.slice(0, -1)) expect(piece.length).toBeGreaterThanOrEqual(PIECE_CHARS);
    expect(pieces.join("")).toBe(`${lines.join("\n")}\n`);
  });

  test("a line longer than a piece is a piece of its own", () => {
    const p = new LinePieces();
    const long = "x".repeat(PIECE_CHARS * 2);
    p.add("a");
    p.add(long);
    p.add("b");
    expect(p.finish()).toEqual([`a\n${long}\n`, "b\n"]);
  });
});
