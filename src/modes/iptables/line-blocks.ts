// The restore lines of one table section, collected during a sync. A big sync writes hundreds
// of thousands of short lines, and each one held as its own string (often a rope of its
// parts) costs several times its text; here lines are joined into blocks as they come, so a
// sync holds little more than the characters of its output, and the blocks are the payload.
// The nat section holds less still (DeferredLineBlocks): most of its lines are the ports' own
// chains, which are written only as the restore reads them, block by block.

import { collectGarbageAnyway, collectYoungGarbageAnyway } from "../../runtime.ts";

/** Entries per block: few blocks per payload, and only a short run of loose lines at a time. */
export const BLOCK_ENTRIES = 2048;

/**
 * An entry this long is a block of its own, kept as it is: joined with others it would be
 * copied, and such an entry is usually a port's cached text (a Service with 20,000 externalIPs
 * has megabytes of it), which the proxier keeps anyway.
 */
export const OWN_BLOCK_CHARS = 16 * 1024;

/** Where rendering code appends lines; a plain string[] is one too (tests, small callers). */
export interface LineSink {
  push(entry: string): void;
  /** Entries pushed so far. */
  readonly length: number;
}

export class LineBlocks implements LineSink {
  private readonly blocks: string[] = [];
  private pending: string[] = [];
  private count = 0;

  /** Appends one entry: a line, or several lines already joined by newlines. */
  push(entry: string): void {
    this.count++;
    if (entry.length >= OWN_BLOCK_CHARS) {
      this.seal();
      this.blocks.push(entry);
      return;
    }
    this.pending.push(entry);
    if (this.pending.length >= BLOCK_ENTRIES) this.seal();
  }

  pushAll(entries: readonly string[]): void {
    for (const e of entries) this.push(e);
  }

  get length(): number {
    return this.count;
  }

  /**
   * The entries as non-empty blocks, each a run of entries joined by newlines (none when no
   * entry was pushed): joining them, and what surrounds them, with newlines gives the section.
   */
  joinedBlocks(): readonly string[] {
    this.seal();
    return this.blocks;
  }

  private seal(): void {
    if (this.pending.length === 0) return;
    this.blocks.push(this.pending.join("\n"));
    this.pending = [];
  }
}

/** Lines not made yet: how many there will be, and how to write them. */
export interface DeferredLines {
  readonly lines: number;
  write(sink: LineSink): void;
  /**
   * Writes the same lines, pausing after each long entry (one of many lines) with the number of
   * lines it holds, so a reader takes it before the next is made; for writers of long lists.
   */
  steps?(sink: LineSink): Iterable<number>;
}

/** Deferred lines written between two young-generation collections (each leaves garbage). */
const DEFERRED_LINES_PER_COLLECTION = 32_768;

/**
 * Young collections between two full ones while deferred lines are written: what a young
 * collection finds alive (the run being read, the reader's last piece) stays until a full
 * collection, and a read of 4,000,000 lines (100 ports x 10,000 endpoints) piled up ~250 MB of
 * it. A full collection every ~500,000 lines (no time measurable in a read of ~10 s) keeps it
 * to one such stretch. A dry run collects too (its record keeps the pieces, but what made them
 * is garbage): ~1,160 -> ~850 MiB at that size.
 */
const YOUNG_COLLECTIONS_PER_FULL = 16;

/**
 * A section's lines as what was pushed (strings held elsewhere anyway, such as a port's kept
 * text: referenced, not copied) and deferred writers, in order. pieces() makes the text as it is
 * read, a block of lines at a time, so only one block exists at a time. Reading again makes it
 * again, so the writers must write the same lines each time (what they write from stays
 * unchanged until the sync that made them ends).
 */
export class DeferredLineBlocks implements LineSink {
  private readonly parts: (string | DeferredLines)[] = [];
  private count = 0;
  private deferred = 0;

  push(entry: string): void {
    this.count++;
    this.parts.push(entry);
  }

  pushAll(entries: readonly string[]): void {
    for (const e of entries) this.push(e);
  }

  /** Appends lines written only when pieces() reaches them. */
  defer(lines: DeferredLines): void {
    this.deferred += lines.lines;
    this.parts.push(lines);
  }

  /** Entries pushed so far (deferred lines not included). */
  get length(): number {
    return this.count;
  }

  /** The lines the deferred writers will write. */
  get deferredLines(): number {
    return this.deferred;
  }

  /**
   * The section's text, every line ended by a newline, in pieces made as they are asked for: a
   * run of lines joined with its newlines, or a long entry as it is and then a newline. Each
   * piece is a block of work for the reader: a writer of the pieces that makes the next one
   * while the reader takes the last keeps both busy.
   */
  *pieces(): Generator<string> {
    const run: string[] = [];
    let written = 0;
    let collections = 0;
    const collectIfDue = () => {
      if (written < DEFERRED_LINES_PER_COLLECTION) return;
      written = 0;
      if (++collections % YOUNG_COLLECTIONS_PER_FULL === 0) collectGarbageAnyway();
      else collectYoungGarbageAnyway();
    };
    for (const part of this.parts) {
      if (typeof part !== "string") {
        // Collected before a writer runs, when the run holds less than a block: what a young
        // collection finds alive stays until a full one, and a port of 10,000 endpoints writes
        // 40,000 lines at once (collected after writing, every such run was kept: ~500 MB at
        // 100 ports x 10,000 endpoints).
        collectIfDue();
        if (part.steps) {
          // Each step's entry is read before the next is made, and collected as it goes.
          for (const lines of part.steps(run)) {
            yield* blocksOf(run);
            written += lines;
            collectIfDue();
          }
        } else {
          part.write(run);
          written += part.lines;
        }
      } else if (part.length >= OWN_BLOCK_CHARS) {
        if (run.length > 0) yield* blocksOf(run);
        yield part;
        yield "\n";
        continue;
      } else run.push(part);
      if (run.length >= BLOCK_ENTRIES) yield* blocksOf(run);
    }
    if (run.length > 0) yield* blocksOf(run);
  }
}

/**
 * The run's lines, each ended by a newline, as strings of a block of lines at most (a piece a
 * reader holds is small); an entry of many lines (OWN_BLOCK_CHARS or more) is a piece of its own,
 * not copied. The run is emptied for the next.
 */
function* blocksOf(run: string[]): Generator<string> {
  const lines = run.splice(0);
  let from = 0;
  for (let i = 0; i <= lines.length; i++) {
    const big = i < lines.length && lines[i]!.length >= OWN_BLOCK_CHARS;
    if (i - from === BLOCK_ENTRIES || ((big || i === lines.length) && i > from)) {
      yield ended(lines.slice(from, i));
      from = i;
    }
    if (big) {
      yield lines[i]!;
      yield "\n";
      from = i + 1;
    }
  }
}

/** The run's lines, each ended by a newline, as one string; the run is emptied for the next. */
function ended(run: string[]): string {
  run.push("");
  const text = run.join("\n");
  run.length = 0;
  return text;
}
