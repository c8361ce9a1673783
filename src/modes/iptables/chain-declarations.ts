// The chains one sync declares in the nat table, kept as their names (the strings the port
// states hold anyway) until the restore input is made. Ordering a big table's declarations
// (chain-order.ts) then sorts the names themselves: no joined text of every declaration split
// again into a million new strings, as sorting the declaration lines took. The declaration
// lines are made only as the restore reads them (110,000 lines, ~4 MB, at 10k x 10).

import { MIN_CHAINS_TO_ORDER } from "../../host/iptables/chain-order.ts";
import { chainName } from "../../host/iptables/restore-text.ts";
import type { LineSink } from "./line-blocks.ts";

/** Declaration lines per block. */
const BLOCK_LINES = 2048;

/** A LineSink of chain names: push(name) declares the chain. */
export class ChainDeclarations implements LineSink {
  private readonly names: string[] = [];

  /** Declares `chain`, checked as a declaration line checks it (restore-text.ts chainName). */
  push(chain: string): void {
    this.names.push(chainName(chain));
  }

  pushAll(chains: readonly string[]): void {
    for (const c of chains) this.push(c);
  }

  get length(): number {
    return this.names.length;
  }

  /** The names declared (the strings pushed). */
  get chains(): readonly string[] {
    return this.names;
  }

  /**
   * Puts the declarations in the order the restore gets them: name order from `minChains`
   * chains on, else as declared. Sorting names orders the lines the same way: what follows a
   * name in its line (" - ") sorts below every character a name holds.
   */
  order(minChains = MIN_CHAINS_TO_ORDER): void {
    if (this.names.length >= minChains) this.names.sort();
  }

  /**
   * The `:NAME - [0:0]` lines in the names' present order, each ended by a newline, in pieces
   * of a block of lines each, made as they are asked for.
   */
  *linePieces(): Generator<string> {
    yield* this.runs(true);
  }

  /** order(minChains), then the lines in blocks joined by newlines (none when nothing was declared). */
  blocks(minChains = MIN_CHAINS_TO_ORDER): string[] {
    this.order(minChains);
    return [...this.runs(false)];
  }

  private *runs(ended: boolean): Generator<string> {
    const lines: string[] = [];
    for (let from = 0; from < this.names.length; from += BLOCK_LINES) {
      lines.length = 0;
      const to = Math.min(this.names.length, from + BLOCK_LINES);
      for (let i = from; i < to; i++) lines.push(`:${this.names[i]} - [0:0]`);
      if (ended) lines.push("");
      yield lines.join("\n");
    }
  }
}
