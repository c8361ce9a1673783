// The applied endpoints per service port, updated from an EndpointsChangeTracker once per sync.
// Besides the endpoints, an update reports what the conntrack cleanup needs for UDP (endpoints
// traffic may still be pinned to, and services that just got their first endpoint) and keeps
// the per-Service count of local ready endpoints for the health check servers.

import { collectYoungGarbage } from "../runtime.ts";
import type { IPFamily } from "../util/net/family.ts";
import type { Protocol } from "../util/net/protocol.ts";
import { type KnownPortIds, mergeSlices, type PortEndpoints } from "./endpoint-slice-cache.ts";
import type { EndpointsChangeTracker } from "./endpoints-tracker.ts";
import type { EndpointInfo, EndpointsMap as EndpointsMapView, ServiceKey } from "./types.ts";

/** Local ready endpoints of one Service, by IP family (a family with none is absent). */
export type LocalReadyCounts = Readonly<Partial<Record<IPFamily, number>>>;

export interface EndpointsUpdateResult {
  /** Services whose endpoints were added, changed or removed since the last update. */
  readonly updatedServices: Set<ServiceKey>;
  readonly lastChangeTriggerTimes: Map<ServiceKey, Date[]>;
}

/**
 * Services merged between two young-generation collections: merging leaves garbage behind
 * (tens of MB for the 10,000 Services of a first sync), better collected as it comes.
 */
const SERVICES_PER_COLLECTION = 1000;

function sameEndpoint(a: EndpointInfo, b: EndpointInfo): boolean {
  if (a.ip !== b.ip || a.port !== b.port) return false;
  if (a.nodeName !== b.nodeName || a.zone !== b.zone || a.isLocal !== b.isLocal) return false;
  if (a.ready !== b.ready || a.serving !== b.serving || a.terminating !== b.terminating) return false;
  return sameSet(a.zoneHints, b.zoneHints) && sameSet(a.nodeHints, b.nodeHints);
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const v of a) if (!b.has(v)) return false;
  return true;
}

function samePort(a: PortEndpoints | undefined, b: PortEndpoints | undefined): boolean {
  if (!a || !b) return a === b;
  if (a.protocol !== b.protocol || a.endpoints.length !== b.endpoints.length) return false;
  return a.endpoints.every((e, i) => sameEndpoint(e, b.endpoints[i]!));
}

export class EndpointsMap implements EndpointsMapView {
  private readonly ports = new Map<string, PortEndpoints>();
  private readonly idsByService = new Map<ServiceKey, readonly string[]>();
  private readonly localReady = new Map<ServiceKey, LocalReadyCounts>();

  /** `knownIds`: the service ports, whose id strings the endpoints are then kept under. */
  update(tracker: EndpointsChangeTracker, knownIds?: KnownPortIds): EndpointsUpdateResult {
    const { slices, triggerTimes } = tracker.checkout();
    const result: EndpointsUpdateResult = {
      updatedServices: new Set(),
      lastChangeTriggerTimes: triggerTimes,
    };
    let merged = 0;
    for (const [key, applied] of slices) {
      if (++merged % SERVICES_PER_COLLECTION === 0) collectYoungGarbage();
      const slash = key.indexOf("/");
      const ctx = {
        namespace: key.slice(0, slash),
        service: key.slice(slash + 1),
        nodeName: tracker.nodeName,
        logger: tracker.logger,
        knownIds,
      };
      if (this.replace(key, mergeSlices(applied, ctx))) result.updatedServices.add(key);
    }
    return result;
  }

  /**
   * Service -> distinct IPs of ready endpoints on this node, per IP family (only Services with
   * some). Per family, because a dual-stack pod has one endpoint in each family's slice.
   */
  localReadyEndpoints(): ReadonlyMap<ServiceKey, LocalReadyCounts> {
    return this.localReady;
  }

  /** The protocol the slices gave the service port behind an id. */
  portName(id: string): { readonly protocol: Protocol } | undefined {
    return this.ports.get(id);
  }

  // Compares against what this map holds for the Service; returns whether anything differed.
  private replace(key: ServiceKey, current: Map<string, PortEndpoints>): boolean {
    let changed = false;
    for (const id of this.idsByService.get(key) ?? []) {
      if (current.has(id)) continue;
      changed = true;
      this.ports.delete(id);
    }
    for (const [id, cur] of current) {
      const old = this.ports.get(id);
      if (samePort(old, cur)) continue;
      changed = true;
      this.ports.set(id, cur);
    }
    if (current.size > 0) this.idsByService.set(key, [...current.keys()]);
    else this.idsByService.delete(key);
    if (changed) this.countLocalReady(key, current);
    return changed;
  }

  // Distinct IPs, not ip:port pairs: one pod serving two ports is one endpoint to the health check.
  private countLocalReady(key: ServiceKey, current: Map<string, PortEndpoints>): void {
    const ips: Record<IPFamily, Set<string>> = { IPv4: new Set(), IPv6: new Set() };
    for (const p of current.values()) {
      for (const e of p.endpoints) if (e.ready && e.isLocal) ips[e.family].add(e.ip);
    }
    const counts: Partial<Record<IPFamily, number>> = {};
    for (const family of ["IPv4", "IPv6"] as const)
      if (ips[family].size > 0) counts[family] = ips[family].size;
    if (Object.keys(counts).length > 0) this.localReady.set(key, counts);
    else this.localReady.delete(key);
  }

  // ReadonlyMap<id, EndpointInfo[]>, the shape the proxiers read.
  get size(): number {
    return this.ports.size;
  }
  get(id: string): readonly EndpointInfo[] | undefined {
    return this.ports.get(id)?.endpoints;
  }
  has(id: string): boolean {
    return this.ports.has(id);
  }
  keys(): MapIterator<string> {
    return this.ports.keys();
  }
  *values(): MapIterator<readonly EndpointInfo[]> {
    for (const p of this.ports.values()) yield p.endpoints;
  }
  *entries(): MapIterator<[string, readonly EndpointInfo[]]> {
    for (const [id, p] of this.ports) yield [id, p.endpoints];
  }
  [Symbol.iterator](): MapIterator<[string, readonly EndpointInfo[]]> {
    return this.entries();
  }
  forEach(
    fn: (
      value: readonly EndpointInfo[],
      key: string,
      map: ReadonlyMap<string, readonly EndpointInfo[]>,
    ) => void,
  ): void {
    for (const [id, p] of this.ports) fn(p.endpoints, id, this);
  }
}
