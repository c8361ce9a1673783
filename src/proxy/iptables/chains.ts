// Chain names the iptables proxier owns. The per-service names must equal upstream's byte for
// byte: an operator switching between upstream and us relies on the same chain being found, and
// stale-chain cleanup recognises them by prefix.

import { createHash } from "node:crypto";

/** Top-level chains (nat and/or filter), as upstream names them. */
export const KUBE_SERVICES = "KUBE-SERVICES";
export const KUBE_EXTERNAL_SERVICES = "KUBE-EXTERNAL-SERVICES";
export const KUBE_NODEPORTS = "KUBE-NODEPORTS";
export const KUBE_POSTROUTING = "KUBE-POSTROUTING";
export const KUBE_MARK_MASQ = "KUBE-MARK-MASQ";
export const KUBE_FORWARD = "KUBE-FORWARD";
export const KUBE_PROXY_FIREWALL = "KUBE-PROXY-FIREWALL";
export const KUBE_PROXY_CANARY = "KUBE-PROXY-CANARY";
/** kubelet's chain; we keep its "block incoming localnet connections" rule in place. */
export const KUBE_FIREWALL = "KUBE-FIREWALL";

export const SVC_PREFIX = "KUBE-SVC-";
export const SVL_PREFIX = "KUBE-SVL-";
export const EXT_PREFIX = "KUBE-EXT-";
export const FW_PREFIX = "KUBE-FW-";
export const SEP_PREFIX = "KUBE-SEP-";

const SERVICE_CHAIN_PREFIXES = [SVC_PREFIX, SVL_PREFIX, SEP_PREFIX, FW_PREFIX, EXT_PREFIX] as const;

const BASE32_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

// Reused buffers (names are made one at a time): the 16 base32 characters of the last hash,
// and the character codes of the name being built.
const hashChars: number[] = [];
const nameCodes: number[] = [];

// The first 16 characters of the standard (RFC 4648) base32 encoding of sha256(input), as
// character codes in hashChars. 16 characters are exactly 80 bits, i.e. the first 10 digest
// bytes, so no padding is involved.
function hashInto(input: string): void {
  const digest = createHash("sha256").update(input).digest();
  hashChars.length = 0;
  // Two groups of 5 bytes = 40 bits = 8 base32 characters each; 40 bits fit a double exactly.
  for (let group = 0; group < 10; group += 5) {
    let bits = 0;
    for (let i = 0; i < 5; i++) bits = bits * 256 + digest[group + i]!;
    for (let shift = 35; shift >= 0; shift -= 5)
      hashChars.push(BASE32_ALPHABET.charCodeAt(Math.floor(bits / 2 ** shift) % 32));
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

/** KUBE-SEP-: the service port name, protocol and the endpoint's "ip:port" hashed together. */
export function endpointChain(servicePortName: string, protocolLower: string, endpoint: string): string {
  hashInto(servicePortName + protocolLower + endpoint);
  return hashedName(SEP_PREFIX);
}

/** Whether a chain is one of the per-service chains this proxier creates and garbage-collects. */
export function isServiceChainName(chain: string): boolean {
  return SERVICE_CHAIN_PREFIXES.some((p) => chain.startsWith(p));
}

/** The restore line that creates (or, with --noflush, flushes) a chain. */
export function chainLine(chain: string): string {
  return `:${chain} - [0:0]`;
}

/** Chain names declared in iptables-save output for one table (lines like ":NAME POLICY [p:b]"). */
export function chainsInSave(saveOutput: string): string[] {
  const out: string[] = [];
  for (const line of saveOutput.split("\n")) {
    if (line.charCodeAt(0) !== 58 /* ":" */) continue;
    const end = line.indexOf(" ");
    out.push(end < 0 ? line.slice(1) : line.slice(1, end));
  }
  return out;
}
