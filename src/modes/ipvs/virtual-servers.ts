// The virtual servers the proxier wants, in the host client's vocabulary. Real servers are kept
// sorted the way ipvsadm lists them, so comparing with the kernel table is usually a walk of two
// arrays in step rather than a lookup per real server.

import { type VirtualServer, virtualServerKeyString } from "../../host/ipvs/types.ts";
import { canonicalIPv4Value, parseIPInet } from "../../util/net/address.ts";
import { familyOf } from "../../util/net/family.ts";
import { joinHostPort } from "../../util/net/host-port.ts";
import type { Protocol } from "../../util/net/protocol.ts";
import { NO_REALS, RealServers, realServers } from "./real-servers.ts";

export { type DesiredReal, RealServers, SERVING_WEIGHT } from "./real-servers.ts";

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

/** "ip:port" ("[ip]:port" for IPv6): a real server's identity within its virtual server. */
export function realId(real: { readonly address: string; readonly port: number }): string {
  return joinHostPort(real.address, real.port);
}

/**
 * What the virtual servers of one service port have in common: all but the address. A port
 * with 20,000 external IPs has 20,000 virtual servers and one of these (two or three with a
 * NodePort or a Local policy), so a virtual server costs an address, a key and a reference.
 */
export interface VirtualServerTemplate {
  readonly port: number;
  readonly protocol: Protocol;
  readonly scheduler: string;
  readonly flags: readonly string[];
  readonly timeout: number;
  readonly reals: RealServers;
  /** The service port that wants it (upstream lets one owner win when two collide). */
  readonly owner: string;
}

export interface VirtualServerSettings {
  readonly scheduler: string;
  readonly flags: readonly string[];
}

/** The settings every virtual server of a port shares. */
export function virtualServerTemplate(
  owner: string,
  port: number,
  protocol: Protocol,
  persistenceTimeout: number,
  settings: VirtualServerSettings,
  reals: RealServers,
): VirtualServerTemplate {
  return {
    port,
    protocol,
    scheduler: settings.scheduler,
    flags: settings.flags,
    timeout: persistenceTimeout,
    reals,
    owner,
  };
}

/**
 * One wanted virtual server with its real servers: itself the VirtualServer the host client
 * writes (its fields read through to the port's template, so nothing is copied per server).
 */
export class DesiredVirtualServer implements VirtualServer {
  /**
   * virtualServerKeyString(this): "198.51.100.1,tcp:80", which is also this address, protocol
   * and port as an ipset member: a plan passes the one string it uses for both.
   */
  readonly key: string;

  constructor(
    readonly address: string,
    readonly template: VirtualServerTemplate,
    key?: string,
  ) {
    this.key = key ?? virtualServerKeyString(this);
  }

  get port(): number {
    return this.template.port;
  }
  get protocol(): Protocol {
    return this.template.protocol;
  }
  get scheduler(): string {
    return this.template.scheduler;
  }
  get flags(): readonly string[] {
    return this.template.flags;
  }
  get timeout(): number {
    return this.template.timeout;
  }
  get reals(): RealServers {
    return this.template.reals;
  }
  get owner(): string {
    return this.template.owner;
  }
}

/**
 * Real servers for endpoints "ip:port", each once, in ipvsadm's listing order (address bytes,
 * then port). With canonical IPv4 addresses (the usual case) each endpoint is ordered by one
 * number in a typed array; other addresses by identity and sort key strings that live only
 * while the list is made.
 */
export function desiredReals(endpoints: readonly { ip: string; port: number }[]): RealServers {
  if (endpoints.length === 0) return NO_REALS;
  if (endpoints.length === 1) return new RealServers([endpoints[0]!.ip], endpoints[0]!.port);
  return numericReals(endpoints) ?? keyedReals(endpoints);
}

