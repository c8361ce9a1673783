// The Services each family's proxier held out of its sets (set-room.ts), for the one health
// check server both families feed. That server cannot tell which family a load balancer will
// send, so a Service held out in either family answers "no local endpoint": its traffic goes
// to nodes that carry it rather than here, where one family of it would be dropped.

import type { ServiceKey } from "../../proxy/types.ts";
import type { IPFamily } from "../../util/net/family.ts";

export class HeldOutByFamily {
  private readonly byFamily = new Map<IPFamily, ReadonlySet<ServiceKey>>();

  /**
   * Takes in what `family`'s last successful sync held out; answers the Services held out in
   * any family (each family's latest), undefined when none.
   */
  record(family: IPFamily, heldOut: Iterable<ServiceKey>): ReadonlySet<ServiceKey> | undefined {
    const keys = new Set(heldOut);
    if (keys.size > 0) this.byFamily.set(family, keys);
    else this.byFamily.delete(family);
    if (this.byFamily.size === 0) return undefined;
    if (this.byFamily.size === 1) return this.byFamily.values().next().value;
    const all = new Set<ServiceKey>();
    for (const set of this.byFamily.values()) for (const key of set) all.add(key);
    return all;
  }
}
