// Assembles ipvs mode: the host clients (ipvsadm, ipset, ip, iptables) over one Exec and one
// IpvsProxier per IP family behind one Proxier. The same assembly serves real and dry runs.

import { createConntrackClient } from "../../host/conntrack/client.ts";
import { createIpsetClient } from "../../host/ipset/client.ts";
import { createIptablesClient } from "../../host/iptables/client.ts";
import { createIpvsClient } from "../../host/ipvs/client.ts";
import { IpvsError } from "../../host/ipvs/errors.ts";
import { createNetlinkIpvsClient } from "../../host/ipvs/netlink/client.ts";
import type { IpvsClient } from "../../host/ipvs/types.ts";
import { createNetlinkClient } from "../../host/netlink/client.ts";
import { NETLINK_GENERIC, openNetlinkSocket } from "../../host/netlink-socket/socket.ts";
import type { Logger } from "../../log/logger.ts";
import type { BackendChoice } from "../../proxy/debug-state/schema.ts";
import { familyMetrics } from "../../proxy/metrics/metrics.ts";
import { MultiFamilyProxier } from "../../proxy/multi-family.ts";
import { chooseBackendAndFamilies } from "../../proxy/netfilter/families.ts";
import type { Proxier } from "../../proxy/proxier.ts";
import { concatListings, type Listing } from "../../util/listing.ts";
import type { IPFamily } from "../../util/net/family.ts";
import type { ModeBuildOptions } from "../types.ts";
import { HeldOutByFamily } from "./held-out-families.ts";
import { IpvsProxier, type VirtualServerView } from "./proxier.ts";
import { SharedKernelReads } from "./shared-reads.ts";

export interface IpvsMode {
  readonly families: IPFamily[];
  readonly proxiers: IpvsProxier[];
  readonly proxier: Proxier;
  /** What the last sync programmed (the --dry-run `ipvs.virtualServers`). */
  virtualServers(): Listing<VirtualServerView>;
  stop(): void;
  /** The iptables backend and the IPVS writer, each with why. */
  readonly backends: readonly BackendChoice[];
}

export interface IpvsModeOptions extends ModeBuildOptions {
  /** Plan on a node whose kernel has no IPVS: its table reads as empty instead of failing. */
  readonly dryRun?: boolean;
  /** Write IPVS changes over generic netlink when a socket can be had (real runs only). */
  readonly netlink?: boolean;
}

/** Set to "0" to write every IPVS change with ipvsadm (the netlink writer is on otherwise). */
export const IPVS_NETLINK_ENV = "KPTS_IPVS_NETLINK";

/**
 * ipvsadm's client, its writes sent over netlink when this process can open a generic netlink
 * socket (the compiled binary, as root); ipvsadm alone otherwise.
 */
async function liveIpvsClient(o: IpvsModeOptions): Promise<{ client: IpvsClient; writer: BackendChoice }> {
  const ipvsadm = createIpvsClient({ exec: o.exec, logger: o.log });
  const viaIpvsadm = (reason: string) => ({
    client: ipvsadm,
    writer: { component: "ipvs writes", chosen: "ipvsadm", reason },
  });
  if (!o.netlink || o.dryRun) return viaIpvsadm("a dry run records ipvsadm input");
  if (process.env[IPVS_NETLINK_ENV] === "0") return viaIpvsadm(`${IPVS_NETLINK_ENV}=0`);
  const socket = await openNetlinkSocket(NETLINK_GENERIC);
  if (typeof socket === "string") {
    o.log.info("Writing IPVS changes with ipvsadm: no netlink socket", { reason: socket });
    return viaIpvsadm(`no netlink socket: ${socket}`);
  }
  return {
    client: createNetlinkIpvsClient({ ipvsadm, socket, logger: o.log }),
    writer: {
      component: "ipvs writes",
      chosen: "netlink",
      reason: "a generic netlink socket could be opened",
    },
  };
}

/** Under --dry-run the plan is computed even when the kernel lacks IPVS (the check says so). */
function emptyWhenUnavailable(client: IpvsClient, log: Logger): IpvsClient {
  return {
    ...client,
    async read() {
      try {
        return await client.read();
      } catch (err) {
        if (!(err instanceof IpvsError) || err.kind !== "unavailable") throw err;
        log.info("IPVS is not available in this kernel; planning against an empty IPVS table");
        return [];
      }
    },
    async readServices(keys) {
      try {
        return await client.readServices(keys);
      } catch (err) {
        if (!(err instanceof IpvsError) || err.kind !== "unavailable") throw err;
        return [];
      }
    },
  };
}

export async function buildIpvsMode(o: IpvsModeOptions): Promise<IpvsMode> {
  const { backend, families, reason } = await chooseBackendAndFamilies(o.exec, o.log, o.backend, o.sysctl);
  // One client each: ipvs, ipset and the dummy device are shared by both families' proxiers.
  const { client: live, writer } = await liveIpvsClient(o);
  const ipvs = o.dryRun ? emptyWhenUnavailable(live, o.log) : live;
  const ipset = createIpsetClient({ exec: o.exec });
  const netlink = createNetlinkClient({ exec: o.exec, logger: o.log });
  const conntrack = createConntrackClient({ exec: o.exec, logger: o.log });
  // Two families read each table once per sync round between them.
  const shared = families.length > 1 ? new SharedKernelReads({ ipvs, ipset, netlink }, families) : undefined;
  // Dual-stack: every family reports to the one health check server, each with what any family
  // holds out, so the last report of a round has both families' word on it.
  const heldOutByFamily = families.length > 1 ? new HeldOutByFamily() : undefined;
  const proxiers = families.map(
    (family) =>
      new IpvsProxier({
        ...(o.clock ? { clock: o.clock } : {}),
        ...(shared ? shared.forFamily(family) : { ipvs, ipset, netlink }),
        iptables: createIptablesClient({ exec: o.exec, family, backend, logger: o.log }),
        conntrack,
        config: o.config,
        featureGates: o.featureGates,
        metrics: familyMetrics(o.metrics, family),
        logger: o.log.named(family === "IPv4" ? "ipvs" : "ipvs6"),
        family,
        nodeName: o.nodeName,
        nodeIPs: o.nodeIPs,
        ...(o.healthCheck ? { healthCheck: o.healthCheck } : {}),
        ...(heldOutByFamily ? { heldOutByFamily } : {}),
        ...(o.recorder ? { recorder: o.recorder } : {}),
      }),
  );
  o.log.info("Proxying IP families", { families: families.join(",") });
  const multi = new MultiFamilyProxier(proxiers);
  const proxier: Proxier = shared
    ? {
        async sync(input) {
          shared.beginRound();
          try {
            await multi.sync(input);
          } finally {
            shared.endRound();
          }
        },
        prepare: () => multi.prepare(),
      }
    : multi;
  return {
    families,
    proxiers,
    proxier,
    virtualServers: () => concatListings(proxiers.map((p) => p.virtualServerListing())),
    stop: () => {
      for (const p of proxiers) p.stop();
    },
    backends: [{ component: "iptables", chosen: backend, reason }, writer],
  };
}
