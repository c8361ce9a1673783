// Which packets come from a Pod on this node (--detect-local-mode). The proxiers use the match
// arguments to masquerade off-cluster traffic to Service VIPs and to short-circuit pod traffic
// to external destinations. Mode-independent: the iptables and ipvs proxiers share it, and the
// nftables forms are kept alongside for parity with upstream's detector.

import type { LocalMode, ProxyConfig } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { parseCIDRLenient } from "../util/net/address.ts";
import { familyOf, type IPFamily, nftFamily } from "../util/net/family.ts";

export interface LocalTrafficDetector {
  /** False for the no-op detector: callers must then skip the rules that need it. */
  readonly implemented: boolean;
  /** iptables arguments matching traffic from a local Pod. */
  readonly ifLocal: readonly string[];
  /** iptables arguments matching traffic not from a local Pod. */
  readonly ifNotLocal: readonly string[];
  readonly ifLocalNFT: readonly string[];
  readonly ifNotLocalNFT: readonly string[];
}

const NONE: readonly string[] = Object.freeze([]);

/** Used when nothing identifies local Pods for a family (upstream's NoOpLocalDetector). */
export const noOpLocalDetector: LocalTrafficDetector = Object.freeze({
  implemented: false,
  ifLocal: NONE,
  ifNotLocal: NONE,
  ifLocalNFT: NONE,
  ifNotLocalNFT: NONE,
});

function detector(
  ifLocal: string[],
  ifNotLocal: string[],
  nft: string[],
  nftNot: string[],
): LocalTrafficDetector {
  return Object.freeze({
    implemented: true,
    ifLocal: Object.freeze(ifLocal),
    ifNotLocal: Object.freeze(ifNotLocal),
    ifLocalNFT: Object.freeze(nft),
    ifNotLocalNFT: Object.freeze(nftNot),
  });
}

/** Source address inside `cidr` (assumed valid and already in canonical form). */
export function detectLocalByCIDR(cidr: string): LocalTrafficDetector {
  const ipX = nftFamily(familyOf(cidr));
  return detector(["-s", cidr], ["!", "-s", cidr], [ipX, "saddr", cidr], [ipX, "saddr", "!=", cidr]);
}

/** Packets entering through the Pod bridge are local. */
export function detectLocalByBridgeInterface(bridge: string): LocalTrafficDetector {
  return detector(["-i", bridge], ["!", "-i", bridge], ["iifname", bridge], ["iifname", "!=", bridge]);
}

/** Packets entering through any interface whose name starts with `prefix` (veth pairs) are local. */
export function detectLocalByInterfaceNamePrefix(prefix: string): LocalTrafficDetector {
  const ipt = `${prefix}+`;
  const nft = `${prefix}*`;
  return detector(["-i", ipt], ["!", "-i", ipt], ["iifname", nft], ["iifname", "!=", nft]);
}

/** The first CIDR of `family` in the list, canonicalised (upstream uses cidrs[0] per family). */
export function firstCIDROfFamily(cidrs: readonly string[], family: IPFamily): string | undefined {
  for (const text of cidrs) {
    const parsed = parseCIDRLenient(text);
    if (parsed?.family === family) return parsed.cidr;
  }
  return undefined;
}

export interface LocalDetectInput {
  readonly mode: LocalMode;
  /** --cluster-cidr, split per family (ClusterCIDR mode). */
  readonly clusterCIDRs: readonly string[];
  /** The Node's spec.podCIDRs (NodeCIDR mode). */
  readonly nodePodCIDRs: readonly string[];
  readonly bridgeInterface: string;
  readonly interfaceNamePrefix: string;
  readonly logger?: Logger;
}

function cidrDetector(cidrs: readonly string[], family: IPFamily): LocalTrafficDetector {
  const cidr = firstCIDROfFamily(cidrs, family);
  return cidr ? detectLocalByCIDR(cidr) : noOpLocalDetector;
}

/**
 * The detector of one IP family. A CIDR mode with no CIDR of this family yields the no-op
 * detector, as upstream does; the interface modes apply to both families alike.
 */
export function localDetectorFor(input: LocalDetectInput, family: IPFamily): LocalTrafficDetector {
  switch (input.mode) {
    case "ClusterCIDR":
      return cidrDetector(input.clusterCIDRs, family);
    case "NodeCIDR":
      return cidrDetector(input.nodePodCIDRs, family);
    case "BridgeInterface":
      return detectLocalByBridgeInterface(input.bridgeInterface);
    case "InterfaceNamePrefix":
      return detectLocalByInterfaceNamePrefix(input.interfaceNamePrefix);
    default:
      input.logger?.info("Defaulting to no-op detect-local", { mode: String(input.mode) });
      return noOpLocalDetector;
  }
}

/**
 * Detectors for both families. Logs, as upstream does, when a CIDR mode has nothing for the
 * primary family (traffic from Pods would then not be masqueraded where it should be).
 */
export function localDetectors(
  input: LocalDetectInput,
  primaryFamily: IPFamily,
): Record<IPFamily, LocalTrafficDetector> {
  const out = { IPv4: localDetectorFor(input, "IPv4"), IPv6: localDetectorFor(input, "IPv6") };
  if (!out[primaryFamily].implemented && input.mode === "ClusterCIDR") {
    input.logger?.info(
      "Detect-local-mode set to ClusterCIDR, but no cluster CIDR specified for primary IP family",
      { ipFamily: primaryFamily, clusterCIDRs: [...input.clusterCIDRs] },
    );
  } else if (!out[primaryFamily].implemented && input.mode === "NodeCIDR") {
    input.logger?.info(
      "Detect-local-mode set to NodeCIDR, but no PodCIDR defined at node for primary IP family",
      {
        ipFamily: primaryFamily,
        podCIDRs: [...input.nodePodCIDRs],
      },
    );
  }
  return out;
}

/** The detector a proxier of `family` uses, from the config and the Node's pod CIDRs. */
export function localDetectorFromConfig(
  config: Pick<ProxyConfig, "detectLocalMode" | "clusterCIDRs" | "detectLocal">,
  nodePodCIDRs: readonly string[],
  family: IPFamily,
  logger?: Logger,
): LocalTrafficDetector {
  return localDetectorFor(
    {
      mode: config.detectLocalMode,
      clusterCIDRs: config.clusterCIDRs,
      nodePodCIDRs,
      bridgeInterface: config.detectLocal.bridgeInterface,
      interfaceNamePrefix: config.detectLocal.interfaceNamePrefix,
      ...(logger ? { logger } : {}),
    },
    family,
  );
}
