// What the ipset client offers and the shapes it speaks in: set specs as ipvs mode creates them
// (upstream's names and types), sets as read back, and the version check's answer.

import type { ExecInput } from "../../exec/types.ts";
import type { InetFamily } from "../../util/net/family.ts";

/** The oldest ipset whose set types and options the ipvs proxier relies on. */
export const MIN_IPSET_VERSION = "6.0";

export type IpsetVersionResult = { ok: true; version: string } | { ok: false; detail: string };

/** The set types ipvs mode creates (upstream's names and types). */
export type IpsetType =
  | "hash:ip"
  | "hash:ip,port"
  | "hash:ip,port,ip"
  | "hash:ip,port,net"
  | "hash:net"
  | "bitmap:port";

export const IPSET_TYPES: readonly IpsetType[] = [
  "hash:ip",
  "hash:ip,port",
  "hash:ip,port,ip",
  "hash:ip,port,net",
  "hash:net",
  "bitmap:port",
];

export interface IpsetSetSpec {
  readonly name: string;
  readonly type: IpsetType;
  /** Address family of hash sets; bitmap:port has none and reads back as "inet". */
  readonly family: InetFamily;
  /**
   * What the set is for (upstream's set comments). Kept for logs only: upstream never passes it
   * to ipset, and neither do we, so the kernel's create parameters stay identical to upstream's
   * (`create -exist` refuses a set whose extensions differ).
   */
  readonly comment: string;
  /** Default 1024. */
  readonly hashSize?: number;
  /** Default 65536. */
  readonly maxElem?: number;
  /** bitmap:port only, e.g. "0-65535" (the default). */
  readonly range?: string;
}

export interface IpsetSet {
  readonly spec: IpsetSetSpec;
  /** Entries as ipset prints them ("198.51.100.10,tcp:80"). */
  readonly entries: ReadonlySet<string>;
  /** Per-entry comments, for sets created with the comment extension (not ours). */
  readonly comments?: ReadonlyMap<string, string>;
}

export interface IpsetClient {
  /** The installed ipset version ("7.17"), or why it could not be determined. */
  version(): Promise<IpsetVersionResult>;
  /** Every set with its entries, from one `ipset save`. */
  listSets(): Promise<Map<string, IpsetSet>>;
  /**
   * One `ipset restore -exist` of a script (create/add/del/flush/destroy lines). Not atomic:
   * on failure the lines before the reported one have mostly been applied (ipset sends runs of
   * add/del lines for one set as one batch, and a batch cut short by a syntax error is dropped),
   * so callers re-read with listSets() before trusting their picture of the kernel. A big
   * script can come as whole-line pieces, each newline-terminated, written one after another
   * (made as they are read, if the caller likes: then it must not be empty, and `size.lines`
   * says how many lines it has, for the run's bound; a text or an array is counted).
   */
  restore(script: ExecInput, size?: { readonly lines?: number }): Promise<void>;
  /** Destroys a set; missing is not an error. */
  destroy(name: string): Promise<void>;
}
