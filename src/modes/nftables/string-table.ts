// A map from strings for ElementStore, which may hold millions of entries: an open-addressing
// table (linear probing) in two arrays. A Map costs about 170 bytes an entry (measured in bun:
// 2 million entries of strings the caller holds anyway, 325 MiB); this 20 to 32.

import { stringHash } from "../../util/string-hash.ts";

/** Slots of a table at least (a power of two: most hold one element or a few). */
const MIN_SLOTS = 4;

const NO_VALUES: never[] = [];

/** Keys are compared by value (===); `undefined` is no value. */
export class StringTable<V> {
  // Most tables hold one entry (a port's own key rest): held in two fields until a second comes.
  private oneKey: string | undefined;
  private oneValue: V | undefined;
  /** undefined: never used; null: deleted. No arrays while the table holds one entry at most. */
  private keys: (string | null | undefined)[] | undefined;
  private values: (V | undefined)[] = NO_VALUES;
  private count = 0;
  private deleted = 0;

  get size(): number {
    return this.count;
  }

  /** Where `key` is, or where it would go (the first deleted slot on its way, if any). */
  private slot(keys: (string | null | undefined)[], key: string): number {
    const mask = keys.length - 1;
    let i = stringHash(key) & mask;
    let free = -1;
    for (;;) {
      const k = keys[i];
      if (k === undefined) return free >= 0 ? free : i;
      if (k === null) {
        if (free < 0) free = i;
      } else if (k === key) return i;
      i = (i + 1) & mask;
    }
  }

  get(key: string): V | undefined {
    const keys = this.keys;
    if (keys === undefined) return key === this.oneKey ? this.oneValue : undefined;
    const i = this.slot(keys, key);
    return keys[i] === key ? this.values[i] : undefined;
  }

  set(key: string, value: V): void {
    let keys = this.keys;
    if (keys === undefined) {
      if (this.oneKey === undefined || this.oneKey === key) {
        this.oneKey = key;
        this.oneValue = value;
        this.count = 1;
        return;
      }
      // A second entry: both go to arrays.
      keys = this.keys = new Array<undefined>(MIN_SLOTS).fill(undefined);
      this.values = new Array<undefined>(MIN_SLOTS).fill(undefined);
      const j = this.slot(keys, this.oneKey);
      keys[j] = this.oneKey;
      this.values[j] = this.oneValue;
      this.oneKey = this.oneValue = undefined;
    }
    let i = this.slot(keys, key);
    if (keys[i] === key) {
      this.values[i] = value;
      return;
    }
    if ((this.count + this.deleted + 1) * 4 > keys.length * 3) {
      keys = this.grow(keys);
      i = this.slot(keys, key);
    }
    if (keys[i] === null) this.deleted--;
    keys[i] = key;
    this.values[i] = value;
    this.count++;
  }

  delete(key: string): void {
    const keys = this.keys;
    if (keys === undefined) {
      if (key !== this.oneKey) return;
      this.oneKey = this.oneValue = undefined;
      this.count = 0;
      return;
    }
    const i = this.slot(keys, key);
    if (keys[i] !== key) return;
    keys[i] = null;
    this.values[i] = undefined;
    this.count--;
    this.deleted++;
  }

  /** Every entry, in no particular order (the table must not change meanwhile). */
  *entries(): Generator<[string, V]> {
    const keys = this.keys;
    if (keys === undefined) {
      if (this.oneKey !== undefined) yield [this.oneKey, this.oneValue as V];
      return;
    }
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (k !== undefined && k !== null) yield [k, this.values[i] as V];
    }
  }

  /** Rebuilt with at least twice as many slots as live entries, without the deleted ones. */
  private grow(keys: (string | null | undefined)[]): (string | null | undefined)[] {
    const values = this.values;
    let cap = MIN_SLOTS;
    while (cap < (this.count + 1) * 2) cap *= 2;
    const into: (string | null | undefined)[] = new Array<undefined>(cap).fill(undefined);
    this.keys = into;
    this.values = new Array<undefined>(cap).fill(undefined);
    this.deleted = 0;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (k === undefined || k === null) continue;
      const j = this.slot(into, k);
      into[j] = k;
      this.values[j] = values[i];
    }
    return into;
  }
}
