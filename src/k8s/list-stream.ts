// Reads a List response (`{"kind":"...List","metadata":{...},"items":[...]}`) as its bytes
// arrive, handing over each element of the top-level "items" array, parsed on its own, as soon
// as it is whole. A list of 10,000 EndpointSlices is 15-40 MB of JSON: read whole, its bytes,
// its text and all of its objects were alive at once, the daemon's peak. Here one item's text
// and object exist at a time, beside the chunk being read.
//
// The scan knows JSON only as far as it needs to: strings (and their escapes), nesting, and the
// "items" key of the top-level object. JSON.parse still judges every byte: the items one by one,
// and the rest (the object without its items) at the end.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** Bytes of a top-level string kept to recognize "items" (longer ones only need to differ). */
const KEY_BYTES = 8;

/**
 * A push parser: write() each chunk as it comes, then end(). onItem is called from write() for
 * every item that chunk completes; end() returns the top-level object, its "items" empty.
 */
export class ListStreamReader {
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** The first bytes of the top-level string being read. */
  private key: number[] | undefined;
  /** The last top-level string read (the key, when a ":" and a "[" follow). */
  private lastKey = "";
  /** The last byte outside strings that is not white space. */
  private prev = 0;
  /** Between the "[" and "]" of the top-level "items" (at depth 2 there). */
  private inItems = false;
  /** The open item's bytes so far, from the chunks before this one. */
  private item: Uint8Array[] | undefined;
  private itemFrom = 0;
  /** Whether the open item started in the chunk being read (else it is in `item`'s pieces). */
  private itemHere = false;
  /**
   * The items of this chunk that started and ended in it, as one range (commas between them):
   * parsed together, as one array, when the chunk is done or the items end. One JSON.parse per
   * item cost a fifth more time than one for the whole list.
   */
  private batchFrom = -1;
  private batchTo = -1;
  /** Everything but the items, to be parsed at the end. */
  private readonly rest: Uint8Array[] = [];
  private restFrom = 0;
  private count = 0;

  constructor(private readonly onItem: (item: unknown) => void) {}

  /** Items handed over so far. */
  get items(): number {
    return this.count;
  }

  write(chunk: Uint8Array): void {
    this.restFrom = 0;
    this.itemFrom = 0;
    this.itemHere = false;
    const n = chunk.length;
    for (let i = 0; i < n; i++) {
      if (this.inString) {
        i = this.skipString(chunk, i);
        continue;
      }
      const b = chunk[i]!;
      if (isSpace(b)) continue;
      if (this.inItems && this.depth === 2 && this.item === undefined) {
        if (b === COMMA) continue;
        if (b === CLOSE_BRACKET) {
          this.flushBatch(chunk);
          // The items are over; the rest goes on from this bracket.
          this.inItems = false;
          this.depth = 1;
          this.restFrom = i;
          this.prev = b;
          continue;
        }
        if (b !== OPEN_BRACE) throw new Error("list response: an item is not a JSON object");
        this.item = [];
        this.itemFrom = i;
        this.itemHere = true;
      }
      if (b === QUOTE) {
        this.inString = true;
        if (this.depth === 1) this.key = [];
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        this.depth++;
        if (b === OPEN_BRACKET && this.depth === 2 && this.prev === COLON && this.lastKey === "items") {
          this.rest.push(chunk.slice(this.restFrom, i + 1));
          this.inItems = true;
        }
      } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
        if (--this.depth < 0) throw new Error("list response: unbalanced JSON");
        if (this.item !== undefined && this.depth === 2) this.finishItem(chunk, i + 1);
      }
      this.prev = b;
    }
    this.flushBatch(chunk);
    // Copies, so that no piece keeps the whole chunk alive.
    if (this.item !== undefined) this.item.push(chunk.slice(this.itemFrom));
    else if (!this.inItems) this.rest.push(chunk.slice(this.restFrom));
  }

  /** The top-level object without its items; throws on a body cut off or not a JSON object. */
  end(): Record<string, unknown> {
    if (this.inString || this.depth !== 0 || this.inItems)
      throw new Error("list response: the body ended before its JSON did");
    const parsed: unknown = JSON.parse(this.decoder.decode(joined(this.rest)));
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw new Error("list response: not a JSON object");
    const top = parsed as Record<string, unknown>;
    // An "items" key the scan did not recognize (spelled with escapes) was parsed here whole.
    if (Array.isArray(top.items) && top.items.length > 0) {
      const late = top.items;
      top.items = [];
      for (const item of late) {
        this.count++;
        this.onItem(item);
      }
    }
    return top;
  }

  /** Reads string bytes from i; returns the index of the closing quote, or the chunk's last. */
  private skipString(chunk: Uint8Array, i: number): number {
    const n = chunk.length;
    const key = this.key;
    if (key === undefined) return this.jumpString(chunk, i);
    for (; i < n; i++) {
      const b = chunk[i]!;
      if (this.escaped) this.escaped = false;
      else if (b === BACKSLASH) this.escaped = true;
      else if (b === QUOTE) {
        this.inString = false;
        if (key !== undefined) {
          this.lastKey = String.fromCharCode(...key);
          this.key = undefined;
        }
        return i;
      }
      if (key !== undefined && key.length < KEY_BYTES) key.push(b);
    }
    return n - 1;
  }

  /**
   * skipString for strings whose bytes are not kept: from quote to quote (indexOf, not a loop
   * in JavaScript), a quote after an odd run of backslashes being part of the string.
   */
  private jumpString(chunk: Uint8Array, i: number): number {
    const n = chunk.length;
    if (this.escaped) {
      this.escaped = false;
      i++;
    }
    for (;;) {
      const q = i < n ? chunk.indexOf(QUOTE, i) : -1;
      const end = q < 0 ? n : q;
      let run = 0;
      while (end - run - 1 >= i && chunk[end - run - 1] === BACKSLASH) run++;
      if (q < 0) {
        this.escaped = run % 2 === 1;
        return n - 1;
      }
      if (run % 2 === 0) {
        this.inString = false;
        return q;
      }
      i = q + 1;
    }
  }

  private finishItem(chunk: Uint8Array, end: number): void {
    const pieces = this.item!;
    this.item = undefined;
    if (this.itemHere) {
      if (this.batchFrom < 0) this.batchFrom = this.itemFrom;
      this.batchTo = end;
      return;
    }
    const bytes = joined([...pieces, chunk.subarray(this.itemFrom, end)]);
    this.count++;
    this.onItem(JSON.parse(this.decoder.decode(bytes)));
  }

  private flushBatch(chunk: Uint8Array): void {
    if (this.batchFrom < 0) return;
    const text = this.decoder.decode(chunk.subarray(this.batchFrom, this.batchTo));
    this.batchFrom = -1;
    this.batchTo = -1;
    const batch = JSON.parse(`[${text}]`) as unknown[];
    for (const item of batch) {
      this.count++;
      this.onItem(item);
    }
  }
}

function joined(pieces: readonly Uint8Array[]): Uint8Array {
  if (pieces.length === 1) return pieces[0]!;
  let size = 0;
  for (const p of pieces) size += p.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Reads a List response body: onItem gets each item as soon as it is whole; resolves with the
 * rest of the object (kind, apiVersion, metadata; "items" empty).
 */
export async function readListStream(
  stream: ReadableStream<Uint8Array>,
  onItem: (item: unknown) => void,
): Promise<Record<string, unknown>> {
  const list = new ListStreamReader(onItem);
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      list.write(value);
    }
  } finally {
    reader.releaseLock();
  }
  return list.end();
}
