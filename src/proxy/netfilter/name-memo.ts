// A small string -> string memo for per-port name caches (an endpoint's chain name, by its
// "ip:port"). Proxiers keep one per service port for as long as the port exists, and most
// ports have one endpoint or a few: those are one array of key and value pairs, made at its
// size (none at all for a port without endpoints); only a port with many gets a Map, whose
// fixed cost (~900 bytes at 10 entries) pays off there.

/** Pairs (key at even index, value after it), or a Map once there are more than SMALL_MEMO. */
export type NameMemo = readonly string[] | Map<string, string>;

/** Up to this many entries, a memo is a pairs array. */
const SMALL_MEMO = 32;

/** The empty memo, shared by every port. */
export const EMPTY_NAME_MEMO: NameMemo = Object.freeze([]) as readonly string[];

export function memoSize(memo: NameMemo): number {
  return memo instanceof Map ? memo.size : memo.length / 2;
}

export function memoGet(memo: NameMemo, key: string): string | undefined {
  if (memo instanceof Map) return memo.get(key);
  for (let i = 0; i < memo.length; i += 2) if (memo[i] === key) return memo[i + 1];
  return undefined;
}

/** `memo` with `key` set to `value` (a new pairs array, or the same Map). The key must be new. */
export function memoAdd(memo: NameMemo, key: string, value: string): NameMemo {
  if (memo instanceof Map) return memo.set(key, value);
  if (memo.length / 2 >= SMALL_MEMO) {
    const map = new Map<string, string>();
    for (let i = 0; i < memo.length; i += 2) map.set(memo[i]!, memo[i + 1]!);
    return map.set(key, value);
  }
  const next = new Array<string>(memo.length + 2);
  for (let i = 0; i < memo.length; i++) next[i] = memo[i]!;
  next[memo.length] = key;
  next[memo.length + 1] = value;
  return next;
}

/** The memo with only the entries of `keys` (which are distinct); `memo` itself when it has no others. */
export function memoRetain(memo: NameMemo, keys: readonly string[]): NameMemo {
  if (memoSize(memo) <= keys.length) return memo;
  let out: NameMemo = EMPTY_NAME_MEMO;
  for (const key of keys) {
    const value = memoGet(memo, key);
    if (value !== undefined) out = memoAdd(out, key, value);
  }
  return out;
}
