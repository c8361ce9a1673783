// The one place text becomes `ipset restore` tokens. ipset splits a script line on blanks and
// groups double-quoted text; kube-proxy writes no comments into sets (upstream passes none), so
// only set names and entries reach a script, and each must be one plain word: a set name within
// IPSET_MAXNAMELEN, an entry made of what addresses, protocols, ports and CIDRs are spelled
// with. Anything else is refused with a HostInputError before a line is written.

import { HostInputError } from "../errors.ts";

/** IPSET_MAXNAMELEN (32) less the NUL: ipset refuses a longer set name. */
export const SET_NAME_MAX_BYTES = 31;

/** Far above the longest entry we write (IPv6, protocol, port, IPv6 CIDR: under 100). */
export const ENTRY_MAX_BYTES = 256;

// Not starting with "-" (an option to ipset's own parser); no blank, quote or other mark.
const SET_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:-]*$/;
// Hex digits and letters (protocol names), dots and colons (addresses), "/" (prefixes), ","
// (element parts) and "-" (port ranges); never a leading "-", which ipset would read as an option.
const ENTRY = /^[A-Za-z0-9:][A-Za-z0-9.:,/-]*$/;

/** A set name as given, when ipset reads it as one word within its limit; else refused. */
export function setName(name: string): string {
  if (name.length > SET_NAME_MAX_BYTES) {
    throw new HostInputError("ipset", "set name", name, `longer than ${SET_NAME_MAX_BYTES} bytes`);
  }
  if (!SET_NAME.test(name)) {
    throw new HostInputError("ipset", "set name", name, "not made of letters, digits and _.:-");
  }
  return name;
}

/** An entry as given, when it is one word of address, protocol and port characters; else refused. */
export function entry(text: string): string {
  if (text.length > ENTRY_MAX_BYTES || !ENTRY.test(text)) {
    throw new HostInputError("ipset", "entry", text, "not one word of address, protocol and port text");
  }
  return text;
}

/** A create option's count (hashsize, maxelem) as given, when it is a positive whole number. */
export function count(n: number, what: string): number {
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new HostInputError("ipset", what, String(n), "not a positive whole number");
  return n;
}
