// Assembles iptables mode for a real run or a dry run: picks the backend, decides which IP
// families this node proxies, and builds one IptablesProxier per family behind one Proxier.

import { createConntrackClient } from "../../host/conntrack/client.ts";
import { createIptablesClient } from "../../host/iptables/client.ts";
import type { IptablesBackend } from "../../host/iptables/types.ts";
import { createNfacctClient } from "../../host/nfacct/client.ts";
import type { SysctlClient } from "../../host/sysctl/types.ts";
import type { Logger } from "../../log/logger.ts";
import { localAddresses } from "../../proxy/local-addresses.ts";
import { decideLocalhostNodePorts, type LocalhostNodePorts } from "../../proxy/localhost-nodeports.ts";
import { familyMetrics } from "../../proxy/metrics/metrics.ts";
import { MultiFamilyProxier } from "../../proxy/multi-family.ts";
import { chooseBackendAndFamilies } from "../../proxy/netfilter/families.ts";
import { applySysctls, ROUTE_LOCALNET, settingsPlan } from "../../proxy/sysctls.ts";
import { errText } from "../../util/err-text.ts";
import type { IPFamily } from "../../util/net/family.ts";
import type { ModeBuildOptions } from "../types.ts";
import { registerNfacctMetrics } from "./nfacct-metrics.ts";
import { IptablesProxier } from "./proxier.ts";

export interface IptablesMode {
  readonly backend: IptablesBackend;
  /** Why this backend (detectBackend's sentence). */
  readonly backendReason: string;
  readonly families: IPFamily[];
  readonly proxiers: IptablesProxier[];
  readonly proxier: MultiFamilyProxier;
}

export interface IptablesModeOptions extends ModeBuildOptions {
  /** A HostState's nfacct answer stands in for probing the tool. */
  readonly nfacct?: boolean;
}

const TCP_BE_LIBERAL = "net/netfilter/nf_conntrack_tcp_be_liberal";

/**
 * Upstream reads nf_conntrack_tcp_be_liberal when it builds the proxier (after its own sysctls
 * were applied): when it is non-zero, out-of-window packets are not INVALID and need no DROP.
 */
export async function readConntrackTCPLiberal(sysctl: SysctlClient, log: Logger): Promise<boolean> {
  let value: number | undefined;
  try {
    value = await sysctl.getInt(TCP_BE_LIBERAL);
  } catch (err) {
    log.v(2).info("Cannot read sysctl; assuming it is off", {
      sysctl: TCP_BE_LIBERAL,
      err: errText(err),
    });
    return false;
  }
  if (value === undefined || value === 0) return false;
  log.info("nf_conntrack_tcp_be_liberal set, not installing DROP rules for INVALID packets");
  return true;
}

/**
 * Decides localhost NodePorts once and sets route_localnet to match; the same decision goes to
 * the IPv4 proxier, which then writes the KUBE-FIREWALL guard rule. Throws when the sysctl cannot
 * be set (upstream refuses to start then).
 */
export async function applyLocalhostNodePorts(
  o: Pick<IptablesModeOptions, "config" | "nodeIPs" | "sysctl" | "log">,
  families: readonly IPFamily[],
): Promise<LocalhostNodePorts> {
  const decision = decideLocalhostNodePorts({
    enabledByConfig: o.config.iptables.localhostNodePorts,
    nodePortAddresses: o.config.nodePortAddresses,
    nodeIPs: o.nodeIPs,
    proxiesIPv4: families.includes("IPv4"),
  });
  if (!decision.enabled) {
    o.log.info("Localhost NodePorts are off; route_localnet is left alone", { reason: decision.reason });
    return decision;
  }
  o.log.info(
    "Setting route_localnet=1 to allow node-ports on localhost; to change this either disable iptables.localhostNodePorts (--iptables-localhost-nodeports) or set nodePortAddresses (--nodeport-addresses) to filter loopback addresses",
  );
  const [outcome] = await applySysctls(settingsPlan([ROUTE_LOCALNET]), o.sysctl, o.log.named("sysctl"));
  if (outcome?.action === "failed")
    throw new Error(`cannot set required sysctl for proxy: ${outcome.detail}`);
  return decision;
}

export async function buildIptablesMode(o: IptablesModeOptions): Promise<IptablesMode> {
  const { backend, families, reason } = await chooseBackendAndFamilies(o.exec, o.log, o.backend, o.sysctl);
  const nfacctClient = createNfacctClient({ exec: o.exec, logger: o.log });
  const hasNfacct = o.nfacct ?? (await nfacctClient.available());
  // Once per process, not per family: the nfacct objects are shared by both.
  if (hasNfacct) registerNfacctMetrics(o.metrics.registry, nfacctClient, o.log.named("metrics"));
  const conntrack = createConntrackClient({ exec: o.exec, logger: o.log });
  const localhost = await applyLocalhostNodePorts(o, families);
  const conntrackTCPLiberal = await readConntrackTCPLiberal(o.sysctl, o.log);
  const proxiers = families.map(
    (family) =>
      new IptablesProxier({
        ...(o.clock ? { clock: o.clock } : {}),
        iptables: createIptablesClient({ exec: o.exec, family, backend: backend, logger: o.log }),
        family,
        config: o.config,
        featureGates: o.featureGates,
        metrics: familyMetrics(o.metrics, family),
        logger: o.log.named(family === "IPv4" ? "iptables" : "ip6tables"),
        nodeName: o.nodeName,
        nodeIPs: o.nodeIPs,
        localAddresses: () => localAddresses(o.exec, o.log),
        localhostNodePorts: localhost.enabled,
        conntrackTCPLiberal,
        conntrack,
        ...(hasNfacct ? { nfacct: nfacctClient } : {}),
        // Health check ports are per Service, not per family: the first proxier reports them.
        ...(o.healthCheck && family === families[0] ? { healthCheck: o.healthCheck } : {}),
      }),
  );
  o.log.info("Proxying IP families", { families: families.join(",") });
  return { backend, backendReason: reason, families, proxiers, proxier: new MultiFamilyProxier(proxiers) };
}
