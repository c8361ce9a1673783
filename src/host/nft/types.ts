// What the nft client offers: the tables there are, and deleting one.

export type NftFamily = "ip" | "ip6" | "inet" | "arp" | "bridge" | "netdev";

export interface NftTable {
  readonly family: NftFamily;
  readonly name: string;
}

export interface NftClient {
  /** Every table; undefined when nft is not installed on this host. */
  listTables(): Promise<NftTable[] | undefined>;
  /** Deletes a table with everything in it; false when it did not exist. */
  deleteTable(table: NftTable): Promise<boolean>;
}
