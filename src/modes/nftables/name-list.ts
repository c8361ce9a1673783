// A short list of names kept per service port (its chains, its affinity sets). Most ports have
// one chain: the name alone is kept, not an array of one (48 bytes, 100,000 times for a
// Service of 100,000 ports); none is the one shared empty array.

/** One name, or any other number of them. */
export type NameList = string | readonly string[];

const NONE: readonly string[] = Object.freeze([]);

/** The list to keep for `names`. */
export function nameList(names: readonly string[]): NameList {
  if (names.length === 0) return NONE;
  return names.length === 1 ? names[0]! : names;
}

/** The names, as an array (made for a single name). */
export function namesIn(list: NameList): readonly string[] {
  return typeof list === "string" ? [list] : list;
}

/** Adds each name to `into`, without making an array for a single one. */
export function addNames(into: Set<string>, list: NameList): void {
  if (typeof list === "string") into.add(list);
  else for (const name of list) into.add(name);
}
