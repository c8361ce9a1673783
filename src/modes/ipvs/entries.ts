// ipset entry text, spelled the way `ipset save` prints members. The proxier compares what it
// wants with what the kernel lists as plain strings, so any spelling difference (a "/32" on a
// host network, say) would turn into a delete and re-add on every sync.

import { flatString } from "../../util/flat-string.ts";
import { familyOf, maxPrefixLen } from "../../util/net/family.ts";
import type { LowerProtocol } from "../../util/net/protocol.ts";

/**
 * hash:ip,port — "198.51.100.1,tcp:80". Also the key of a virtual server, kept by the million
 * (20,000 external IPs x 100 ports): made flat, as a concatenation kept as it is costs its
 * parts besides the text once read.
 */
export function ipPortEntry(ip: string, protocol: LowerProtocol, port: number): string {
  return flatString(`${ip},${protocol}:${port}`);
}

/** hash:ip,port,ip — "192.0.2.5,tcp:8080,192.0.2.5". */
export function ipPortIPEntry(ip: string, protocol: LowerProtocol, port: number, ip2: string): string {
  return `${ip},${protocol}:${port},${ip2}`;
}

/** hash:ip,port,net — ipset prints a full-length prefix as a bare address. */
export function ipPortNetEntry(ip: string, protocol: LowerProtocol, port: number, cidr: string): string {
  return `${ip},${protocol}:${port},${memberNet(cidr)}`;
}

/** bitmap:port — "30080". */
export function portEntry(port: number): string {
  return String(port);
}

function memberNet(cidr: string): string {
  const slash = cidr.indexOf("/");
  if (slash < 0) return cidr;
  const full = String(maxPrefixLen(familyOf(cidr)));
  return cidr.slice(slash + 1) === full ? cidr.slice(0, slash) : cidr;
}
