// The restore lines of one table section, collected during a sync. A big sync writes hundreds
// of thousands of short lines, and each one held as its own string (often a rope of its
// parts) costs several times its text; here lines are joined into blocks as they come, so a
// sync holds little more than the characters of its output, and the blocks are the payload.

/** Entries per block: few blocks per payload, and only a short run of loose lines at a time. */
const BLOCK_ENTRIES = 2048;

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
