// Addresses and the dummy device ipvs mode needs, through `ip`. All binds and unbinds of a sync
// go in one `ip -batch -` call.

export interface InterfaceAddress {
  readonly device: string;
  /** Without prefix length. */
  readonly address: string;
}

export interface NetlinkClient {
  /** Creates a dummy device if missing (ip link add NAME type dummy); true when it existed. */
  ensureDummyDevice(name: string): Promise<boolean>;
  /** Deletes a device; missing is not an error. */
  deleteDevice(name: string): Promise<void>;
  /** Addresses bound to one device. */
  listAddresses(device: string): Promise<string[]>;
  /** One `ip -batch -` binding `add` and unbinding `remove` (address/32 or /128) on `device`. */
  bindAddresses(device: string, add: readonly string[], remove: readonly string[]): Promise<void>;
  /** Every local address except loopback, link-local and those on `excludeDevice` (node IPs). */
  localAddresses(excludeDevice?: string): Promise<InterfaceAddress[]>;
  /**
   * Every local address of every device, loopback and link-local included (what nodePortAddresses
   * is matched against). Raises NetlinkError when `ip` fails: an empty answer would silently
   * drop every NodePort rule.
   */
  allAddresses(): Promise<string[]>;
}
