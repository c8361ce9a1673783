// Who may program an external address. Any namespace can write spec.externalIPs (and a
// LoadBalancer controller status IPs), so two Services can claim the same IP, port and protocol,
// or claim another Service's ClusterIP (the CVE-2020-8554 class). Modes resolve nothing
// themselves: iptables would let the first rule win, nftables the last map element, ipvs the
// first virtual server. This index decides once, for every mode alike:
// - an external or LoadBalancer IP equal to any Service's ClusterIP is never programmed;
// - among equal claims on ip/port/protocol, the oldest Service wins (creationTimestamp, then
//   namespace/name), so a newcomer cannot take traffic from an existing Service.
// Losers keep the rest of their addresses. Every step is linear in the addresses touched.

import type { ServiceKey, ServicePortInfo } from "./types.ts";

export interface AddressConflict {
  readonly field: "spec.externalIPs" | "status.loadBalancer.ingress";
  readonly ip: string;
  readonly port: number;
  readonly protocol: string;
  /** The Service that keeps the address; undefined when it is a ClusterIP. */
  readonly winner: ServiceKey | undefined;
  /** The Service whose ClusterIP it is, when that is the reason. */
  readonly clusterIPOf: ServiceKey | undefined;
}

export interface ResolvedPorts {
  readonly ports: readonly ServicePortInfo[];
  readonly conflicts: readonly AddressConflict[];
}

interface Claimant {
  readonly key: ServiceKey;
  readonly createdAtMs: number;
}

function claimKey(ip: string, port: number, protocol: string): string {
  return `${ip} ${port} ${protocol}`;
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (set) set.add(value);
  else map.set(key, new Set([value]));
}

function removeFrom<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}

/** The older claim first; equal ages (or none) by namespace/name. */
function outranks(a: Claimant, b: Claimant): boolean {
  if (a.createdAtMs !== b.createdAtMs) return a.createdAtMs < b.createdAtMs;
  return a.key < b.key;
}

export class AddressClaims {
  /** ClusterIP -> Services that have it (normally one). */
  private readonly clusterIPs = new Map<string, Set<ServiceKey>>();
  /** ip/port/protocol -> Services claiming it as an external or LoadBalancer IP. */
  private readonly claims = new Map<string, Map<ServiceKey, Claimant>>();
  /** External or LoadBalancer IP -> Services claiming it on any port. */
  private readonly claimantsByIP = new Map<string, Set<ServiceKey>>();
  /** Cached winner per claim key; dropped whenever its claimants change. */
  private readonly winners = new Map<string, ServiceKey>();

  /** Adds (or with `remove`, takes back) the claims of one Service; notes every IP touched. */
  index(key: ServiceKey, ports: readonly ServicePortInfo[], touched: Set<string>, remove = false): void {
    for (const p of ports) {
      for (const ip of Object.values(p.clusterIPs)) {
        if (!ip) continue;
        touched.add(ip);
        if (remove) removeFrom(this.clusterIPs, ip, key);
        else addTo(this.clusterIPs, ip, key);
      }
      const claimant: Claimant = { key, createdAtMs: p.createdAtMs ?? Number.POSITIVE_INFINITY };
      for (const list of [p.externalIPs, p.loadBalancerVIPs]) {
        for (const ip of list) {
          touched.add(ip);
          const ck = claimKey(ip, p.port, p.protocol);
          this.winners.delete(ck);
          if (remove) {
            const m = this.claims.get(ck);
            m?.delete(key);
            if (m?.size === 0) this.claims.delete(ck);
            removeFrom(this.claimantsByIP, ip, key);
          } else {
            const m = this.claims.get(ck) ?? new Map<ServiceKey, Claimant>();
            if (m.size === 0) this.claims.set(ck, m);
            m.set(key, claimant);
            addTo(this.claimantsByIP, ip, key);
          }
        }
      }
    }
  }

  /** Services whose external claims may have changed because these IPs were touched. */
  claimantsOf(touched: Iterable<string>, into: Set<ServiceKey>): void {
    for (const ip of touched) for (const key of this.claimantsByIP.get(ip) ?? []) into.add(key);
  }

  /** The ports `key` may program: its own, minus addresses it lost. Unchanged ports are reused. */
  resolve(key: ServiceKey, ports: readonly ServicePortInfo[]): ResolvedPorts {
    const conflicts: AddressConflict[] = [];
    const out = ports.map((p) => {
      const externalIPs = this.allowed(key, p, p.externalIPs, "spec.externalIPs", conflicts);
      const loadBalancerVIPs = this.allowed(
        key,
        p,
        p.loadBalancerVIPs,
        "status.loadBalancer.ingress",
        conflicts,
      );
      if (externalIPs === p.externalIPs && loadBalancerVIPs === p.loadBalancerVIPs) return p;
      return { ...p, externalIPs, loadBalancerVIPs };
    });
    return { ports: out, conflicts };
  }

  private allowed(
    key: ServiceKey,
    p: ServicePortInfo,
    ips: readonly string[],
    field: AddressConflict["field"],
    conflicts: AddressConflict[],
  ): readonly string[] {
    let kept: string[] | undefined;
    for (const [i, ip] of ips.entries()) {
      const owners = this.clusterIPs.get(ip);
      const winner = owners ? undefined : this.winner(claimKey(ip, p.port, p.protocol));
      const ok = !owners && (winner === undefined || winner === key);
      if (ok) {
        kept?.push(ip);
        continue;
      }
      kept ??= ips.slice(0, i);
      const clusterIPOf = owners ? [...owners].sort()[0] : undefined;
      conflicts.push({ field, ip, port: p.port, protocol: p.protocol, winner, clusterIPOf });
    }
    return kept ?? ips;
  }

  private winner(ck: string): ServiceKey | undefined {
    const cached = this.winners.get(ck);
    if (cached !== undefined) return cached;
    const claimants = this.claims.get(ck);
    if (!claimants) return undefined;
    let best: Claimant | undefined;
    for (const c of claimants.values()) if (!best || outranks(c, best)) best = c;
    if (best) this.winners.set(ck, best.key);
    return best?.key;
  }
}
