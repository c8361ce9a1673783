// The applied endpoints per service port, updated from an EndpointsChangeTracker once per sync.
// Besides the endpoints, an update reports what the conntrack cleanup needs for UDP (endpoints
// traffic may still be pinned to, and services that just got their first endpoint) and keeps
// the per-Service count of local ready endpoints for the health check servers.

import { collectYoungGarbage } from "../runtime.ts";
import type { IPFamily } from "../util/net/family.ts";
import type { Protocol } from "../util/net/protocol.ts";
import { ITEMS_PER_STEP, runSteps, type Steps } from "../util/time-slice.ts";
import { type KnownPortIds, mergeSlices, type PortEndpoints } from "./endpoint-slice-cache.ts";
import type { EndpointsChangeTracker } from "./endpoints-tracker.ts";
import { ServiceEndpoints } from "./service-endpoints.ts";
import {
  type EndpointInfo,
  type EndpointsMap as EndpointsMapView,
  type ServiceKey,
  serviceKeyOfPortId,
} from "./types.ts";

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

function samePort(a: ServiceEndpoints, i: number, b: PortEndpoints): boolean {
  const endpoints = a.endpointsAt(i);
  if (a.protocolAt(i) !== b.protocol || endpoints.length !== b.endpoints.length) return false;
  return endpoints.every((e, j) => sameEndpoint(e, b.endpoints[j]!));
}

/** What portName answers: one record per protocol, not one per port. */
const PROTOCOLS: Readonly<Record<Protocol, { readonly protocol: Protocol }>> = {
  TCP: { protocol: "TCP" },
  UDP: { protocol: "UDP" },
  SCTP: { protocol: "SCTP" },
};

export class EndpointsMap implements EndpointsMapView {
  /** The ports of each Service with endpoints: found by the Service key their ids start with. */
  private readonly services = new Map<ServiceKey, ServiceEndpoints>();
  private count = 0;
  private readonly localReady = new Map<ServiceKey, LocalReadyCounts>();

  /**
   * Applies the tracker's pending changes at once. `knownIds`: the service ports, whose id
   * strings the endpoints are then kept under.
   */
  update(tracker: EndpointsChangeTracker, knownIds?: KnownPortIds): EndpointsUpdateResult {
    return runSteps(this.updating(tracker, knownIds));
  }

  /**
   * update() in steps (a pause may come after any port of a Service being merged); a Service's
   * endpoints are replaced whole, between two steps.
   */
  *updating(tracker: EndpointsChangeTracker, knownIds?: KnownPortIds): Steps<EndpointsUpdateResult> {
    const { slices, triggerTimes } = tracker.checkout();
    const result: EndpointsUpdateResult = {
      updatedServices: new Set(),
      lastChangeTriggerTimes: triggerTimes,
    };
    let servicesMerged = 0;
    for (const [key, applied] of slices) {
      if (++servicesMerged % SERVICES_PER_COLLECTION === 0) collectYoungGarbage();
      const slash = key.indexOf("/");
      const ctx = {
        namespace: key.slice(0, slash),
        service: key.slice(slash + 1),
        nodeName: tracker.nodeName,
        logger: tracker.logger,
        knownIds,
      };
      const merged = yield* mergeSlices(applied, ctx);
      if (yield* this.replace(key, merged)) result.updatedServices.add(key);
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
    const service = this.services.get(serviceKeyOfPortId(id));
    const i = service ? service.indexOf(id) : -1;
    return i < 0 ? undefined : PROTOCOLS[service!.protocolAt(i)];
  }

  /**
   * Compares against what this map holds for the Service; returns whether anything differed.
   * An unchanged port keeps its endpoint list (proxiers tell unchanged ports by identity).
   */
  private *replace(key: ServiceKey, current: Map<string, PortEndpoints>): Steps<boolean> {
    const old = this.services.get(key);
    let changed = (old?.size ?? 0) !== current.size;
    const ids = [...current.keys()].sort();
    const protocols: Protocol[] = [];
    const lists: (readonly EndpointInfo[])[] = [];
    let items = 0;
    for (const id of ids) {
      if (++items % ITEMS_PER_STEP === 0) yield;
      const cur = current.get(id)!;
      const i = old ? old.indexOf(id) : -1;
      if (i >= 0 && samePort(old!, i, cur)) {
        protocols.push(old!.protocolAt(i));
        lists.push(old!.endpointsAt(i));
      } else {
        changed = true;
        protocols.push(cur.protocol);
        lists.push(cur.endpoints);
      }
    }
    // Same size and every port found unchanged: no port of the old ones is missing either.
    if (!changed) return false;
    this.count += current.size - (old?.size ?? 0);
    if (current.size > 0) this.services.set(key, new ServiceEndpoints(ids, protocols, lists));
    else this.services.delete(key);
    this.countLocalReady(key, current);
    return true;
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
    return this.count;
  }
  get(id: string): readonly EndpointInfo[] | undefined {
    const service = this.services.get(serviceKeyOfPortId(id));
    const i = service ? service.indexOf(id) : -1;
    return i < 0 ? undefined : service!.endpointsAt(i);
  }
  has(id: string): boolean {
    return this.get(id) !== undefined;
  }
  *keys(): MapIterator<string> {
    for (const s of this.services.values()) yield* s.ids;
  }
  *values(): MapIterator<readonly EndpointInfo[]> {
    for (const s of this.services.values()) for (let i = 0; i < s.size; i++) yield s.endpointsAt(i);
  }
  *entries(): MapIterator<[string, readonly EndpointInfo[]]> {
    for (const s of this.services.values())
      for (let i = 0; i < s.size; i++) yield [s.ids[i]!, s.endpointsAt(i)];
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
    for (const [id, endpoints] of this.entries()) fn(endpoints, id, this);
  }
}
