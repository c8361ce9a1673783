// One service port's top-level lines of one table, made as one text. A port with 100,000
// externalIPs writes 100,000 lines: built one by one, each is a tree of its parts that a join
// then flattens, about three times its text in garbage before the joined text exists. Here a
// list's lines are recorded as fragments (the shared head and tail, each item) and the text is
// made by one join of them: no string per line ever exists.

import { flatString } from "../../util/flat-string.ts";
import type { LineSink } from "./line-blocks.ts";

/** Where entry rules are written. */
export interface RuleLineSink {
  /** Appends one line. */
  push(line: string): void;
  /** Appends one line per item: `head`, the item, `tail`. */
  pushEach(head: string, items: readonly string[], tail: string): void;
}

/** Lines recorded as fragments, joined once into their text. */
export class PortLines implements RuleLineSink {
  private parts: string[] = [];
  private count = 0;

  push(line: string): void {
    if (this.count > 0) this.parts.push("\n");
    this.parts.push(line);
    this.count++;
  }

  pushEach(head: string, items: readonly string[], tail: string): void {
    if (items.length === 0) return;
    if (this.count > 0) this.parts.push("\n");
    pushFragments(this.parts, head, items, tail, 0, items.length);
    this.count += items.length;
  }

  /** Lines appended since the last clear. */
  get lines(): number {
    return this.count;
  }

  /** The lines joined by newlines, as one flat string ("" when none). */
  text(): string {
    if (this.parts.length === 1) return flatString(this.parts[0]!);
    return this.parts.join("");
  }

  /** Forgets the lines; a long list's array is let go rather than kept for the next port. */
  clear(): void {
    if (this.parts.length > 4096) this.parts = [];
    else this.parts.length = 0;
    this.count = 0;
  }
}

/**
 * Appends to `parts` the fragments of one line per item of items[from, to): `head`, the item,
 * `tail`, newlines between the lines and none after the last.
 */
function pushFragments(
  parts: string[],
  head: string,
  items: readonly string[],
  tail: string,
  from: number,
  to: number,
): void {
  // Flat once, so the join copies them instead of flattening a tree per line.
  parts.push(flatString(head));
  const between = flatString(`${tail}\n${head}`);
  for (let i = from; i < to; i++) {
    if (i > from) parts.push(between);
    parts.push(items[i]!);
  }
  parts.push(flatString(tail));
}

/** Lines between a long list's entries in a block: enough to amortise, short to hold. */
export const LINES_PER_TEXT = 2048;

/**
 * Writes one line per item (`head`, the item, `tail`) to `out` as entries of up to
 * LINES_PER_TEXT lines each, every entry made by one join, pausing after each: a writer of a
 * long list (a firewall chain's 100,000 source ranges) never makes a string per line, and a
 * reader can take each entry before the next is made.
 */
export function* joinedLineSteps(
  out: LineSink,
  head: string,
  items: readonly string[],
  tail: string,
): Generator<void> {
  const parts: string[] = [];
  for (let from = 0; from < items.length; from += LINES_PER_TEXT) {
    parts.length = 0;
    pushFragments(parts, head, items, tail, from, Math.min(items.length, from + LINES_PER_TEXT));
    out.push(parts.join(""));
    yield;
  }
}

/** A sink appending each line to `lines` (tests, and callers that want the lines themselves). */
export function arrayLineSink(lines: string[]): RuleLineSink {
  return {
    push: (line) => {
      lines.push(line);
    },
    pushEach: (head, items, tail) => {
      for (const item of items) lines.push(`${head}${item}${tail}`);
    },
  };
}
