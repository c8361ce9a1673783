// What the conntrack client offers: deleting the entries of a Service IP, a NodePort, or a
// DNAT to an endpoint that is gone.

import type { Protocol } from "../../util/net/protocol.ts";

export interface ConntrackClient {
  /** Entries whose original destination is the (Service) IP. Resolves to the number deleted. */
  clearEntriesForIP(ip: string, protocol: Protocol): Promise<number>;
  /** Entries to a (NodePort) port on any address of the family. */
  clearEntriesForPort(port: number, isIPv6: boolean, protocol: Protocol): Promise<number>;
  /** Entries to `origin` that were DNATed to `dest` (a Service IP to a gone endpoint). */
  clearEntriesForNAT(origin: string, dest: string, protocol: Protocol): Promise<number>;
  /** Entries to a port that were DNATed to `dest` (a NodePort to a gone endpoint). */
  clearEntriesForPortNAT(dest: string, port: number, protocol: Protocol): Promise<number>;
}
