// What a sync must look at. A full reconcile compares everything wanted with everything the
// kernel lists; a partial one compares only what the replanned ports touched (before and after)
// plus the real servers still draining. Walking 150,000 real servers costs more than the 20 ms a
// one-endpoint change may take, so partial syncs are what keep changes cheap; full reconciles
// still run on every full sync, on idle syncs and at least once per --ipvs-sync-period, and
// repair anything changed behind our back.
//
// A scope also remembers which of the set members and bound addresses it touched the state held
// before this sync changed it. After a successful sync the kernel holds exactly what the state
// wanted (full reconciles make it so, partial ones keep it so for what they touch), so that is
// what the kernel holds of them now: a partial sync needs no `ipset save` or address listing.

import type { VirtualServerKey } from "../../host/ipvs/types.ts";
import type { DesiredState } from "./desired-state.ts";
import type { SetId } from "./ipsets.ts";
import { forEachMember, type PortPlan } from "./port-plan.ts";
import type { DesiredVirtualServer } from "./virtual-servers.ts";

export class SyncScope {
  /** Virtual server keys ("198.51.100.1,tcp:80"), each with its parts. */
  readonly virtualServers = new Map<string, VirtualServerKey>();
  /** Their addresses, to pick them out of the kernel listing without building every key. */
  readonly virtualServerAddresses = new Set<string>();
  readonly entries = new Map<SetId, Set<string>>();
  /** Addresses on kube-ipvs0. */
  readonly bindAddresses = new Set<string>();
  /** Of `entries`, those `before` held when first touched. */
  readonly heldEntries = new Map<SetId, Set<string>>();
  /** Of `bindAddresses`, those `before` held when first touched. */
  readonly heldBinds = new Set<string>();
  /**
   * Of `virtualServers` touched by a plan, the one `before` held under each key when first
   * touched (null: none). Plans are never changed once made, so this is how it was programmed.
   */
  readonly heldVirtualServers = new Map<string, DesiredVirtualServer | null>();

  /**
   * `before`: the desired state as the replan found it; plans are touched before the state
   * takes or drops them.
   */
  constructor(private readonly before?: DesiredState) {}

  /** Records everything a plan wants (call with a port's old plan and its new one). */
  touch(plan: PortPlan): void {
    plan.forEachVirtualServer((vs) => {
      if (!this.virtualServers.has(vs.key) && this.before) {
        this.heldVirtualServers.set(vs.key, this.before.virtualServers.get(vs.key) ?? null);
      }
      this.addVirtualServer(vs.key, vs);
    });
    forEachMember(
      plan,
      (set, entry) => this.addEntry(set, entry),
      (address) => {
        if (!this.bindAddresses.has(address)) {
          this.bindAddresses.add(address);
          if (this.before?.bindAddresses.has(address)) this.heldBinds.add(address);
        }
        this.addEntry("ipvsIPs", address);
      },
    );
  }

  addVirtualServer(key: string, vs: VirtualServerKey): void {
    this.virtualServers.set(key, vs);
    this.virtualServerAddresses.add(vs.address);
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
    if (entries.has(entry)) return;
    entries.add(entry);
    if (!this.before?.entries[set].has(entry)) return;
    let held = this.heldEntries.get(set);
    if (!held) {
      held = new Set();
      this.heldEntries.set(set, held);
    }
    held.add(entry);
  }
}
