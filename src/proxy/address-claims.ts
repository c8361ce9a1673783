// Who may program an external address. Any namespace can write spec.externalIPs (and a
// LoadBalancer controller status IPs), so two Services can claim the same IP, port and protocol,
// or claim another Service's ClusterIP (the CVE-2020-8554 class). Modes resolve nothing
// themselves: iptables would let the first rule win, nftables the last map element, ipvs the
// first virtual server. This index decides once, for every mode alike:
// - an external or LoadBalancer IP equal to any Service's ClusterIP is never programmed;
// - among equal claims on ip/port/protocol, the oldest Service wins (creationTimestamp, then
//   namespace/name), so a newcomer cannot take traffic from an existing Service.
// Losers keep the rest of their addresses. Every step is linear in the addresses touched.

import { StringMap } from "../util/string-map.ts";
import { ITEMS_PER_STEP, type Steps } from "../util/time-slice.ts";
import { plainServicePort, type ServiceKey, type ServicePortInfo } from "./types.ts";

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

/**
 * One Service's claim. externalIPs and LoadBalancer IPs are Service-wide, so every IP of a
 * Service shares one Claimant and its set of ports: 20,000 IPs x 100 ports cost 20,000 map
 * entries, not 2,000,000.
 */
interface Claimant {
  readonly key: ServiceKey;
  readonly createdAtMs: number;
  /** "port/protocol" of every port that lists the IP (all of the Service's, in practice). */
  readonly ports: ReadonlySet<string>;
}

/** An address no other Service claims and no Service has as its ClusterIP. */
const HELD = 1;
/** Every address of a list is HELD. */
const ALL_HELD = "all held";
/**
 * Each Service-wide list's standing (by identity: every port of a Service has the same lists),
 * worked out once per resolve instead of once per port: 20,000 IPs x 100 ports were 2,000,000
 * lookups of each kind.
 */
type Standings = Map<readonly string[], Uint8Array | typeof ALL_HELD>;

