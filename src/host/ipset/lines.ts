// The ipset script lines ipvs mode writes, in upstream's exact argument order: create, add, del,
// flush, destroy. Set names and entries pass through restore-text.ts, which refuses what ipset
// would not read as one word.

import { count, entry as entryWord, setName } from "./restore-text.ts";
import type { IpsetSetSpec } from "./types.ts";

const DEFAULT_HASH_SIZE = 1024;
const DEFAULT_MAX_ELEM = 65536;
export const DEFAULT_PORT_RANGE = "0-65535";

/** `create` line of a set, as upstream's createSet builds it (without -exist; restore adds it). */
export function createLine(spec: IpsetSetSpec): string {
  const name = setName(spec.name);
  if (spec.type === "bitmap:port")
    return `create ${name} bitmap:port range ${entryWord(spec.range ?? DEFAULT_PORT_RANGE)}`;
  return (
    `create ${name} ${spec.type} family ${spec.family} ` +
    `hashsize ${count(spec.hashSize ?? DEFAULT_HASH_SIZE, "hashsize")} ` +
    `maxelem ${count(spec.maxElem ?? DEFAULT_MAX_ELEM, "maxelem")}`
  );
}

export function addLine(set: string, entry: string): string {
  return `add ${setName(set)} ${entryWord(entry)}`;
}

export function delLine(set: string, entry: string): string {
  return `del ${setName(set)} ${entryWord(entry)}`;
}

/**
 * addLine/delLine in two parts, for scripts of many members: the head ("add SET ") made once
 * per set, and each member's own text as its tail (checked, never copied).
 */
export function memberLineHead(verb: "add" | "del", set: string): string {
  return `${verb} ${setName(set)} `;
}

export { entryWord as memberLineTail };

export function flushLine(set: string): string {
  return `flush ${setName(set)}`;
}

export function destroyLine(set: string): string {
  return `destroy ${setName(set)}`;
}
