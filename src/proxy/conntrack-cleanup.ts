// UDP has no connection teardown, so conntrack keeps steering datagrams by stale NAT entries
// after a Service or endpoint goes away (or before a Service's first endpoint existed, when the
// entry recorded "no DNAT"). After a successful restore we clear exactly those entries, as
// upstream's conntrack.CleanStaleEntries does (v1.31).

import type { ConntrackClient } from "../host/conntrack/types.ts";
import type { KV, Logger } from "../log/logger.ts";
import { errText } from "../util/err-text.ts";
import type { IPFamily } from "../util/net/family.ts";
import { familyOf, ofFamily } from "../util/net/family.ts";
import type { EndpointsUpdateResult } from "./endpoints-map.ts";
import type { ServiceUpdateResult } from "./service-map.ts";
import type { ServicePortInfo } from "./types.ts";
import { servicePortNameString } from "./types.ts";

/** The conntrack operations the cleanup needs (the host client, or a recorder in dry runs). */
export type ConntrackCleaner = Pick<
  ConntrackClient,
  "clearEntriesForIP" | "clearEntriesForPort" | "clearEntriesForNAT" | "clearEntriesForPortNAT"
>;

export interface StaleEntryInput {
  readonly family: IPFamily;
  readonly services: ReadonlyMap<string, ServicePortInfo>;
  readonly serviceUpdate: ServiceUpdateResult;
  readonly endpointsUpdate: EndpointsUpdateResult;
}

/** "ip:port" or "[ip]:port" -> ip. */
export function endpointIP(endpoint: string): string {
  if (endpoint.startsWith("[")) return endpoint.slice(1, endpoint.indexOf("]"));
  const colon = endpoint.lastIndexOf(":");
  return colon < 0 ? endpoint : endpoint.slice(0, colon);
}

/** Service IPs and UDP NodePorts whose conntrack entries predate the current rules. */
export function staleServiceTargets(input: StaleEntryInput): { ips: string[]; nodePorts: number[] } {
  const ips = new Set(ofFamily([...input.serviceUpdate.deletedUDPClusterIPs], input.family));
  const nodePorts = new Set<number>();
  // A UDP service that just got its first endpoint may have "no DNAT" entries cached.
  for (const name of input.endpointsUpdate.newlyActiveUDPServices) {
    const svc = input.services.get(servicePortNameString(name));
    const clusterIP = svc?.clusterIPs[input.family];
    if (!svc || !clusterIP) continue;
    ips.add(clusterIP);
    for (const ip of ofFamily(svc.externalIPs, input.family)) ips.add(ip);
    for (const ip of ofFamily(svc.loadBalancerVIPs, input.family)) ips.add(ip);
    if (svc.protocol === "UDP" && svc.nodePort !== 0) nodePorts.add(svc.nodePort);
  }
  return { ips: [...ips].sort(), nodePorts: [...nodePorts].sort((a, b) => a - b) };
}

async function attempt(logger: Logger, what: string, kv: KV, op: () => Promise<unknown>) {
  try {
    await op();
  } catch (err) {
    logger.error(what, { ...kv, err: errText(err) });
  }
}

async function clearDeletedEndpoints(ct: ConntrackCleaner, input: StaleEntryInput, logger: Logger) {
  for (const { servicePortName, endpoint } of input.endpointsUpdate.deletedUDPEndpoints) {
    const svc = input.services.get(servicePortNameString(servicePortName));
    const clusterIP = svc?.clusterIPs[input.family];
    const ip = endpointIP(endpoint);
    if (!svc || !clusterIP || familyOf(ip) !== input.family) continue;
    const kv = { servicePortName: servicePortNameString(servicePortName), endpoint };
    if (svc.nodePort !== 0) {
      await attempt(logger, "Failed to delete nodeport-related endpoint connections", kv, () =>
        ct.clearEntriesForPortNAT(ip, svc.nodePort, "UDP"),
      );
    }
    const origins = [
      clusterIP,
      ...ofFamily(svc.externalIPs, input.family),
      ...ofFamily(svc.loadBalancerVIPs, input.family),
    ];
    for (const origin of origins) {
      await attempt(logger, "Failed to delete endpoint connections", kv, () =>
        ct.clearEntriesForNAT(origin, ip, "UDP"),
      );
    }
  }
}

/** Clears stale UDP entries; failures are logged, never thrown (the rules are already in). */
export async function cleanStaleEntries(
  ct: ConntrackCleaner,
  input: StaleEntryInput,
  logger: Logger,
): Promise<void> {
  const { ips, nodePorts } = staleServiceTargets(input);
  for (const ip of ips) {
    await attempt(logger, "Failed to delete stale service connections", { ip }, () =>
      ct.clearEntriesForIP(ip, "UDP"),
    );
  }
  for (const port of nodePorts) {
    await attempt(logger, "Failed to clear udp conntrack", { nodePort: port }, () =>
      ct.clearEntriesForPort(port, input.family === "IPv6", "UDP"),
    );
  }
  await clearDeletedEndpoints(ct, input, logger);
}
