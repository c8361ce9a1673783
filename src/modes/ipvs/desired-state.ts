// The union of every service port's plan, kept up to date plan by plan: replacing one port's plan
// touches only that port's virtual servers, entries and addresses, so a one-endpoint change does
// not rebuild state for the whole cluster. Entries and addresses are reference-counted because
// ports share them (two ports of a Service share the cluster IP to bind, for instance).

import { SET_IDS, type SetId } from "./ipsets.ts";
import { BIND, type PortPlan } from "./port-plan.ts";
import type { DesiredVirtualServer } from "./virtual-servers.ts";

/** A multiset of strings: present while at least one owner holds it. */
export class RefCount {
  private readonly counts = new Map<string, number>();

  add(key: string): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  remove(key: string): void {
    const n = this.counts.get(key);
    if (n === undefined) return;
    if (n <= 1) this.counts.delete(key);
    else this.counts.set(key, n - 1);
  }

  has(key: string): boolean {
    return this.counts.has(key);
  }

  get size(): number {
    return this.counts.size;
  }

  keys(): MapIterator<string> {
    return this.counts.keys();
  }
}

/**
 * Virtual servers by key. Two ports can claim the same key (an external IP shared by two
 * Services on one port): the first claim is the one programmed, later ones wait behind it, so
 * removing either leaves the other in place.
 */
export class VirtualServerClaims {
  private readonly active = new Map<string, DesiredVirtualServer>();
  private readonly waiting = new Map<string, DesiredVirtualServer[]>();

  claim(vs: DesiredVirtualServer): void {
    const current = this.active.get(vs.key);
    if (!current) this.active.set(vs.key, vs);
    else {
      const queue = this.waiting.get(vs.key);
      if (queue) queue.push(vs);
      else this.waiting.set(vs.key, [vs]);
    }
  }

  release(vs: DesiredVirtualServer): void {
    const queue = this.waiting.get(vs.key);
    if (this.active.get(vs.key) === vs) {
      const next = queue?.shift();
      if (next) this.active.set(vs.key, next);
      else this.active.delete(vs.key);
    } else if (queue) {
      const i = queue.indexOf(vs);
      if (i >= 0) queue.splice(i, 1);
    }
    if (queue?.length === 0) this.waiting.delete(vs.key);
  }

  get(key: string): DesiredVirtualServer | undefined {
    return this.active.get(key);
  }

  has(key: string): boolean {
    return this.active.has(key);
  }

  get size(): number {
    return this.active.size;
  }

  values(): MapIterator<DesiredVirtualServer> {
    return this.active.values();
  }
}

export class DesiredState {
  readonly virtualServers = new VirtualServerClaims();
  readonly entries: Readonly<Record<SetId, RefCount>>;
  readonly bindAddresses = new RefCount();
  readonly noNodeAccessRules = new RefCount();
  readonly noLocalInternal = new RefCount();
  readonly noLocalExternal = new RefCount();

  constructor() {
    const entries = {} as Record<SetId, RefCount>;
    for (const id of SET_IDS) entries[id] = new RefCount();
    this.entries = entries;
  }

  add(plan: PortPlan): void {
    plan.forEachVirtualServer((vs) => this.virtualServers.claim(vs));
    const { members } = plan;
    for (let i = 0; i < members.length; i += 2) {
      const text = members[i + 1]!;
      if (members[i] !== BIND) this.entries[members[i] as SetId].add(text);
      else {
        // KUBE-IPVS-IPS holds exactly the addresses bound on kube-ipvs0.
        this.bindAddresses.add(text);
        this.entries.ipvsIPs.add(text);
      }
    }
    for (const r of plan.noNodeAccessRules) this.noNodeAccessRules.add(r);
    if (plan.noLocalInternal) this.noLocalInternal.add(plan.serviceKey);
    if (plan.noLocalExternal) this.noLocalExternal.add(plan.serviceKey);
  }

  remove(plan: PortPlan): void {
    plan.forEachVirtualServer((vs) => this.virtualServers.release(vs));
    const { members } = plan;
    for (let i = 0; i < members.length; i += 2) {
      const text = members[i + 1]!;
      if (members[i] !== BIND) this.entries[members[i] as SetId].remove(text);
      else {
        this.bindAddresses.remove(text);
        this.entries.ipvsIPs.remove(text);
      }
    }
    for (const r of plan.noNodeAccessRules) this.noNodeAccessRules.remove(r);
    if (plan.noLocalInternal) this.noLocalInternal.remove(plan.serviceKey);
    if (plan.noLocalExternal) this.noLocalExternal.remove(plan.serviceKey);
  }
}
