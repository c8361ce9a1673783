// What a sync must look at. A full reconcile compares everything wanted with everything the
// kernel lists; a partial one compares only what the replanned ports touched (before and after)
// plus the real servers still draining. Walking 150,000 real servers costs more than the 20 ms a
// one-endpoint change may take, so partial syncs are what keep changes cheap; full reconciles
// still run on every full sync, on idle syncs and at least once per --ipvs-sync-period, and
// repair anything changed behind our back.

import type { SetId } from "./ipsets.ts";
import { forEachMember, type PortPlan } from "./port-plan.ts";

export class SyncScope {
  /** Virtual server keys ("198.51.100.1,tcp:80"). */
  readonly virtualServers = new Set<string>();
  /** Their addresses, to pick them out of the kernel listing without building every key. */
  readonly virtualServerAddresses = new Set<string>();
  readonly entries = new Map<SetId, Set<string>>();
  /** Addresses on kube-ipvs0. */
  readonly bindAddresses = new Set<string>();

  /** Records everything a plan wants (call with a port's old plan and its new one). */
  touch(plan: PortPlan): void {
    plan.forEachVirtualServer((vs) => this.addVirtualServer(vs.key, vs.address));
    forEachMember(
      plan,
      (set, entry) => this.addEntry(set, entry),
      (address) => {
        this.bindAddresses.add(address);
        this.addEntry("ipvsIPs", address);
      },
    );
  }

  addVirtualServer(key: string, address: string): void {
    this.virtualServers.add(key);
    this.virtualServerAddresses.add(address);
  }

  get empty(): boolean {
    return this.virtualServers.size === 0 && this.entries.size === 0 && this.bindAddresses.size === 0;
  }

  private addEntry(set: SetId, entry: string): void {
    let entries = this.entries.get(set);
    if (!entries) {
      entries = new Set();
      this.entries.set(set, entries);
    }
    entries.add(entry);
  }
}
