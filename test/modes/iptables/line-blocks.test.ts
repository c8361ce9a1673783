import { describe, expect, test } from "bun:test";
import { LineBlocks, OWN_BLOCK_CHARS } from "../../../src/modes/iptables/line-blocks.ts";

/** What the blocks stand for: every entry on its own line(s), surrounded as in a payload. */
function section(entries: readonly string[]): string {
  const b = new LineBlocks();
  for (const e of entries) b.push(e);
  expect(b.length).toBe(entries.length);
  return ["*nat", ...b.joinedBlocks(), "COMMIT", ""].join("\n");
}

describe("LineBlocks", () => {
  test("no entries: no blocks, so the section is just its frame", () => {
    expect(new LineBlocks().joinedBlocks()).toEqual([]);
    expect(section([])).toBe("*nat\nCOMMIT\n");
  });

  test("joined blocks give the same text as joining every entry, across block boundaries", () => {
    const entries = Array.from({ length: 5000 }, (_, i) =>
      i % 7 === 0 ? `-A X ${i}\n-A Y ${i}` : `-A X ${i}`,
    );
    expect(section(entries)).toBe(`*nat\n${entries.join("\n")}\nCOMMIT\n`);
  });

  test("a long entry is a block of its own, the very string pushed, in its place", () => {
    const long = Array.from(
      { length: 2000 },
      (_, i) => `-A KUBE-SERVICES -d 100.64.${i >> 8}.${i & 255}`,
    ).join("\n");
    expect(long.length).toBeGreaterThanOrEqual(OWN_BLOCK_CHARS);
    const entries = ["a", "b", long, "c", long, long, "d"];
    expect(section(entries)).toBe(`*nat\n${entries.join("\n")}\nCOMMIT\n`);
    const b = new LineBlocks();
    b.pushAll(entries);
    expect(b.joinedBlocks()).toEqual(["a\nb", long, "c", long, long, "d"]);
    expect(b.joinedBlocks()[1]).toBe(long);
  });

  test("pushAll appends in order; blocks can be read more than once", () => {
    const b = new LineBlocks();
    b.pushAll(["a", "b"]);
    b.push("c");
    expect(b.joinedBlocks()).toEqual(["a\nb\nc"]);
    b.push("d");
    expect(b.joinedBlocks()).toEqual(["a\nb\nc", "d"]);
    expect(b.length).toBe(4);
  });
});
