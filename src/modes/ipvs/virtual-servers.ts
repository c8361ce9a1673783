// The virtual servers the proxier wants, in the host client's vocabulary. Real servers are kept
// sorted the way ipvsadm lists them, so comparing with the kernel table is usually a walk of two
// arrays in step rather than a lookup per real server.

import { type VirtualServer, virtualServerKeyString } from "../../host/ipvs/types.ts";
import { parseIPInet } from "../../util/net/address.ts";
import { joinHostPort } from "../../util/net/host-port.ts";
import type { Protocol } from "../../util/net/protocol.ts";

/** The scheduler upstream falls back to when none is configured. */
export const DEFAULT_SCHEDULER = "rr";

export { IPVS_SCHEDULERS } from "../../config/validate.ts";

/**
 * Scheduler flags upstream sets: "mh" gets IP_VS_SVC_F_SCHED_MH_PORT (upstream's FlagSourceHash,
 * 0x10: hash the source port as well as the address); every other scheduler, "sh" included,
 * runs without flags.
 */
export function schedulerFlags(scheduler: string): readonly string[] {
  return scheduler === "mh" ? MH_FLAGS : NO_FLAGS;
}

const MH_FLAGS: readonly string[] = Object.freeze(["mh-port"]);
const NO_FLAGS: readonly string[] = Object.freeze([]);

export interface DesiredReal {
  readonly address: string;
  readonly port: number;
  /** "ip:port" ("[ip]:port" for IPv6): identity within its virtual server. */
  readonly id: string;
  /** Address bytes as fixed-width hex: orders like ipvsadm's listing. */
  readonly sortKey: string;
}

export interface DesiredVirtualServer {
  /** virtualServerKeyString(server): "TCP/198.51.100.1:80". */
  readonly key: string;
  readonly server: VirtualServer;
  readonly reals: readonly DesiredReal[];
  /** The service port that wants it (upstream lets one owner win when two collide). */
  readonly owner: string;
}

export interface VirtualServerSettings {
  readonly scheduler: string;
  readonly flags: readonly string[];
}

/** One virtual server with its real servers (deduplicated by ip:port and sorted). */
export function desiredVirtualServer(
  owner: string,
  address: string,
  port: number,
  protocol: Protocol,
  persistenceTimeout: number,
  settings: VirtualServerSettings,
  reals: readonly DesiredReal[],
): DesiredVirtualServer {
  const server: VirtualServer = {
    address,
    port,
    protocol,
    scheduler: settings.scheduler,
    flags: settings.flags,
    timeout: persistenceTimeout,
  };
  return { key: virtualServerKeyString(server), server, reals, owner };
}

/** Real servers for endpoints "ip:port", each once, in ipvsadm's listing order. */
export function desiredReals(endpoints: readonly { ip: string; port: number }[]): DesiredReal[] {
  const byId = new Map<string, DesiredReal>();
  for (const ep of endpoints) {
    const id = joinHostPort(ep.ip, ep.port);
    if (!byId.has(id)) byId.set(id, { address: ep.ip, port: ep.port, id, sortKey: addressSortKey(ep.ip) });
  }
  return [...byId.values()].sort(compareReals);
}

export function compareReals(a: DesiredReal, b: DesiredReal): number {
  if (a.sortKey !== b.sortKey) return a.sortKey < b.sortKey ? -1 : 1;
  return a.port - b.port;
}

/** Fixed-width hex of the address bytes (canonical input), so string order is byte order. */
export function addressSortKey(ip: string): string {
  const bytes = parseIPInet(ip)?.bytes ?? [];
  return bytes.map((b) => b.toString(16).padStart(2, "0")).join("");
}
