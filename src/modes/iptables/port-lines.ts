// One service port's top-level lines of one table. A port with 100,000 externalIPs writes
// 100,000 lines: built one by one, each is a tree of its parts that a join then flattens, about
// three times its text in garbage before the joined text exists. Here a list's lines are
// recorded as a reference to the list, and made either as one text by one join of their
// fragments, or (a port too long to keep as text) as restore pieces when the restore reads them:
// no string per line ever exists.

import { flatString } from "../../util/flat-string.ts";
import { BLOCK_ENTRIES, type DeferredLines, type LineSink } from "./line-blocks.ts";

/** Where entry rules are written. */
export interface RuleLineSink {
  /** Appends one line. */
  push(line: string): void;
  /** Appends one line per item: `head`, the item, `tail`. */
  pushEach(head: string, items: readonly string[], tail: string): void;
}

/** Lines of a list: `head`, each item, `tail`. */
interface ListLines {
  readonly head: string;
  readonly items: readonly string[];
  readonly tail: string;
}

/**
 * Lines recorded as they are written: a line as it is, a list's lines as a reference to the
 * list (nothing per item). text() makes them one flat text by one join of their fragments;
 * steps() writes them to a restore piece by piece (a port too long to keep as text).
 */
export class PortLines implements RuleLineSink, DeferredLines {
  private parts: (string | ListLines)[] = [];
  private count = 0;

  push(line: string): void {
    this.parts.push(line);
    this.count++;
  }

  pushEach(head: string, items: readonly string[], tail: string): void {
    if (items.length === 0) return;
    this.parts.push({ head, items, tail });
    this.count += items.length;
  }

  /** Lines appended since the last clear. */
  get lines(): number {
    return this.count;
  }

  /** The lines joined by newlines, as one flat string ("" when none). */
  text(): string {
    const only = this.parts.length === 1 ? this.parts[0] : undefined;
    if (typeof only === "string") return flatString(only);
    const fragments: string[] = [];
    for (const part of this.parts) {
      if (fragments.length > 0) fragments.push("\n");
      if (typeof part === "string") fragments.push(part);
      else pushFragments(fragments, part.head, part.items, part.tail, 0, part.items.length);
    }
    return fragments.join("");
  }

  /** The lines into `sink`, a list's as entries of many lines each. */
  write(sink: LineSink): void {
    for (const _ of this.steps(sink));
  }

  /** write(), pausing after each entry of a list's lines with how many it holds. */
  *steps(sink: LineSink): Generator<number> {
    for (const part of this.parts) {
      if (typeof part === "string") sink.push(part);
      else yield* joinedLineSteps(sink, part.head, part.items, part.tail);
    }
  }

  /** Forgets the lines. */
  clear(): void {
    this.parts.length = 0;
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

/**
 * Lines of a long list per entry: a block's worth (enough to amortise, short to hold), which
 * is what a read of stepped writers counts each step as.
 */
export const LINES_PER_TEXT = BLOCK_ENTRIES;

/**
 * Writes one line per item (`head`, the item, `tail`) to `out` as entries of up to
 * LINES_PER_TEXT lines each, every entry made by one join, pausing after each: a writer of a
 * long list (a firewall chain's 100,000 source ranges) never makes a string per line, and a
 * reader can take each entry before the next is made. Yields the lines of each entry.
 */
export function* joinedLineSteps(
  out: LineSink,
  head: string,
  items: readonly string[],
  tail: string,
): Generator<number> {
  const parts: string[] = [];
  for (let from = 0; from < items.length; from += LINES_PER_TEXT) {
    const to = Math.min(items.length, from + LINES_PER_TEXT);
    parts.length = 0;
    pushFragments(parts, head, items, tail, from, to);
    out.push(parts.join(""));
    yield to - from;
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
