// A map from strings for ElementStore, which may hold millions of entries: an open-addressing
// table (linear probing) in two arrays. A Map costs about 170 bytes an entry (measured in bun:
// 2 million entries of strings the caller holds anyway, 325 MiB); this 20 to 32.

/** Slots of a table at least (a power of two: most hold one element or a few). */
const MIN_SLOTS = 4;
const HASH_START = (0x811c9dc5 ^ Math.floor(Math.random() * 0x100000000)) >>> 0;

/** Keys are compared by value (===); `undefined` is no value. */
export class StringTable<V> {
  /** undefined: never used; null: deleted. */
  private keys: (string | null | undefined)[] = new Array<undefined>(MIN_SLOTS).fill(undefined);
  private values: (V | undefined)[] = new Array<undefined>(MIN_SLOTS).fill(undefined);
  private count = 0;
  private deleted = 0;

  get size(): number {
    return this.count;
  }

  /** Where `key` is, or where it would go (the first deleted slot on its way, if any). */
  private slot(key: string): number {
    // FNV-1a over the UTF-16 code units from a start of this process's own, its bits then mixed
    // (linear probing wants good low bits): addresses chosen to collide would need the start.
    let h = HASH_START;
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    h = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
    h ^= h >>> 16;
    const mask = this.keys.length - 1;
    let i = h & mask;
    let free = -1;
    for (;;) {
      const k = this.keys[i];
      if (k === undefined) return free >= 0 ? free : i;
      if (k === null) {
        if (free < 0) free = i;
      } else if (k === key) return i;
      i = (i + 1) & mask;
    }
  }

  get(key: string): V | undefined {
    const i = this.slot(key);
    return this.keys[i] === key ? this.values[i] : undefined;
  }

  set(key: string, value: V): void {
    let i = this.slot(key);
    if (this.keys[i] === key) {
      this.values[i] = value;
      return;
    }
    if ((this.count + this.deleted + 1) * 4 > this.keys.length * 3) {
      this.grow();
      i = this.slot(key);
    }
    if (this.keys[i] === null) this.deleted--;
    this.keys[i] = key;
    this.values[i] = value;
    this.count++;
  }

  delete(key: string): void {
    const i = this.slot(key);
    if (this.keys[i] !== key) return;
    this.keys[i] = null;
    this.values[i] = undefined;
    this.count--;
    this.deleted++;
  }

  /** Rebuilt with at least twice as many slots as live entries, without the deleted ones. */
  private grow(): void {
    const keys = this.keys;
    const values = this.values;
    let cap = MIN_SLOTS;
    while (cap < (this.count + 1) * 2) cap *= 2;
    this.keys = new Array<undefined>(cap).fill(undefined);
    this.values = new Array<undefined>(cap).fill(undefined);
    this.deleted = 0;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (k === undefined || k === null) continue;
      const j = this.slot(k);
      this.keys[j] = k;
      this.values[j] = values[i];
    }
  }
}
