// Address checks for configuration, with Go's net package semantics (ParseIP, ParseCIDR,
// strconv.Atoi), since upstream validation is defined in those terms. The parsing itself is
// src/util/net's strict rule; families are numbers here, as validation messages count them.

import { parseCIDRStrict, parseIPStrict } from "../util/net/address.ts";
import { type FamilyNumber, familyNumber } from "../util/net/family.ts";
import { joinHostPort, splitHostPort } from "../util/net/host-port.ts";

/** The family of a literal IP address, or undefined. Zones ("fe80::1%eth0") are not IPs to Go. */
export function ipFamily(text: string): FamilyNumber | undefined {
  const ip = parseIPStrict(text);
  return ip && familyNumber(ip.family);
}

export interface CIDR {
  family: FamilyNumber;
  address: string;
  prefix: number;
}

/** Parses "address/prefix"; host bits may be set, as Go's ParseCIDR allows. */
export function parseCIDR(text: string): CIDR | undefined {
  const cidr = parseCIDRStrict(text);
  return cidr && { family: familyNumber(cidr.family), address: cidr.address, prefix: cidr.prefix };
}

/** Port text as Go's strconv.Atoi reads it, restricted to 1..65535; undefined otherwise. */
export function parsePort(text: string): number | undefined {
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/**
 * Upstream's AppendPortIfNeeded: a bare IP gets `port` appended (bracketed for IPv6); anything
 * that already has a port, or is not an IP at all, is returned unchanged for validation to judge.
 */
export function appendPortIfNeeded(address: string, port: number): string {
  if (splitHostPort(address).ok) return address;
  if (ipFamily(address) === undefined) return address;
  return joinHostPort(address, port);
}
