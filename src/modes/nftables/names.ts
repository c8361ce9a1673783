// Names in the `kube-proxy` tables, spelled as upstream's nftables mode spells them, so an
// operator's `nft list table ip kube-proxy` reads the same under either proxy. Per-service
// chains are "<prefix><HASH8>-<namespace>/<service>/<protocol>/<port>"; the "/" that no fixed
// name contains is how stale-chain cleanup tells them apart. From a valid Kubernetes name these
// are always names nft takes; from any other text they may not be, and the per-port names are
// then refused (HostInputError from script-text's nftIdentifier) so the caller skips the port.

import { nftIdentifier } from "../../host/nft/script-text.ts";
import type { ServicePortName } from "../../proxy/types.ts";
import { sha256Base32Prefix } from "../../util/sha256-base32.ts";

export const KUBE_PROXY_TABLE = "kube-proxy";

// Base chains, named "<type>-<hook>" (and when they run, for the two filter chains before DNAT).
export const FILTER_PREROUTING_PRE_DNAT = "filter-prerouting-pre-dnat";
export const FILTER_OUTPUT_PRE_DNAT = "filter-output-pre-dnat";
export const FILTER_INPUT = "filter-input";
export const FILTER_FORWARD = "filter-forward";
export const FILTER_OUTPUT = "filter-output";
export const NAT_PREROUTING = "nat-prerouting";
export const NAT_OUTPUT = "nat-output";
export const NAT_POSTROUTING = "nat-postrouting";

// Dispatch to services.
export const SERVICES_CHAIN = "services";
export const SERVICE_IPS_MAP = "service-ips";
export const SERVICE_NODEPORTS_MAP = "service-nodeports";
export const NODEPORT_IPS_SET = "nodeport-ips";
export const CLUSTER_IPS_SET = "cluster-ips";

// Services without (usable) endpoints.
export const SERVICE_ENDPOINTS_CHECK = "service-endpoints-check";
export const NODEPORT_ENDPOINTS_CHECK = "nodeport-endpoints-check";
export const NO_ENDPOINT_SERVICES_MAP = "no-endpoint-services";
export const NO_ENDPOINT_NODEPORTS_MAP = "no-endpoint-nodeports";
export const REJECT_CHAIN = "reject-chain";
export const CLUSTER_IPS_CHECK = "cluster-ips-check";

// loadBalancerSourceRanges.
export const FIREWALL_IPS_MAP = "firewall-ips";
export const FIREWALL_CHECK = "firewall-check";

// Masquerading.
export const MASQUERADING_CHAIN = "masquerading";
/** Local endpoints as "ip . ip . proto . port": a connection from one to itself is masqueraded. */
export const HAIRPIN_SET = "hairpin-connections";

/**
 * Fixed chains of earlier layouts (upstream before 1.34 and 1.36, and ours before 1.37's):
 * base chains that hooked elsewhere, and the chain that set the mark before the mark was set
 * inline. A node taken over from such a version still holds them; the first sync deletes them.
 */
export const OBSOLETE_BASE_CHAINS = ["filter-prerouting", "filter-output-post-dnat"] as const;
export const OBSOLETE_CHAINS = ["mark-for-masquerade"] as const;

const CLUSTER_PREFIX = "service-";
const LOCAL_PREFIX = "local-";
const EXTERNAL_PREFIX = "external-";
const FIREWALL_PREFIX = "firewall-";
const ENDPOINT_PREFIX = "endpoint-";
const AFFINITY_PREFIX = "affinity-";

/** nft names are at most 256 bytes; prefixes take up to 16, so a base may take 240. */
const NAME_BASE_MAX = 240;

/** The hash of the name, then the name, cut with "..." should it ever be too long. */
function hashedBase(name: string): string {
  const base = `${sha256Base32Prefix(name, 8)}-${name}`;
  return base.length > NAME_BASE_MAX ? `${base.slice(0, NAME_BASE_MAX - 3)}...` : base;
}

/** The chains of one service port, all sharing one hashed base. */
export interface PortChainNames {
  /** Endpoints for Cluster traffic policy. */
  readonly cluster: string;
  /** Endpoints for Local traffic policy. */
  readonly local: string;
  /** Where NodePort, external IP and load balancer traffic goes first. */
  readonly external: string;
  /** loadBalancerSourceRanges filtering. */
  readonly firewall: string;
}

function portPath(n: ServicePortName, protocolLower: string): string {
  return `${n.namespace}/${n.name}/${protocolLower}/${n.port}`;
}

/** The chains of a service port; a HostInputError when its name makes no nft name. */
export function portChainNames(n: ServicePortName, protocolLower: string): PortChainNames {
  const base = hashedBase(portPath(n, protocolLower));
  return {
    cluster: nftIdentifier(CLUSTER_PREFIX + base, "chain name"),
    local: nftIdentifier(LOCAL_PREFIX + base, "chain name"),
    external: nftIdentifier(EXTERNAL_PREFIX + base, "chain name"),
    firewall: nftIdentifier(FIREWALL_PREFIX + base, "chain name"),
  };
}

/** The Cluster-policy chain of a service port (portChainNames(...).cluster); HostInputError as there. */
export function clusterChainName(n: ServicePortName, protocolLower: string): string {
  return nftIdentifier(CLUSTER_PREFIX + hashedBase(portPath(n, protocolLower)), "chain name");
}

/** A port's other chains, by their field in PortChainNames. */
export type OtherPortChain = "local" | "external" | "firewall";

const OTHER_PREFIXES: Readonly<Record<OtherPortChain, string>> = {
  local: LOCAL_PREFIX,
  external: EXTERNAL_PREFIX,
  firewall: FIREWALL_PREFIX,
};

/** The chain `kind` of the port whose Cluster-policy chain is `clusterChain` (same hashed base). */
export function otherPortChain(kind: OtherPortChain, clusterChain: string): string {
  return nftIdentifier(OTHER_PREFIXES[kind] + clusterChain.slice(CLUSTER_PREFIX.length), "chain name");
}

/** An endpoint's chain and ClientIP affinity set. */
export interface EndpointNames {
  readonly chain: string;
  readonly affinitySet: string;
}

/** `ip` and `port` of the endpoint; an IPv6 address's colons become dots (not allowed in names). */
export function endpointNames(
  n: ServicePortName,
  protocolLower: string,
  ip: string,
  port: number,
): EndpointNames {
  const chain = endpointChainName(n, protocolLower, ip, port);
  return { chain, affinitySet: affinitySetOf(chain) };
}

/** The endpoint's chain alone (most ports have no affinity set to name); HostInputError as above. */
export function endpointChainName(
  n: ServicePortName,
  protocolLower: string,
  ip: string,
  port: number,
): string {
  const base = hashedBase(`${portPath(n, protocolLower)}__${ip.replaceAll(":", ".")}/${port}`);
  return nftIdentifier(ENDPOINT_PREFIX + base, "chain name");
}

/** The affinity set that goes with an endpoint chain: the same base, another prefix. */
export function affinitySetOf(endpointChain: string): string {
  return AFFINITY_PREFIX + endpointChain.slice(ENDPOINT_PREFIX.length);
}

/** A chain made for one service port or endpoint (and so garbage-collected with it). */
export function isServiceChainName(chain: string): boolean {
  return chain.includes("/");
}

export function isAffinitySetName(set: string): boolean {
  return set.startsWith(AFFINITY_PREFIX);
}
