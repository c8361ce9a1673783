// The one place text becomes `ip` words, in argv and in `ip -batch` lines. Only device names and
// host addresses go in. A device name must be one the kernel takes (dev_valid_name: 1 to
// IFNAMSIZ-1 bytes, not "." or "..", no "/", ":" or blank) and, stricter, plain ASCII that
// iproute2's batch reader keeps as one word (no quote, "#" or backslash) and no option ("-...").
// Callers still put "name"/"dev" before it: a bare "help" or "dev" is read as a keyword.
// Addresses must parse and are written canonical with their host prefix. Refusals are
// HostInputErrors, raised before `ip` runs.

import { canonicalIPInet } from "../../util/net/address.ts";
import { familyOf, maxPrefixLen } from "../../util/net/family.ts";
import { HostInputError } from "../errors.ts";

/** IFNAMSIZ (16) less the NUL: the kernel refuses longer device names. */
export const IFNAME_MAX_BYTES = 15;

const IFNAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** A device name as given, when the kernel and iproute2 take it as one name; else refused. */
export function ifName(name: string): string {
  if (name.length > IFNAME_MAX_BYTES) {
    throw new HostInputError("ip", "device name", name, `longer than ${IFNAME_MAX_BYTES} bytes`);
  }
  if (!IFNAME.test(name)) {
    throw new HostInputError(
      "ip",
      "device name",
      name,
      "not made of letters, digits and _.- (or starts with .-)",
    );
  }
  return name;
}

/** "ADDRESS/32" or "ADDRESS/128", canonical, when `ip` is an IP address; else refused. */
export function hostPrefix(ip: string): string {
  const canonical = canonicalIPInet(ip);
  if (!canonical) throw new HostInputError("ip", "address", ip, "not an IP address");
  return `${canonical}/${maxPrefixLen(familyOf(canonical))}`;
}
