// Addresses on kube-ipvs0: every service address with a virtual server is bound there (so the
// kernel accepts packets for it and IPVS can take them), and nothing else of this family is.

import type { InterfaceAddress } from "../../host/netlink/types.ts";
import { familyOf, type IPFamily } from "../../util/net/family.ts";
import type { RefCount } from "./desired-state.ts";

/** upstream's defaultDummyDevice. */
export const DUMMY_DEVICE = "kube-ipvs0";

/** This family's addresses on every device but kube-ipvs0 (the node's own), sorted. */
export function nodeAddresses(all: readonly InterfaceAddress[], family: IPFamily): string[] {
  const out = new Set<string>();
  for (const a of all) {
    if (a.device !== DUMMY_DEVICE && familyOf(a.address) === family) out.add(a.address);
  }
  return [...out].sort();
}

/** This family's addresses on kube-ipvs0; with `only`, just those among them. */
export function boundAddresses(
  all: readonly InterfaceAddress[],
  family: IPFamily,
  only?: ReadonlySet<string>,
): string[] {
  const out: string[] = [];
  for (const a of all) {
    if (a.device !== DUMMY_DEVICE || (only && !only.has(a.address))) continue;
    if (familyOf(a.address) === family) out.push(a.address);
  }
  return out;
}

export interface BindPlan {
  readonly add: readonly string[];
  readonly remove: readonly string[];
}

/**
 * What to bind and unbind. `bound` is what kube-ipvs0 carries (in a partial sync: of the
 * addresses in `scope` only, and only those are considered).
 */
export function planBindings(
  want: RefCount,
  bound: readonly string[],
  scope?: ReadonlySet<string>,
): BindPlan {
  const have = new Set(bound);
  const add: string[] = [];
  for (const a of scope ?? want.keys()) if (want.has(a) && !have.has(a)) add.push(a);
  const remove = bound.filter((a) => !want.has(a));
  return { add, remove };
}
