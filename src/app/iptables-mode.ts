// Assembles iptables mode for a real run or a dry run: picks the backend, decides which IP
// families this node proxies, and builds one IptablesProxier per family behind one Proxier.

import type { EffectiveFeatureGates } from "../config/feature-gates.ts";
import type { ProxyConfig } from "../config/types.ts";
import type { Exec } from "../exec/types.ts";
import { createConntrackClient } from "../host/conntrack.ts";
import { type BackendPreference, detectBackend } from "../host/iptables/backend.ts";
import { createIptablesClient } from "../host/iptables/client.ts";
import { iptablesCommands } from "../host/iptables/commands.ts";
import type { IPTablesFamily, IptablesBackend } from "../host/iptables/types.ts";
import { createNfacctClient } from "../host/nfacct.ts";
import { parseIpAddrOneline } from "../host/probe.ts";
import type { Logger } from "../log/logger.ts";
import { registerNfacctMetrics } from "../proxy/iptables/nfacct-metrics.ts";
import { IptablesProxier, type ServiceHealthSink } from "../proxy/iptables/proxier.ts";
import type { Metrics } from "../proxy/metrics/metrics.ts";
import { MultiFamilyProxier } from "../proxy/multi-family.ts";
import type { NodeIPs } from "./node-ips.ts";

export interface IptablesMode {
  readonly backend: IptablesBackend;
  readonly families: IPTablesFamily[];
  readonly proxiers: IptablesProxier[];
  readonly proxier: MultiFamilyProxier;
}

export interface IptablesModeOptions {
  readonly exec: Exec;
  readonly config: ProxyConfig;
  /** Effective gates of config.featureGates, computed once per run. */
  readonly featureGates: EffectiveFeatureGates;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly nodeName: string;
  readonly nodeIPs: NodeIPs;
  readonly backend: BackendPreference;
  readonly healthCheck?: ServiceHealthSink;
  /** A HostState's nfacct answer stands in for probing the tool. */
  readonly nfacct?: boolean;
}

/** Every local address, as `ip -o addr show` lists them (NodePort addresses, LB allowances). */
export async function localAddresses(exec: Exec): Promise<string[]> {
  const r = await exec.run({ cmd: "ip", args: ["-o", "addr", "show"], timeoutMs: 10_000 });
  if (r.code !== 0) return [];
  return parseIpAddrOneline(r.stdout).flatMap((i) => i.addresses.map((a) => a.replace(/\/\d+$/, "")));
}

/** A family is proxied when its tool can read the nat table (upstream's Present() check). */
export async function usableFamilies(exec: Exec, backend: IptablesBackend): Promise<IPTablesFamily[]> {
  const out: IPTablesFamily[] = [];
  for (const family of ["IPv4", "IPv6"] as const) {
    const cmd = iptablesCommands(family, backend).iptables;
    const r = await exec.run({ cmd, args: ["-w", "5", "-t", "nat", "-S", "POSTROUTING"], timeoutMs: 10_000 });
    if (r.code === 0) out.push(family);
  }
  return out;
}

/** The iptables backend (logged with its reason) and the families it can serve; both modes use it. */
export async function chooseBackendAndFamilies(
  exec: Exec,
  log: Logger,
  preference: BackendPreference,
): Promise<{ backend: IptablesBackend; families: IPTablesFamily[] }> {
  const choice = await detectBackend(exec, log, preference);
  log.info("Using iptables backend", { backend: choice.backend, reason: choice.reason });
  const families = await usableFamilies(exec, choice.backend);
  if (families.length === 0)
    throw new Error(`iptables (${choice.backend}) cannot read the nat table on this node`);
  return { backend: choice.backend, families };
}

export async function buildIptablesMode(o: IptablesModeOptions): Promise<IptablesMode> {
  const { backend, families } = await chooseBackendAndFamilies(o.exec, o.log, o.backend);
  const nfacctClient = createNfacctClient({ exec: o.exec, logger: o.log });
  const hasNfacct = o.nfacct ?? (await nfacctClient.available());
  // Once per process, not per family: the nfacct objects are shared by both.
  if (hasNfacct) registerNfacctMetrics(o.metrics.registry, nfacctClient, o.log.named("metrics"));
  const conntrack = createConntrackClient({ exec: o.exec, logger: o.log });
  const proxiers = families.map(
    (family) =>
      new IptablesProxier({
        iptables: createIptablesClient({ exec: o.exec, family, backend: backend, logger: o.log }),
        family,
        config: o.config,
        featureGates: o.featureGates,
        metrics: o.metrics,
        logger: o.log.named(family === "IPv4" ? "iptables" : "ip6tables"),
        nodeName: o.nodeName,
        nodeIPs: o.nodeIPs,
        localAddresses: () => localAddresses(o.exec),
        conntrack,
        ...(hasNfacct ? { nfacct: nfacctClient } : {}),
        // Health check ports are per Service, not per family: the first proxier reports them.
        ...(o.healthCheck && family === families[0] ? { healthCheck: o.healthCheck } : {}),
      }),
  );
  o.log.info("Proxying IP families", { families: families.join(",") });
  return { backend: backend, families, proxiers, proxier: new MultiFamilyProxier(proxiers) };
}
