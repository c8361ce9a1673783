// An insertion-ordered map from strings, for tables of one entry per service port (100,000 for
// one Service): keys and values in two arrays in insertion order, found through an
// open-addressing index of their positions. A Map costs ~68 bytes an entry in bun, this ~28.
// Iterates as a Map does: insertion order, a replaced value keeps its place, a deleted and
// re-added key goes last.

import { stringHash } from "./string-hash.ts";

/** Index slots: 0 is free, DELETED once held a position, anything else is position + 1. */
const DELETED = -1;
const MIN_SLOTS = 8;

export class StringMap<V> {
  /** undefined: a deleted position (a hole). */
  private keyList: (string | undefined)[] = [];
  private valueList: (V | undefined)[] = [];
  private index = new Int32Array(MIN_SLOTS);
  private live = 0;
  private deletedSlots = 0;

  get size(): number {
    return this.live;
  }

  /** The index slot holding `key`, or -1. */
  private find(key: string): number {
    const index = this.index;
    const mask = index.length - 1;
    for (let i = stringHash(key) & mask; ; i = (i + 1) & mask) {
      const at = index[i]!;
      if (at === 0) return -1;
      if (at !== DELETED && this.keyList[at - 1] === key) return i;
    }
  }

  get(key: string): V | undefined {
    const i = this.find(key);
    return i < 0 ? undefined : this.valueList[this.index[i]! - 1];
  }

  has(key: string): boolean {
    return this.find(key) >= 0;
  }

  set(key: string, value: V): this {
    const i = this.find(key);
    if (i >= 0) {
      this.valueList[this.index[i]! - 1] = value;
      return this;
    }
    if ((this.live + this.deletedSlots + 1) * 4 > this.index.length * 3) this.rebuild(this.live + 1);
    this.keyList.push(key);
    this.valueList.push(value);
    this.place(key, this.keyList.length);
    this.live++;
    return this;
  }

  /**
   * Where `key`'s value is kept, for valueAt and setValueAt (one lookup for a read and a write);
   * -1 when absent. A position holds until a key is deleted and the map then grows.
   */
  positionOf(key: string): number {
    const i = this.find(key);
    return i < 0 ? -1 : this.index[i]! - 1;
  }

  valueAt(position: number): V {
    return this.valueList[position] as V;
  }

  setValueAt(position: number, value: V): void {
    this.valueList[position] = value;
  }

  /** Makes room for `entries` keys in all, so that adding up to them rebuilds nothing. */
  reserve(entries: number): void {
    if ((entries + this.deletedSlots) * 4 > this.index.length * 3) this.rebuild(Math.max(entries, this.live));
  }

  delete(key: string): boolean {
    const i = this.find(key);
    if (i < 0) return false;
    const pos = this.index[i]! - 1;
    this.index[i] = DELETED;
    this.keyList[pos] = undefined;
    this.valueList[pos] = undefined;
    this.live--;
    // Compacted by the next set that needs room (deleted slots count as taken), not here: an
    // iteration that deletes as it goes sees the holes, as a Map's would.
    this.deletedSlots++;
    return true;
  }

  clear(): void {
    this.keyList = [];
    this.valueList = [];
    this.index = new Int32Array(MIN_SLOTS);
    this.live = 0;
    this.deletedSlots = 0;
  }

  // The first free or deleted slot on the key's way gets its position (the key is not there).
  private place(key: string, position: number): void {
    const index = this.index;
    const mask = index.length - 1;
    let i = stringHash(key) & mask;
    while (index[i] !== 0 && index[i] !== DELETED) i = (i + 1) & mask;
    if (index[i] === DELETED) this.deletedSlots--;
    index[i] = position;
  }

  // New arrays without holes and an index with room for `entries` at most 3/4 full. New, not
  // changed in place: an iteration under way goes on over the arrays it started with (keys
  // added from then on are not visited by it; nothing here adds while iterating).
  private rebuild(entries: number): void {
    const keys: string[] = [];
    const values: (V | undefined)[] = [];
    for (let i = 0; i < this.keyList.length; i++) {
      const k = this.keyList[i];
      if (k === undefined) continue;
      keys.push(k);
      values.push(this.valueList[i]);
    }
    let slots = MIN_SLOTS;
    while (slots * 3 < entries * 4 + 4) slots *= 2;
    this.keyList = keys;
    this.valueList = values;
    this.index = new Int32Array(slots);
    this.deletedSlots = 0;
    for (let i = 0; i < keys.length; i++) this.place(keys[i]!, i + 1);
  }

  *keys(): MapIterator<string> {
    const keys = this.keyList;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== undefined) yield keys[i]!;
  }

  *values(): MapIterator<V> {
    const keys = this.keyList;
    const values = this.valueList;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== undefined) yield values[i] as V;
  }

  *entries(): MapIterator<[string, V]> {
    const keys = this.keyList;
    const values = this.valueList;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== undefined) yield [keys[i]!, values[i] as V];
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }
}