function portKey(port: number, protocol: string): string {
  return `${port}/${protocol}`;
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
  /**
   * External or LoadBalancer IP -> its claimants: one (the usual case) or several. A StringMap:
   * one Service may claim 100,000 addresses, for as long as it exists (~6.5 MiB as a Map).
   */
  private readonly claimants = new StringMap<Claimant | Claimant[]>();

  /**
   * Adds (or with `remove`, takes back) the claims of one Service; notes in `touched` every IP
   * that may change hands: a ClusterIP, or an address another Service claims too. (An address
   * only this Service claims concerns no one else, and a Service may list 100,000.)
   * Steps: a pause may come between any two ports or addresses.
   */
  *index(
    key: ServiceKey,
    ports: readonly ServicePortInfo[],
    touched: Set<string>,
    remove = false,
  ): Steps<void> {
    const portKeys = new Set<string>();
    // The lists are Service-wide, so every port has the same ones: each is read once.
    const lists = new Set<readonly string[]>();
    let items = 0;
    for (const p of ports) {
      if (++items % ITEMS_PER_STEP === 0) yield;
      for (const ip of Object.values(p.clusterIPs)) {
        if (!ip) continue;
        touched.add(ip);
        if (remove) removeFrom(this.clusterIPs, ip, key);
        else addTo(this.clusterIPs, ip, key);
      }
      if (p.externalIPs.length + p.loadBalancerVIPs.length === 0) continue;
      portKeys.add(portKey(p.port, p.protocol));
      if (p.externalIPs.length > 0) lists.add(p.externalIPs);
      if (p.loadBalancerVIPs.length > 0) lists.add(p.loadBalancerVIPs);
    }
    const createdAtMs = ports[0]?.createdAtMs ?? Number.POSITIVE_INFINITY;
    const claimant: Claimant = { key, createdAtMs, ports: portKeys };
    if (!remove) {
      // Room made once for all of them: growing step by step leaves each smaller table behind.
      let claimed = 0;
      for (const list of lists) claimed += list.length;
      this.claimants.reserve(this.claimants.size + claimed);
    }
    for (const list of lists) {
      for (const ip of list) {
        if (++items % ITEMS_PER_STEP === 0) yield;
        if (remove ? this.release(ip, key) : this.claim(ip, claimant)) touched.add(ip);
      }
    }
  }

  /** Adds `c` to the IP's claimants (once); true when another Service claims it too. */
  private claim(ip: string, c: Claimant): boolean {
    const held = this.claimants.get(ip);
    if (!held) {
      this.claimants.set(ip, c);
      return false;
    }
    if (held === c) return false;
    if (!Array.isArray(held)) {
      this.claimants.set(ip, [held, c]);
      return true;
    }
    if (!held.includes(c)) held.push(c);
    return true;
  }

  /** Takes `key`'s claim on the IP back; true when another Service still claims it. */
  private release(ip: string, key: ServiceKey): boolean {
    const held = this.claimants.get(ip);
    if (!held) return false;
    if (!Array.isArray(held)) {
      if (held.key === key) this.claimants.delete(ip);
      return held.key !== key;
    }
    const rest = held.filter((c) => c.key !== key);
    if (rest.length === 0) this.claimants.delete(ip);
    else this.claimants.set(ip, rest.length === 1 ? rest[0]! : rest);
    return rest.length > 0;
  }

  /** Services whose external claims may have changed because these IPs were touched. */
  claimantsOf(touched: Iterable<string>, into: Set<ServiceKey>): void {
    for (const ip of touched) {
      const held = this.claimants.get(ip);
      if (!held) continue;
      if (Array.isArray(held)) for (const c of held) into.add(c.key);
      else into.add(held.key);
    }
  }

  /**
   * The ports `key` may program: its own, minus addresses it lost. Unchanged ports are reused.
   * Steps: a pause may come between any two ports, or addresses of one.
   */
  *resolve(key: ServiceKey, ports: readonly ServicePortInfo[]): Steps<ResolvedPorts> {
    const conflicts: AddressConflict[] = [];
    const out: ServicePortInfo[] = [];
    const standing: Standings = new Map();
    for (let i = 0; i < ports.length; i++) {
      if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
      const p = ports[i]!;
      // Most ports have no addresses: no generator is made for them.
      const externalIPs =
        p.externalIPs.length === 0
          ? p.externalIPs
          : yield* this.allowed(key, p, p.externalIPs, "spec.externalIPs", conflicts, standing);
      const loadBalancerVIPs =
        p.loadBalancerVIPs.length === 0
          ? p.loadBalancerVIPs
          : yield* this.allowed(
              key,
              p,
              p.loadBalancerVIPs,
              "status.loadBalancer.ingress",
              conflicts,
              standing,
            );
      if (externalIPs === p.externalIPs && loadBalancerVIPs === p.loadBalancerVIPs) out.push(p);
      else out.push({ ...plainServicePort(p), externalIPs, loadBalancerVIPs });
    }
    return { ports: out, conflicts };
  }

  private *allowed(
    key: ServiceKey,
    p: ServicePortInfo,
    ips: readonly string[],
    field: AddressConflict["field"],
    conflicts: AddressConflict[],
    standings: Standings,
  ): Steps<readonly string[]> {
    let standing = standings.get(ips);
    if (standing === undefined) {
      standing = yield* this.standing(key, ips);
      standings.set(ips, standing);
    }
    if (standing === ALL_HELD) return ips;
    let kept: string[] | undefined;
    const pk = portKey(p.port, p.protocol);
    for (let i = 0; i < ips.length; i++) {
      if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
      const ip = ips[i]!;
      if (standing[i] === HELD) {
        kept?.push(ip);
        continue;
      }
      const owners = this.clusterIPs.get(ip);
      const winner = owners ? undefined : this.winner(ip, pk);
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

  /**
   * Which of `ips` are `key`'s on any port: no ClusterIP and no other claimant (HELD); the rest
   * are judged per port. ALL_HELD when that is every one, the usual case.
   */
  private *standing(key: ServiceKey, ips: readonly string[]): Steps<Uint8Array | typeof ALL_HELD> {
    const standing = new Uint8Array(ips.length);
    let held = 0;
    for (let i = 0; i < ips.length; i++) {
      if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
      const ip = ips[i]!;
      const claim = this.claimants.get(ip);
      if (this.clusterIPs.has(ip) || !claim || Array.isArray(claim) || claim.key !== key) continue;
      standing[i] = HELD;
      held++;
    }
    return held === ips.length ? ALL_HELD : standing;
  }

  /** Who holds ip on port/protocol: the oldest of the Services claiming it there. */
  private winner(ip: string, pk: string): ServiceKey | undefined {
    const held = this.claimants.get(ip);
    if (!held) return undefined;
    if (!Array.isArray(held)) return held.ports.has(pk) ? held.key : undefined;
    let best: Claimant | undefined;
    for (const c of held) if (c.ports.has(pk) && (!best || outranks(c, best))) best = c;
    return best?.key;
  }
}
