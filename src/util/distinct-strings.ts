// The distinct strings of a list, in linear time and little memory. A Service may list 100,000
// externalIPs, source ranges or ports, and a Set of them costs ~80 bytes an entry of short-lived
// garbage while the object is read; this table costs 8 bytes an entry: the strings' positions in
// an Int32Array, found by a hash of their characters (no string is made to hash one): the
// process-seeded hash of the other string tables, so lists made to collide cannot be made.

import { stringHash } from "./string-hash.ts";

/** Strings added once each, in the order first added. */
export class DistinctStrings {
  /** Distinct strings, in order. */
  readonly values: string[] = [];
  /** Open addressing: 1 + an index into `values`, 0 for an empty slot. */
  private table: Int32Array;

  /** `expected`: about how many will be added (the table grows past it). */
  constructor(expected = 8) {
    this.table = new Int32Array(capacityFor(expected));
  }

  /** Adds `s`; false when it was there already. */
  add(s: string): boolean {
    if ((this.values.length + 1) * 2 > this.table.length) this.grow();
    const mask = this.table.length - 1;
    for (let slot = stringHash(s) & mask; ; slot = (slot + 1) & mask) {
      const at = this.table[slot]!;
      if (at === 0) {
        this.values.push(s);
        this.table[slot] = this.values.length;
        return true;
      }
      if (this.values[at - 1] === s) return false;
    }
  }

  has(s: string): boolean {
    const mask = this.table.length - 1;
    for (let slot = stringHash(s) & mask; ; slot = (slot + 1) & mask) {
      const at = this.table[slot]!;
      if (at === 0) return false;
      if (this.values[at - 1] === s) return true;
    }
  }

  get size(): number {
    return this.values.length;
  }

  private grow(): void {
    const table = new Int32Array(this.table.length * 2);
    const mask = table.length - 1;
    for (let i = 0; i < this.values.length; i++) {
      let slot = stringHash(this.values[i]!) & mask;
      while (table[slot] !== 0) slot = (slot + 1) & mask;
      table[slot] = i + 1;
    }
    this.table = table;
  }
}

/** A power of two at least twice `n` (at most half full), and at least 16. */
function capacityFor(n: number): number {
  let c = 16;
  while (c < n * 2) c *= 2;
  return c;
}
