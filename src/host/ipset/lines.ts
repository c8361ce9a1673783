// The ipset script lines ipvs mode writes, in upstream's exact argument order: create, add, del,
// flush, destroy.

import type { IpsetSetSpec } from "./types.ts";

const DEFAULT_HASH_SIZE = 1024;
const DEFAULT_MAX_ELEM = 65536;
export const DEFAULT_PORT_RANGE = "0-65535";

/** `create` line of a set, as upstream's createSet builds it (without -exist; restore adds it). */
export function createLine(spec: IpsetSetSpec): string {
  if (spec.type === "bitmap:port")
    return `create ${spec.name} bitmap:port range ${spec.range ?? DEFAULT_PORT_RANGE}`;
  return (
    `create ${spec.name} ${spec.type} family ${spec.family} ` +
    `hashsize ${spec.hashSize ?? DEFAULT_HASH_SIZE} maxelem ${spec.maxElem ?? DEFAULT_MAX_ELEM}`
  );
}

export function addLine(set: string, entry: string): string {
  return `add ${set} ${entry}`;
}

export function delLine(set: string, entry: string): string {
  return `del ${set} ${entry}`;
}

export function flushLine(set: string): string {
  return `flush ${set}`;
}

export function destroyLine(set: string): string {
  return `destroy ${set}`;
}
