// Upstream v1.37's NewFakeProxier for the nftables packet-flow tests, in our terms: node
// "test-node" (our NODE) with 192.168.0.2 / 2001:db8::1, pod CIDR 10.0.0.0/8 / fd00:10::/64 for
// local-traffic detection, ServiceCIDRs 172.30.0.0/16 / fd00:10:96::/112, nodePortAddresses the
// node IPs, masquerade bit 14, and the fake interfaces' addresses, which upstream's tracer also
// takes as the node's own. Plus the table snapshot a trace reads.

import type { FakeNftTable } from "../../../src/host/nft/testing/fake.ts";
import { noOpLocalDetector } from "../../../src/proxy/local-detect.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import {
  UPSTREAM_NODE_ADDRESSES,
  UPSTREAM_NODE_IPV4,
  UPSTREAM_NODE_IPV6,
} from "../../support/upstream-test-node.ts";
import { type NftSetup, setupNft } from "./harness.ts";

export const NODE_IPV4 = UPSTREAM_NODE_IPV4;
export const NODE_IPV6 = UPSTREAM_NODE_IPV6;

/** Addresses of the fake node's interfaces (lo and eth0). */
const INTERFACE_ADDRESSES = [...UPSTREAM_NODE_ADDRESSES];

/** The node IPs upstream's tracer treats as local (`fib ... type local`). */
export const TRACER_NODE_IPS: readonly string[] = INTERFACE_ADDRESSES.map((a) => a.split("/")[0]!);

export interface FakeProxierOptions {
  readonly masqueradeAll?: boolean;
  /** Upstream's NoOpLocalDetector instead of detection by pod CIDR. */
  readonly noLocalDetector?: boolean;
  /** Instead of the node IPs' host CIDRs. */
  readonly nodePortAddresses?: readonly string[];
}

export function newFakeProxier(family: IPFamily, o: FakeProxierOptions = {}): NftSetup {
  const s = setupNft({
    family,
    config: (c) => {
      c.clusterCIDRs = ["10.0.0.0/8", "fd00:10::/64"];
      c.nftables.masqueradeBit = 14;
      c.nftables.masqueradeAll = o.masqueradeAll ?? false;
    },
    deps: {
      nodeIPs: { IPv4: NODE_IPV4, IPv6: NODE_IPV6 },
      nodePortAddresses: o.nodePortAddresses ?? [`${NODE_IPV4}/32`, `${NODE_IPV6}/128`],
      ...(o.noLocalDetector ? { localDetector: noOpLocalDetector } : {}),
    },
    localAddresses: INTERFACE_ADDRESSES,
  });
  s.cluster.serviceCIDRs = ["172.30.0.0/16", "fd00:10:96::/112"];
  return s;
}

/** A copy of the family's kube-proxy table as it stands now (later syncs leave it alone). */
export function tableSnapshot(s: NftSetup, family: IPFamily): FakeNftTable {
  const t = s.nft.fake.tableState(family === "IPv4" ? "ip" : "ip6", "kube-proxy");
  if (!t) throw new Error("the sync left no kube-proxy table");
  return structuredClone(t);
}
