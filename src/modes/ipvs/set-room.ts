// Which Services fit in ipvs mode's sets. The hash sets are created with upstream's maxelem of
// 65,536, and `ipset restore` stops at the first member past a set's limit: one Service whose
// ports, external IPs x ports or source ranges need more members would make every ipset write
// fail, and with it every sync on the node, for as long as it exists (upstream fails so:
// kubernetes/kubernetes#129389). Instead Services are taken oldest first (creationTimestamp,
// then namespace/name, the order address claims use) while each set has room for their members;
// a Service that does not fit is held out whole (no virtual servers, no members) and the rest
// keep syncing. By age, so a newcomer never pushes out a Service already served, and every node
// and every restart decides alike.

import type { Steps } from "../../util/time-slice.ts";
import type { SetId } from "./ipsets.ts";
import { BIND, type PortPlan } from "./port-plan.ts";

/** One Service's port plans, as the fit reads them. */
export interface ServicePlans {
  /** "namespace/name". */
  readonly key: string;
  /** creationTimestamp in ms; undefined ranks last. */
  readonly createdAtMs: number | undefined;
  readonly plans: readonly PortPlan[];
}

/** Why a Service is held out: the first set (in upstream's order) it would overfill. */
export interface Shortfall {
  readonly set: SetId;
  /** Members the set would hold with this Service's added to those of the Services taken. */
  readonly wanted: number;
  readonly limit: number;
}

/** The set a member of PortPlan.members goes to: BIND addresses are KUBE-IPVS-IPS's. */
export function setOfMember(tag: string): SetId {
  return tag === BIND ? "ipvsIPs" : (tag as SetId);
}

function olderFirst(a: ServicePlans, b: ServicePlans): number {
  const ta = a.createdAtMs ?? Number.POSITIVE_INFINITY;
  const tb = b.createdAtMs ?? Number.POSITIVE_INFINITY;
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/**
 * The Services held out, by key, when `services` are taken oldest first into sets of the given
 * limits (only the sets listed are checked: the others cannot overflow). Linear in the members
 * of the listed sets; a pause may come between two port plans.
 */
export function* fitServices(
  services: readonly ServicePlans[],
  limits: ReadonlyMap<SetId, number>,
): Steps<Map<string, Shortfall>> {
  const taken = new Map<SetId, Set<string>>();
  for (const id of limits.keys()) taken.set(id, new Set());
  const heldOut = new Map<string, Shortfall>();
  for (const service of [...services].sort(olderFirst)) {
    // This Service's members that the Services taken do not already have, by set.
    const fresh = new Map<SetId, Set<string>>();
    for (const plan of service.plans) {
      const { members } = plan;
      for (let i = 0; i < members.length; i += 2) {
        const set = setOfMember(members[i]!);
        const have = taken.get(set);
        if (!have || have.has(members[i + 1]!)) continue;
        let mine = fresh.get(set);
        if (!mine) {
          mine = new Set();
          fresh.set(set, mine);
        }
        mine.add(members[i + 1]!);
      }
      yield;
    }
    const short = shortfall(fresh, taken, limits);
    if (short) {
      heldOut.set(service.key, short);
      continue;
    }
    for (const [set, mine] of fresh) {
      const have = taken.get(set)!;
      for (const entry of mine) have.add(entry);
    }
  }
  return heldOut;
}

function shortfall(
  fresh: ReadonlyMap<SetId, ReadonlySet<string>>,
  taken: ReadonlyMap<SetId, ReadonlySet<string>>,
  limits: ReadonlyMap<SetId, number>,
): Shortfall | undefined {
  for (const [set, limit] of limits) {
    const wanted = (taken.get(set)?.size ?? 0) + (fresh.get(set)?.size ?? 0);
    if (wanted > limit) return { set, wanted, limit };
  }
  return undefined;
}
