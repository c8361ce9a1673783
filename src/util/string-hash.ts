// The hash of the string-keyed tables that replace Maps where an entry per service port counts
// (ElementStore's StringTable, StringMap): open addressing with linear probing wants good low bits.

const HASH_START = (0x811c9dc5 ^ Math.floor(Math.random() * 0x100000000)) >>> 0;

/**
 * FNV-1a over the UTF-16 code units from a start of this process's own, its bits then mixed:
 * keys chosen to collide (addresses, names from the API) would need the start.
 */
export function stringHash(key: string): number {
  let h = HASH_START;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
  return h ^ (h >>> 16);
}
