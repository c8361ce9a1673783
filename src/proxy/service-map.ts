// The applied service ports, updated from a ServiceChangeTracker once per sync. Only the
// Services the tracker reports are touched, so a one-Service change costs one Service of work.

import type { ServiceChangeTracker } from "./service-tracker.ts";
import type { ServiceKey, ServicePortInfo, ServicePortMap } from "./types.ts";

export interface ServiceUpdateResult {
  /** Services added, changed or deleted since the last update. */
  readonly updatedServices: Set<ServiceKey>;
  /** Cluster IPs (both families) of UDP service ports that are gone: their conntrack entries are stale. */
  readonly deletedUDPClusterIPs: Set<string>;
}

export class ServiceMap implements ServicePortMap {
  private readonly ports = new Map<string, ServicePortInfo>();
  private readonly idsByService = new Map<ServiceKey, readonly string[]>();
  private readonly healthCheckPorts = new Map<ServiceKey, number>();

  update(tracker: ServiceChangeTracker): ServiceUpdateResult {
    const result: ServiceUpdateResult = { updatedServices: new Set(), deletedUDPClusterIPs: new Set() };
    for (const [key, change] of tracker.checkout()) {
      result.updatedServices.add(key);
      this.replace(key, change.current.ports, result.deletedUDPClusterIPs);
    }
    return result;
  }

  /** Service -> healthCheckNodePort, for LoadBalancers with externalTrafficPolicy Local. */
  healthCheckNodePorts(): ReadonlyMap<ServiceKey, number> {
    return this.healthCheckPorts;
  }

  /** The ports of one Service (empty when it has none). */
  portsOf(key: ServiceKey): ServicePortInfo[] {
    return (this.idsByService.get(key) ?? []).map((id) => this.ports.get(id)!);
  }

  // Removal is computed against what this map holds, not the tracker's "previous", so the
  // map can never keep a port the tracker forgot about.
  private replace(key: ServiceKey, current: readonly ServicePortInfo[], deletedUDP: Set<string>): void {
    const keep = new Set(current.map((p) => p.id));
    for (const id of this.idsByService.get(key) ?? []) {
      if (keep.has(id)) continue;
      const old = this.ports.get(id);
      if (old?.protocol === "UDP") for (const ip of Object.values(old.clusterIPs)) if (ip) deletedUDP.add(ip);
      this.ports.delete(id);
    }
    for (const p of current) this.ports.set(p.id, p);
    if (current.length > 0) this.idsByService.set(key, [...keep]);
    else this.idsByService.delete(key);
    const hc = current.find((p) => p.healthCheckNodePort !== 0)?.healthCheckNodePort;
    if (hc) this.healthCheckPorts.set(key, hc);
    else this.healthCheckPorts.delete(key);
  }

  // ReadonlyMap<id, ServicePortInfo>, so proxiers can iterate it like upstream's ServicePortMap.
  get size(): number {
    return this.ports.size;
  }
  get(id: string): ServicePortInfo | undefined {
    return this.ports.get(id);
  }
  has(id: string): boolean {
    return this.ports.has(id);
  }
  keys(): MapIterator<string> {
    return this.ports.keys();
  }
  values(): MapIterator<ServicePortInfo> {
    return this.ports.values();
  }
  entries(): MapIterator<[string, ServicePortInfo]> {
    return this.ports.entries();
  }
  [Symbol.iterator](): MapIterator<[string, ServicePortInfo]> {
    return this.ports.entries();
  }
  forEach(
    fn: (value: ServicePortInfo, key: string, map: ReadonlyMap<string, ServicePortInfo>) => void,
  ): void {
    for (const [k, v] of this.ports) fn(v, k, this);
  }
}
