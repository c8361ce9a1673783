// Which Services fit in ipvs mode's sets. The hash sets are created with upstream's maxelem of
// 65,536, and `ipset restore` stops at the first member past a set's limit: one Service whose
// ports, external IPs x ports or source ranges need more members would make every ipset write
// fail, and with it every sync on the node, for as long as it exists (upstream fails so:
// kubernetes/kubernetes#129389). Instead Services are taken oldest first (creationTimestamp,
// then namespace/name, the order address claims use) while each set has room for their members;
// a Service that does not fit is held out whole (no virtual servers, no members) and the rest
// keep syncing. By age, so a newcomer never pushes out a Service already served, and every node
// and every restart decides alike.

import { ITEMS_PER_STEP, runSteps, type Steps } from "../../util/time-slice.ts";
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

/** Why a Service is held out: the first set it was found to overfill. */
export interface Shortfall {
  readonly set: SetId;
  /**
   * At least this many members would be in the set with this Service's: those of the older
   * Services taken and this Service's, counted until the limit is passed (fitServices: then the
   * rest as listed; SoloTally: to the end of the port that passed it).
   */
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
 * of the listed sets, and a Service is read only until it overfills a set (20,000 external IPs x
 * 100 ports would otherwise be two million members copied to find what the 65,537th tells); a
 * pause may come between two port plans.
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
    let short: Shortfall | undefined;
    for (let p = 0; p < service.plans.length && !short; p++) {
      const { members } = service.plans[p]!;
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
        const limit = limits.get(set)!;
        if (have.size + mine.size <= limit) continue;
        const rest = membersFrom(service.plans, set, p, i + 2);
        short = { set, wanted: have.size + mine.size + rest, limit };
        break;
      }
      yield;
    }
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

/** Members of `set` in `plans` from plan `p`'s slot `i` on, repeats included (a count, no copy). */
function membersFrom(plans: readonly PortPlan[], set: SetId, p: number, i: number): number {
  let n = 0;
  for (let q = p; q < plans.length; q++) {
    const { members } = plans[q]!;
    for (let j = q === p ? i : 0; j < members.length; j += 2) if (setOfMember(members[j]!) === set) n++;
  }
  return n;
}

/**
 * Members of each Service's plans as a replan meets them, to find a Service that passes a set's
 * limit on its own: it cannot fit whatever the order, so the rest of its ports need not be
 * planned (20,000 external IPs x 100 ports are two million virtual servers; four ports tell).
 * Plans are counted as listed; only a set whose count passes its limit is counted again without
 * repeats (bound addresses repeat on every port), and that count stops one plan past the limit.
 */
export class SoloTally {
  private readonly services = new Map<string, ServiceTally>();

  constructor(private readonly limits: ReadonlyMap<SetId, number>) {}

  /** Counts `plan` for Service `key`; the set it passes on its own, if any. */
  add(key: string, plan: PortPlan): Shortfall | undefined {
    return runSteps(this.adding(key, plan));
  }

  /** add() in steps: one plan may hold 100,000 members. */
  *adding(key: string, plan: PortPlan): Steps<Shortfall | undefined> {
    let t = this.services.get(key);
    if (!t) {
      t = { listed: new Map(), plans: [], distinct: new Map() };
      this.services.set(key, t);
    }
    t.plans.push(plan);
    const { members } = plan;
    for (let i = 0; i < members.length; i += 2) {
      if (i % (2 * ITEMS_PER_STEP) === 2 * ITEMS_PER_STEP - 2) yield;
      const set = setOfMember(members[i]!);
      const limit = this.limits.get(set);
      if (limit === undefined) continue;
      const listed = (t.listed.get(set) ?? 0) + 1;
      t.listed.set(set, listed);
      if (listed <= limit) continue;
      let distinct = t.distinct.get(set);
      if (!distinct) {
        // First pass of the limit as listed: the plans met so far (this one whole), without repeats.
        distinct = new Set();
        t.distinct.set(set, distinct);
        for (const p of t.plans) yield* addMembers(distinct, p, set, 0);
      } else distinct.add(members[i + 1]!);
      if (distinct.size > limit) {
        yield* addMembers(distinct, plan, set, i + 2);
        this.services.delete(key);
        return { set, wanted: distinct.size, limit };
      }
    }
    return undefined;
  }
}

function* addMembers(to: Set<string>, plan: PortPlan, set: SetId, from: number): Steps<void> {
  const { members } = plan;
  for (let j = from; j < members.length; j += 2) {
    if ((j - from) % (2 * ITEMS_PER_STEP) === 2 * ITEMS_PER_STEP - 2) yield;
    if (setOfMember(members[j]!) === set) to.add(members[j + 1]!);
  }
}

interface ServiceTally {
  /** Members per set, repeats included. */
  readonly listed: Map<SetId, number>;
  readonly plans: PortPlan[];
  /** For the sets whose listed count passed the limit: the members, without repeats. */
  readonly distinct: Map<SetId, Set<string>>;
}