/** desiredReals for canonical IPv4 endpoints (address * 2^16 + port), or undefined for others. */
function numericReals(endpoints: readonly { ip: string; port: number }[]): RealServers | undefined {
  const n = endpoints.length;
  const values = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const ep = endpoints[i]!;
    const address = canonicalIPv4Value(ep.ip);
    if (address < 0 || !Number.isInteger(ep.port) || ep.port < 0 || ep.port > 0xffff) return undefined;
    values[i] = address * 0x10000 + ep.port;
  }
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  // Ties (the same address and port twice) keep their first occurrence first.
  order.sort((a, b) => values[a]! - values[b]! || a - b);
  const addresses: string[] = [];
  const ports: number[] = [];
  let last = -1;
  for (let k = 0; k < n; k++) {
    const i = order[k]!;
    if (values[i] === last) continue;
    last = values[i]!;
    addresses.push(endpoints[i]!.ip);
    ports.push(endpoints[i]!.port);
  }
  return realServers(addresses, ports);
}

function keyedReals(endpoints: readonly { ip: string; port: number }[]): RealServers {
  const seen = new Set<string>();
  const keyed: { readonly order: string; readonly ip: string; readonly port: number }[] = [];
  for (const ep of endpoints) {
    const id = joinHostPort(ep.ip, ep.port);
    if (seen.has(id)) continue;
    seen.add(id);
    keyed.push({ order: addressSortKey(ep.ip), ip: ep.ip, port: ep.port });
  }
  keyed.sort((a, b) => (a.order !== b.order ? (a.order < b.order ? -1 : 1) : a.port - b.port));
  return realServers(
    keyed.map((k) => k.ip),
    keyed.map((k) => k.port),
  );
}

/** Fixed-width hex of the address bytes (canonical input), so string order is byte order. */
export function addressSortKey(ip: string): string {
  const bytes = parseIPInet(ip)?.bytes ?? [];
  return bytes.map((b) => b.toString(16).padStart(2, "0")).join("");
}

const PROTOCOL_ORDER: Readonly<Record<Protocol, string>> = { TCP: "006", UDP: "017", SCTP: "132" };
/** Protocols by number (TCP 6, UDP 17, SCTP 132), as a rank. */
const PROTOCOL_RANK: Readonly<Record<Protocol, number>> = { TCP: 0, UDP: 1, SCTP: 2 };

/**
 * The order ipvsadm lists virtual servers in (compareKeys: family, protocol number, address,
 * port) as one string per server, made once: comparing parsed addresses in the comparator
 * would parse two addresses per comparison, some forty million times for two million servers.
 */
function orderKey(vs: DesiredVirtualServer): string {
  const family = familyOf(vs.address) === "IPv4" ? "0" : "1";
  return `${family}${PROTOCOL_ORDER[vs.protocol]}${addressSortKey(vs.address)}${String(vs.port).padStart(5, "0")}`;
}

/**
 * Virtual servers sorted as compareKeys orders them. IPv4 ones (one proxier serves one family)
 * are sorted by a number each (protocol rank, address, port: 50 bits), with no string made;
 * anything else by orderKey.
 */
export function virtualServerOrder(all: Iterable<DesiredVirtualServer>): DesiredVirtualServer[] {
  const servers = Array.from(all);
  const order = new Uint32Array(servers.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  const numbers = new Float64Array(servers.length);
  let numeric = true;
  for (let i = 0; i < servers.length && numeric; i++) {
    const vs = servers[i]!;
    const address = canonicalIPv4Value(vs.address);
    if (address < 0) numeric = false;
    else numbers[i] = (PROTOCOL_RANK[vs.protocol] * 2 ** 32 + address) * 2 ** 16 + vs.port;
  }
  if (numeric) order.sort((a, b) => numbers[a]! - numbers[b]!);
  else {
    const keys = servers.map(orderKey);
    order.sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : 0));
  }
  return permuted(servers, order);
}

/**
 * `items` rearranged in place so that items[k] is the old items[order[k]]: a cycle at a time,
 * with no second array (two million virtual servers: 16 MB). `order` is used up.
 */
function permuted<T>(items: T[], order: Uint32Array): T[] {
  for (let start = 0; start < items.length; start++) {
    if (order[start] === start) continue;
    const first = items[start]!;
    let at = start;
    for (;;) {
      const from = order[at]!;
      order[at] = at;
      if (from === start) {
        items[at] = first;
        break;
      }
      items[at] = items[from]!;
      at = from;
    }
  }
  return items;
}
