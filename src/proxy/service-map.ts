// The applied service ports, updated from a ServiceChangeTracker once per sync. Only the
// Services the tracker reports are touched, so a one-Service change costs one Service of work
// (plus the Services that share an external address with it: see address-claims.ts).

import { type EventRecorder, nullRecorder } from "../k8s/events.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import { StringMap } from "../util/string-map.ts";
import { ITEMS_PER_STEP, runSteps, type Steps } from "../util/time-slice.ts";
import { AddressClaims, type AddressConflict } from "./address-claims.ts";
import { ProblemList, ProblemReporter } from "./problems.ts";
import type { ServiceChangeTracker } from "./service-tracker.ts";
import type { ServiceKey, ServicePortInfo, ServicePortMap } from "./types.ts";

/** Event reason on a Service that loses an external or LoadBalancer IP to another Service. */
export const REASON_ADDRESS_CONFLICT = "KubeProxyAddressConflict";

export interface ServiceUpdateResult {
  /** Services added, changed or deleted since the last update. */
  readonly updatedServices: Set<ServiceKey>;
  /** Cluster IPs (both families) of UDP service ports that are gone: their conntrack entries are stale. */
  readonly deletedUDPClusterIPs: Set<string>;
}

export interface ServiceMapOptions {
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
}

export class ServiceMap implements ServicePortMap {
  /** By id: a StringMap, as there is an entry per service port (a Map's costs ~68 bytes). */
  private readonly ports = new StringMap<ServicePortInfo>();
  private readonly idsByService = new Map<ServiceKey, readonly string[]>();
  private readonly healthCheckPorts = new Map<ServiceKey, number>();
  /** The ports as the tracker read them, before address claims are resolved. */
  private readonly wanted = new Map<ServiceKey, readonly ServicePortInfo[]>();
  private readonly claims = new AddressClaims();
  private readonly reporter: ProblemReporter;

  constructor(opts: ServiceMapOptions = {}) {
    this.reporter = new ProblemReporter(
      opts.logger ?? nullLogger,
      opts.recorder ?? nullRecorder,
      "ResolveAddressConflict",
    );
  }

  /** Applies the tracker's pending changes at once. */
  update(tracker: ServiceChangeTracker): ServiceUpdateResult {
    return runSteps(this.updating(tracker));
  }

  /**
   * update() in steps, so that a sync can let the servers answer during a Service of 100,000
   * ports: a pause may come between any two ports. Between pauses the map holds every port it lists
   * (a Service's old and new ports, while it is replaced); only the sync reads it meanwhile.
   */
  *updating(tracker: ServiceChangeTracker): Steps<ServiceUpdateResult> {
    const result: ServiceUpdateResult = { updatedServices: new Set(), deletedUDPClusterIPs: new Set() };
    const touched = new Set<string>();
    for (const [key, change] of yield* tracker.checkingOut()) {
      result.updatedServices.add(key);
      yield* this.claims.index(key, this.wanted.get(key) ?? [], touched, true);
      const ports = change.current.ports;
      if (ports.length > 0) this.wanted.set(key, ports);
      else this.wanted.delete(key);
      yield* this.claims.index(key, ports, touched);
    }
    // A change can hand an address to (or take it from) a Service that did not change itself.
    const others = new Set<ServiceKey>();
    this.claims.claimantsOf(touched, others);
    for (const key of result.updatedServices) yield* this.apply(key, result.deletedUDPClusterIPs, true);
    for (const key of others) {
      if (result.updatedServices.has(key)) continue;
      if (yield* this.apply(key, result.deletedUDPClusterIPs, false)) result.updatedServices.add(key);
    }
    return result;
  }

  /**
   * Resolves one Service's claims and installs its ports; true when what it programs changed.
   * A Service that did not change itself keeps its port objects unless its addresses did:
   * proxiers tell unchanged ports by identity.
   */
  private *apply(key: ServiceKey, deletedUDP: Set<string>, updated: boolean): Steps<boolean> {
    const wanted = this.wanted.get(key) ?? [];
    const { ports, conflicts } = yield* this.claims.resolve(key, wanted);
    this.reportConflicts(key, wanted[0], conflicts);
    const before = this.portIdsOf(key);
    let changed = before.length !== ports.length;
    for (let i = 0; !changed && i < ports.length; i++) {
      if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
      changed = !sameAddresses(this.ports.get(before[i]!)!, ports[i]!);
    }
    if (updated || changed) yield* this.replace(key, ports, deletedUDP);
    return changed;
  }

  private reportConflicts(
    key: ServiceKey,
    sample: ServicePortInfo | undefined,
    conflicts: readonly AddressConflict[],
  ): void {
    if (!sample) {
      this.reporter.forget(key);
      return;
    }
    const problems = new ProblemList({
      kind: "Service",
      namespace: sample.name.namespace,
      name: sample.name.name,
    });
    for (const c of conflicts) {
      const why = c.clusterIPOf
        ? `is the ClusterIP of Service ${c.clusterIPOf}`
        : `on ${c.port}/${c.protocol} is held by the older Service ${c.winner}`;
      problems.add({
        ref: problems.ref,
        field: c.field,
        value: c.ip,
        detail: `${why}; not programmed for this Service`,
        eventReason: REASON_ADDRESS_CONFLICT,
      });
    }
    this.reporter.report(key, problems);
  }

  /** Service -> healthCheckNodePort, for LoadBalancers with externalTrafficPolicy Local. */
  healthCheckNodePorts(): ReadonlyMap<ServiceKey, number> {
    return this.healthCheckPorts;
  }

  /** The ports of one Service (empty when it has none). */
  portsOf(key: ServiceKey): ServicePortInfo[] {
    return (this.idsByService.get(key) ?? []).map((id) => this.ports.get(id)!);
  }

  /** The ids of one Service's ports, as held (no copy: read it before the map changes). */
  portIdsOf(key: ServiceKey): readonly string[] {
    return this.idsByService.get(key) ?? [];
  }

  // Removal is computed against what this map holds, not the tracker's "previous", so the
  // map can never keep a port the tracker forgot about. New ports go in before the Service's
  // list of ids changes, old ones out after: whenever it pauses, every id listed is held.
  private *replace(
    key: ServiceKey,
    current: readonly ServicePortInfo[],
    deletedUDP: Set<string>,
  ): Steps<void> {
    const keep = new Set<string>();
    let items = 0;
    for (const p of current) {
      if (++items % ITEMS_PER_STEP === 0) yield;
      keep.add(p.id);
      this.ports.set(p.id, p);
    }
    const previous = this.idsByService.get(key) ?? [];
    if (current.length > 0) this.idsByService.set(key, [...keep]);
    else this.idsByService.delete(key);
    for (const id of previous) {
      if (++items % ITEMS_PER_STEP === 0) yield;
      if (keep.has(id)) continue;
      const old = this.ports.get(id);
      if (old?.protocol === "UDP") for (const ip of Object.values(old.clusterIPs)) if (ip) deletedUDP.add(ip);
      this.ports.delete(id);
    }
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

/** Same port with the same external and LoadBalancer IPs (what claim resolution can change). */
function sameAddresses(a: ServicePortInfo, b: ServicePortInfo): boolean {
  if (a === b) return true;
  if (a.id !== b.id) return false;
  return sameList(a.externalIPs, b.externalIPs) && sameList(a.loadBalancerVIPs, b.loadBalancerVIPs);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
