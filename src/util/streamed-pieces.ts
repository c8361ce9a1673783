// A big restore input made as it is read: the writer fills a LinePieces a little at a time and
// each finished piece is handed over before the next is made, so the input never exists whole
// (two million virtual servers are some 400 MB of ipvsadm input). The pieces read are garbage at
// once, and so is what made them: young garbage is collected as they go, or the runtime lets it
// pile up to about the size of the live heap.

import { collectYoungGarbage } from "../runtime.ts";
import { LinePieces } from "./line-pieces.ts";

/** Pieces handed over between two collections of young garbage (about 4 MB of text). */
const PIECES_PER_COLLECTION = 64;

/**
 * The input `write` makes, in pieces, as an iterable that makes it anew each time it is read
 * (once by the tool, again should a failure need the text). `write` yields whenever it may be
 * paused (after a line or a few); it must make the same lines on every call.
 */
export function streamedPieces(write: (out: LinePieces) => Iterable<unknown>): Iterable<string> {
  return {
    *[Symbol.iterator]() {
      const out = new LinePieces();
      let handed = 0;
      for (const _ of write(out)) {
        if (!out.ready) continue;
        for (const piece of out.drain()) {
          yield piece;
          if (++handed % PIECES_PER_COLLECTION === 0) collectYoungGarbage();
        }
      }
      yield* out.finish();
    },
  };
}
