// The one IP family type, and the spellings the tools and APIs use for it. Code passes
// IPFamily around; the other spellings appear only where a command line or a record needs them.

export type IPFamily = "IPv4" | "IPv6";

/** Family as a number: `ip -4`/`-6`, node:net's isIP, Go's net package checks. */
export type FamilyNumber = 4 | 6;

/** Family as ip, ipset and nft's "inet" family name spell it. */
export type InetFamily = "inet" | "inet6";

/** The family of a canonical address or CIDR, without validating it (an edge already did). */
export function familyOf(ip: string): IPFamily {
  return ip.includes(":") ? "IPv6" : "IPv4";
}

export function familyNumber(family: IPFamily): FamilyNumber {
  return family === "IPv4" ? 4 : 6;
}

export function familyFromNumber(family: FamilyNumber): IPFamily {
  return family === 4 ? "IPv4" : "IPv6";
}

export function inetFamily(family: IPFamily): InetFamily {
  return family === "IPv4" ? "inet" : "inet6";
}

/** Family as nft spells it: a table's family, and the payload of addresses ("ip daddr"). */
export type NftIPFamily = "ip" | "ip6";

export function nftFamily(family: IPFamily): NftIPFamily {
  return family === "IPv4" ? "ip" : "ip6";
}

/** "-4" or "-6", the family switch of ip and conntrack. */
export function familyFlag(family: IPFamily): "-4" | "-6" {
  return family === "IPv4" ? "-4" : "-6";
}

/** Bits in an address of the family: 32 or 128. */
export function maxPrefixLen(family: IPFamily): 32 | 128 {
  return family === "IPv4" ? 32 : 128;
}

/** The canonical addresses of one family, in their original order. */
export function ofFamily(ips: readonly string[], family: IPFamily): string[] {
  return ips.filter((ip) => familyOf(ip) === family);
}
