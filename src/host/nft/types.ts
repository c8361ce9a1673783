// What the nft client offers: typed nftables objects (table, chain, rule, set, map, element),
// transactions of them that nft applies atomically, reads of what one table holds, and the
// table-level calls --cleanup needs. Rendering to nft's syntax lives in transaction.ts.

export type NftFamily = "ip" | "ip6" | "inet" | "arp" | "bridge" | "netdev";

export interface NftTable {
  readonly family: NftFamily;
  readonly name: string;
}

export type NftChainType = "filter" | "nat" | "route";
export type NftHook = "prerouting" | "input" | "forward" | "output" | "postrouting";

/** The table a transaction works in (every object names its container within it). */
export interface NftTableObject {
  readonly kind: "table";
  readonly comment?: string;
}

export interface NftChain {
  readonly kind: "chain";
  readonly name: string;
  /** Base chains only: type, hook and a numeric priority (names mean different numbers per hook). */
  readonly base?: { readonly type: NftChainType; readonly hook: NftHook; readonly priority: number };
  readonly comment?: string;
}

export interface NftRule {
  readonly kind: "rule";
  readonly chain: string;
  /** The rule's statements in nft syntax, e.g. "ip daddr @cluster-ips reject". */
  readonly rule: string;
  readonly comment?: string;
}

export interface NftSet {
  readonly kind: "set";
  readonly name: string;
  /** Element type, e.g. "ipv4_addr" (needed to add the set, not to flush or delete it). */
  readonly type?: string;
  readonly flags?: readonly ("dynamic" | "timeout" | "interval" | "constant")[];
  readonly timeoutSeconds?: number;
  readonly comment?: string;
}

export interface NftMap {
  readonly kind: "map";
  readonly name: string;
  /** Key and value types, e.g. "ipv4_addr . inet_proto . inet_service : verdict" (needed to add). */
  readonly type?: string;
  readonly comment?: string;
}

export interface NftElement {
  readonly kind: "element";
  /** The set or map the element belongs to. */
  readonly container: string;
  /** Key parts, joined with " . " (a concatenation). */
  readonly key: readonly string[];
  /** Map elements: the value parts (for a verdict map, one verdict such as "goto x"). */
  readonly value?: readonly string[];
  readonly comment?: string;
}

export type NftObject = NftTableObject | NftChain | NftRule | NftSet | NftMap | NftElement;

/**
 * add: create if missing (never an error when it exists with the same properties);
 * flush: empty a table, chain, set or map; delete: remove (an error when it does not exist).
 */
export type NftVerb = "add" | "flush" | "delete";

export interface NftOperation {
  readonly verb: NftVerb;
  readonly object: NftObject;
}

/** Names of one kind of object in the client's table. */
export type NftListKind = "chains" | "sets" | "maps";

/** A client bound to one table (family and name), as upstream's knftables is. */
export interface NftClient {
  readonly family: NftFamily;
  readonly table: string;
  /** Applies every operation of the transaction atomically (`nft -f -`); NftError on failure. */
  run(tx: NftTransactionLike): Promise<void>;
  /** Asks nft whether the transaction would apply, changing nothing (`nft --check -f -`). */
  check(tx: NftTransactionLike): Promise<void>;
  /**
   * Names of the chains, sets or maps in the table (`nft --json list KIND FAMILY`, kept to this
   * table). A table that does not exist holds nothing: the answer is [], not an error, so no
   * second nft run is spent asking whether the table is there.
   */
  list(kind: NftListKind): Promise<string[]>;
  /**
   * The whole table with its elements, as `nft --json list table` prints it (parse it with
   * table-listing.ts); undefined when the table does not exist. For drift checks, not syncs.
   */
  listTableJson?(): Promise<string | undefined>;
  /** `nft --version`'s version number ("1.0.6"); undefined when nft is not installed. */
  version(): Promise<string | undefined>;
  /** Every table on the host; undefined when nft is not installed. */
  listTables(): Promise<NftTable[] | undefined>;
  /** `nft list table` of this client's table as text; undefined when it does not exist. */
  listTable(): Promise<string | undefined>;
  /** Deletes a table with everything in it; false when it did not exist. */
  deleteTable(table: NftTable): Promise<boolean>;
}

/** What the client needs of a transaction: its size and its nft input text. */
export interface NftTransactionLike {
  /** Operations so far (a part still to be produced is not counted yet). */
  readonly size: number;
  render(): string;
  /**
   * The same text in pieces, written to nft one after another (never joined into one string);
   * parts produced as nft reads them make this a one-time iterable.
   */
  pieces?(): Iterable<string>;
  /** Nothing to apply: no operations and no part still to be produced (else: size is 0). */
  isEmpty?(): boolean;
  /**
   * The typed operations, when the transaction kept them (a client that writes netlink sends
   * those instead of the text); undefined when it did not.
   */
  operations?(): readonly NftOperation[] | undefined;
}
