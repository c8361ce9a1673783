// Assembles nftables mode for a real run or a dry run: one NftablesProxier per IP family whose
// table the kernel accepts, each with its own client bound to `ip kube-proxy` or
// `ip6 kube-proxy`, behind one Proxier.

import { createConntrackClient } from "../../host/conntrack/client.ts";
import {
  NETLINK_NETFILTER,
  type NetlinkSocket,
  openNetlinkSocket,
} from "../../host/netlink-socket/socket.ts";
import { createNftClient } from "../../host/nft/client.ts";
import { createNetlinkNftClient, type NetlinkNftClient } from "../../host/nft/netlink/client.ts";
import { NftTransaction } from "../../host/nft/transaction.ts";
import type { NftClient } from "../../host/nft/types.ts";
import type { Logger } from "../../log/logger.ts";
import type { BackendChoice } from "../../proxy/debug-state/schema.ts";
import { localAddresses } from "../../proxy/local-addresses.ts";
import { familyMetrics } from "../../proxy/metrics/metrics.ts";
import { MultiFamilyProxier } from "../../proxy/multi-family.ts";
import { withKernelSupport } from "../../proxy/netfilter/families.ts";
import { NODEPORT_ADDRESSES_PRIMARY } from "../../proxy/nodeport-addresses.ts";
import { type IPFamily, nftFamily } from "../../util/net/family.ts";
import type { ModeBuildOptions } from "../types.ts";
import { KUBE_PROXY_TABLE } from "./names.ts";
import { NftablesProxier } from "./proxier.ts";
import { containerTypes, familyWords } from "./setup.ts";

export interface NftablesMode {
  readonly families: IPFamily[];
  readonly proxiers: NftablesProxier[];
  readonly proxier: MultiFamilyProxier;
  /** How transactions reach the kernel, and why. */
  readonly writer: BackendChoice;
}

/**
 * A bound on one nft command, only against a hung process: loading a whole 10,000-Service
 * table takes minutes on some kernels, and a sync cut short would only be retried from the start.
 */
const NFT_TIMEOUT_MS = 30 * 60 * 1000;

/** Upstream's nftables mode: an empty nodePortAddresses means the node's primary IPs only. */
export function nftablesNodePortAddresses(configured: readonly string[]): readonly string[] {
  return configured.length === 0 ? [NODEPORT_ADDRESSES_PRIMARY] : configured;
}

async function familyUsable(nft: NftClient, family: IPFamily): Promise<boolean> {
  try {
    await nft.check(new NftTransaction(nftFamily(family), KUBE_PROXY_TABLE).add({ kind: "table" }));
    return true;
  } catch {
    return false;
  }
}

/** Set to "0" to send every transaction through nft (the netlink writer is on otherwise). */
export const NETLINK_ENV = "KPTS_NFT_NETLINK";

/**
 * The clients of a real run: partial syncs over netlink when this process can open the socket
 * (the compiled binary, as root), everything through nft otherwise. A dry run records nft input.
 */
async function nftClients(
  o: ModeBuildOptions,
  netlink: boolean,
): Promise<{ clients: Record<IPFamily, NftClient>; writer: BackendChoice }> {
  const client = (family: IPFamily) =>
    createNftClient({
      exec: o.exec,
      family: nftFamily(family),
      table: KUBE_PROXY_TABLE,
      timeoutMs: NFT_TIMEOUT_MS,
    });
  const clients = { IPv4: client("IPv4"), IPv6: client("IPv6") };
  const nftOnly = (reason: string) => ({
    clients,
    writer: { component: "nftables writes", chosen: "nft -f", reason },
  });
  if (!netlink) return nftOnly("a dry run records nft input");
  if (process.env[NETLINK_ENV] === "0") return nftOnly(`${NETLINK_ENV}=0`);
  const socket = await openNetlinkSocket(NETLINK_NETFILTER);
  if (typeof socket === "string") {
    o.log.info("Writing every nftables transaction with nft: no netlink socket", { reason: socket });
    return nftOnly(`no netlink socket: ${socket}`);
  }
  return {
    clients: {
      IPv4: overNetlink(clients.IPv4, "IPv4", socket, o.log),
      IPv6: overNetlink(clients.IPv6, "IPv6", socket, o.log),
    },
    writer: {
      component: "nftables writes",
      chosen: "netlink (partial syncs), nft -f (full syncs)",
      reason: "a netfilter netlink socket could be opened",
    },
  };
}

/** `nft`'s client for one family's table, its partial syncs sent on `socket`. */
export function overNetlink(
  nft: NftClient,
  family: IPFamily,
  socket: NetlinkSocket,
  logger?: Logger,
): NetlinkNftClient {
  const types = containerTypes(familyWords(family));
  return createNetlinkNftClient({
    nft,
    family,
    socket,
    containerTypes: (name) => types.get(name),
    ...(logger ? { logger } : {}),
  });
}

export async function buildNftablesMode(
  o: ModeBuildOptions,
  opts: { readonly netlink?: boolean } = {},
): Promise<NftablesMode> {
  const { clients, writer } = await nftClients(o, opts.netlink ?? false);
  const families: IPFamily[] = [];
  for (const family of await withKernelSupport(["IPv4", "IPv6"], o.sysctl, o.log)) {
    if (await familyUsable(clients[family], family)) families.push(family);
    else o.log.info("nftables cannot hold this family's table; not proxying it", { ipFamily: family });
  }
  if (families.length === 0)
    throw new Error("nftables: the kernel accepts neither the ip nor the ip6 kube-proxy table");
  const conntrack = createConntrackClient({ exec: o.exec, logger: o.log });
  const nodePortAddresses = nftablesNodePortAddresses(o.config.nodePortAddresses);
  const proxiers = families.map(
    (family) =>
      new NftablesProxier({
        ...(o.clock ? { clock: o.clock } : {}),
        nft: clients[family],
        family,
        config: o.config,
        featureGates: o.featureGates,
        metrics: familyMetrics(o.metrics, family),
        logger: o.log.named(family === "IPv4" ? "nft" : "nft6"),
        nodeName: o.nodeName,
        nodeIPs: o.nodeIPs,
        nodePortAddresses,
        localAddresses: () => localAddresses(o.exec, o.log),
        conntrack,
        // Health check ports are per Service, not per family: the first proxier reports them.
        ...(o.healthCheck && family === families[0] ? { healthCheck: o.healthCheck } : {}),
      }),
  );
  o.log.info("Proxying IP families", { families: families.join(",") });
  // IPv6 syncs first: nft reads every table of the ruleset before it applies a transaction, so
  // the (usually small) ip6 table written after a 10,000-Service ip table would wait seconds
  // on reading it; written first, its first sync reads a table that is not there yet.
  return { families, proxiers, proxier: new MultiFamilyProxier([...proxiers].reverse()), writer };
}
