// Chain names the iptables proxier owns. The per-service names must equal upstream's byte for
// byte: an operator switching between upstream and us relies on the same chain being found, and
// stale-chain cleanup recognises them by prefix.

import { sha256 } from "../../util/sha256-base32.ts";

export const SVC_PREFIX = "KUBE-SVC-";
export const SVL_PREFIX = "KUBE-SVL-";
export const EXT_PREFIX = "KUBE-EXT-";
export const FW_PREFIX = "KUBE-FW-";
export const SEP_PREFIX = "KUBE-SEP-";

const SERVICE_CHAIN_PREFIXES = [SVC_PREFIX, SVL_PREFIX, SEP_PREFIX, FW_PREFIX, EXT_PREFIX] as const;

const BASE32_CODES = Array.from("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", (c) => c.charCodeAt(0));

// Reused buffers (names are made one at a time): the 16 base32 characters of the last hash,
// and the character codes of the name being built.
const hashChars: number[] = new Array<number>(16).fill(0);
const nameCodes: number[] = [];

// The first 16 characters of the standard (RFC 4648) base32 encoding of sha256(input), as
// character codes in hashChars. 16 characters are exactly 80 bits, i.e. the first 10 digest
// bytes, so no padding is involved.
function hashInto(input: string): void {
  const d = sha256(input);
  let k = 0;
  // Two groups of 5 bytes = 40 bits = 8 characters each: a high byte and a 32-bit low word,
  // read 5 bits at a time with integer operations (a first sync names 110,000 chains).
  for (let g = 0; g < 10; g += 5) {
    const hi = d[g]!;
    const lo = ((d[g + 1]! << 24) | (d[g + 2]! << 16) | (d[g + 3]! << 8) | d[g + 4]!) >>> 0;
    hashChars[k++] = BASE32_CODES[hi >>> 3]!;
    hashChars[k++] = BASE32_CODES[((hi & 7) << 2) | (lo >>> 30)]!;
    for (let shift = 25; shift >= 0; shift -= 5) hashChars[k++] = BASE32_CODES[(lo >>> shift) & 31]!;
  }
}

// prefix + the hash as one flat string. Appending character by character (or the prefix to
// the hash) would leave a chain of partial strings behind every name, and a sync makes one
// name per endpoint: at 100,000 endpoints that chain costs tens of MB.
function hashedName(prefix: string): string {
  nameCodes.length = 0;
  for (let i = 0; i < prefix.length; i++) nameCodes.push(prefix.charCodeAt(i));
  for (const c of hashChars) nameCodes.push(c);
  return String.fromCharCode.apply(null, nameCodes);
}

/** The first 16 characters of the standard (RFC 4648) base32 encoding of sha256(input). */
export function hash16(input: string): string {
  hashInto(input);
  return hashedName("");
}

/** The four per-service-port chains; hashed once per service port and cached by the caller. */
export interface ServicePortChains {
  /** Endpoints for Cluster traffic policy. */
  readonly svc: string;
  /** Endpoints for Local traffic policy. */
  readonly svl: string;
  /** External destinations (NodePort, externalIPs, LoadBalancer IPs). */
  readonly ext: string;
  /** loadBalancerSourceRanges filtering. */
  readonly fw: string;
}

/** The KUBE-SVC- chain of a service port (what servicePortChains(...).svc is). */
export function serviceChain(servicePortName: string, protocolLower: string): string {
  hashInto(servicePortName + protocolLower);
  return hashedName(SVC_PREFIX);
}

/**
 * Upstream hashes servicePortName.String() followed by the lower-cased protocol; all four
 * chains share the hash and differ only in prefix.
 */
export function servicePortChains(servicePortName: string, protocolLower: string): ServicePortChains {
  hashInto(servicePortName + protocolLower);
  return {
    svc: hashedName(SVC_PREFIX),
    svl: hashedName(SVL_PREFIX),
    ext: hashedName(EXT_PREFIX),
    fw: hashedName(FW_PREFIX),
  };
}

/**
 * The chain of `prefix` that shares the hash of a port's KUBE-SVC- chain (KUBE-SVL-, KUBE-EXT-,
 * KUBE-FW-), as one flat string: a port keeps its KUBE-SVC- name and makes the others only
 * when it writes them.
 */
export function siblingChain(prefix: string, svcChain: string): string {
  nameCodes.length = 0;
  for (let i = 0; i < prefix.length; i++) nameCodes.push(prefix.charCodeAt(i));
  for (let i = SVC_PREFIX.length; i < svcChain.length; i++) nameCodes.push(svcChain.charCodeAt(i));
  return String.fromCharCode.apply(null, nameCodes);
}

/** KUBE-SEP-: the service port name, protocol and the endpoint's "ip:port" hashed together. */
export function endpointChain(servicePortName: string, protocolLower: string, endpoint: string): string {
  hashInto(servicePortName + protocolLower + endpoint);
  return hashedName(SEP_PREFIX);
}

/** Whether a chain is one of the per-service chains this proxier creates and garbage-collects. */
export function isServiceChainName(chain: string): boolean {
  return SERVICE_CHAIN_PREFIXES.some((p) => chain.startsWith(p));
}
