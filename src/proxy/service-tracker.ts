// Collects Service changes between syncs. Per Service it keeps the fingerprint of the state the
// service map last took ("previous") and the newest state ("current"); when they become equal
// again (add then delete, update and back) the Service drops out, so a sync only touches what
// really changed. Only the current object is read: the previous state is the tracker's own
// record, so an update of a 100,000-port Service is read once, not twice, and a resync (the same
// object handed back) is not read at all. A Service with long lists is not even read when its
// event comes (that is one uninterrupted block of ~300 ms at 100,000 ports): it waits, unread, for
// the sync's checkout, which reads it in steps the servers can answer between.

import { DEFAULT_FEATURE_GATES, type EffectiveFeatureGates } from "../config/feature-gates.ts";
import { type EventRecorder, nullRecorder } from "../k8s/events.ts";
import type { ServiceObject } from "../k8s/objects.ts";
import { validServiceName } from "../k8s/validation.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import { runSteps, type Steps } from "../util/time-slice.ts";
import type { ChangeMetrics } from "./change-metrics.ts";
import { guarded, reportedObjectName } from "./guard.ts";
import { ProblemList, ProblemReporter } from "./problems.ts";
import { fingerprintPorts, readServicePorts } from "./service-port.ts";
import { type ServiceKey, type ServicePortInfo, serviceKey } from "./types.ts";

/** The service ports of one Service, with a fingerprint for cheap equality. */
export interface ServiceState {
  readonly ports: readonly ServicePortInfo[];
  readonly fingerprint: string;
}

export interface ServiceChange {
  /** The fingerprint of what the service map holds for the Service ("" for nothing). */
  readonly previous: string;
  current: ServiceState;
}

const EMPTY: ServiceState = { ports: [], fingerprint: "" };

/** A Service recorded as it came, to be read at checkout. */
interface UnreadService {
  readonly unread: ServiceObject;
  readonly namespace: string;
  readonly name: string;
}

/** A change as recorded between checkouts: read, or (a Service with long lists) not yet. */
interface PendingChange {
  readonly previous: string;
  current: ServiceState | UnreadService;
}

/**
 * Entries of a Service's lists (ports, externalIPs, source ranges, LoadBalancer ingress) above
 * which it is read at checkout rather than when its event comes: a few ms of reading at most.
 */
export const ENTRIES_READ_AT_CHECKOUT = 2048;

/** Never a fingerprint: what an unread Service, or one being read, is compared as. */
const NOT_YET_READ = "\0unread";

function lengthOf(list: unknown): number {
  return Array.isArray(list) ? list.length : 0;
}

/** The entries of the lists a user sizes; the count alone, nothing is read. */
function listEntries(svc: ServiceObject): number {
  const spec = svc.spec;
  if (!spec) return 0;
  return (
    lengthOf(spec.ports) +
    lengthOf(spec.externalIPs) +
    lengthOf(spec.loadBalancerSourceRanges) +
    lengthOf(svc.status?.loadBalancer?.ingress)
  );
}

export interface ServiceTrackerOptions {
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  /** The run's feature gates (LoadBalancerIPMode); the v1.31 defaults when absent. */
  readonly featureGates?: EffectiveFeatureGates;
  /** kubeproxy_sync_proxy_rules_service_changes_{total,pending}. */
  readonly metrics?: ChangeMetrics;
}

export class ServiceChangeTracker {
  private items = new Map<ServiceKey, PendingChange>();
  /** Each Service's fingerprint as the last checkout handed it to the map (none: no ports). */
  private readonly taken = new Map<ServiceKey, string>();
  /**
   * Services a checkout in progress hands over: their `taken` is not known until it ends, so a
   * change recorded meanwhile is compared with nothing and always applied.
   */
  private readonly handing = new Set<ServiceKey>();
  private readonly logger: Logger;
  private readonly reporter: ProblemReporter;
  private readonly gates: EffectiveFeatureGates;
  private readonly metrics: ChangeMetrics | undefined;

  constructor(opts: ServiceTrackerOptions = {}) {
    this.logger = opts.logger ?? nullLogger;
    this.gates = opts.featureGates ?? DEFAULT_FEATURE_GATES;
    this.metrics = opts.metrics;
    this.reporter = new ProblemReporter(this.logger, opts.recorder ?? nullRecorder, "ParseService");
  }

  /**
   * Records an add (no previous), update, or delete (no current). Returns true when this call
   * changed what the next update() will apply.
   */
  serviceChanged(previous?: ServiceObject, current?: ServiceObject): boolean {
    if (!previous && !current) return false;
    // As upstream: every call with an object counts, whether or not it changes anything, and
    // pending is the number of Services waiting after it.
    this.metrics?.total.inc();
    try {
      // The informer's resync hands back the very object it delivered last: already recorded.
      if (previous === current) return false;
      return guarded(this.logger, "serviceChanged", false, () => this.record(previous, current));
    } finally {
      this.metrics?.pending.set(this.items.size);
    }
  }

  /** Services with changes waiting for the next update (for partial syncs). */
  pendingChanges(): Set<ServiceKey> {
    return new Set(this.items.keys());
  }

  /** Hands the pending changes to a ServiceMap and starts a new window. */
  checkout(): Map<ServiceKey, ServiceChange> {
    return runSteps(this.checkingOut());
  }

  /**
   * checkout() in steps: the Services left unread are read here, a pause possible between any
   * two of their entries. Changes recorded during a pause wait for the next checkout.
   */
  *checkingOut(): Steps<Map<ServiceKey, ServiceChange>> {
    const pending = this.items;
    this.items = new Map();
    this.metrics?.pending.set(0);
    for (const key of pending.keys()) this.handing.add(key);
    const out = new Map<ServiceKey, ServiceChange>();
    for (const [key, change] of pending) {
      const current = "unread" in change.current ? yield* this.read(key, change.current) : change.current;
      // An update that changed none of the ports (an annotation, the status) is no change; a
      // Service that could not be read keeps what the map holds.
      if (current && current.fingerprint !== change.previous)
        out.set(key, { previous: change.previous, current });
    }
    for (const [key, change] of out) {
      if (change.current.fingerprint === "") this.taken.delete(key);
      else this.taken.set(key, change.current.fingerprint);
    }
    this.handing.clear();
    return out;
  }

  /** Reads a Service left unread; undefined on a fault, logged as record's guard logs one. */
  private *read(key: ServiceKey, u: UnreadService): Steps<ServiceState | undefined> {
    const problems = new ProblemList({
      kind: "Service",
      namespace: u.namespace,
      name: u.name,
      uid: u.unread.metadata?.uid,
    });
    let state: ServiceState;
    try {
      state = yield* readState(u.unread, u.namespace, u.name, problems, this.gates);
    } catch (err) {
      this.logger.error("Unexpected error reading a Service at checkout; change ignored", {
        service: key,
        err: err instanceof Error ? err : String(err),
      });
      return undefined;
    }
    this.reporter.report(key, problems);
    this.logger.v(4).info("Service updated ports", { service: key, portCount: state.ports.length });
    return state;
  }

  /** What the map holds for `key`, as a fingerprint; unknown while a checkout hands it over. */
  private previousOf(key: ServiceKey): string {
    return this.handing.has(key) ? NOT_YET_READ : (this.taken.get(key) ?? "");
  }

  private record(previous: ServiceObject | undefined, current: ServiceObject | undefined): boolean {
    const obj = current ?? previous;
    if (!obj) return false;
    // A name the API server would refuse (a `/`, a newline, 300 characters) is skipped and told:
    // it would otherwise reach keys, chain names and comments.
    const id = reportedObjectName("Service", obj.metadata, validServiceName, this.reporter, !current);
    if (!id) return false;
    const key = serviceKey(id.namespace, id.name);
    const item = this.items.get(key);
    const before = item ? fingerprintOf(item.current) : undefined;
    if (current && listEntries(current) > ENTRIES_READ_AT_CHECKOUT) {
      const unread: UnreadService = { unread: current, namespace: id.namespace, name: id.name };
      if (item) item.current = unread;
      else this.items.set(key, { previous: this.previousOf(key), current: unread });
      return true;
    }
    const problems = new ProblemList({ kind: "Service", ...id, uid: obj.metadata?.uid });
    const next = current ? runSteps(readState(current, id.namespace, id.name, problems, this.gates)) : EMPTY;
    if (current) this.reporter.report(key, problems);
    else this.reporter.forget(key);

    if (item) item.current = next;
    else this.items.set(key, { previous: this.previousOf(key), current: next });
    const settled = this.items.get(key)!.previous === next.fingerprint;
    if (settled) this.items.delete(key);
    const after = settled ? undefined : next.fingerprint;
    if (before !== after)
      this.logger.v(4).info("Service updated ports", { service: key, portCount: next.ports.length });
    return before !== after;
  }
}

function fingerprintOf(current: ServiceState | UnreadService): string {
  return "unread" in current ? NOT_YET_READ : current.fingerprint;
}

function* readState(
  svc: ServiceObject,
  ns: string,
  name: string,
  problems: ProblemList,
  gates: EffectiveFeatureGates,
): Steps<ServiceState> {
  const ports = yield* readServicePorts(svc, ns, name, problems, gates);
  return ports.length === 0 ? EMPTY : { ports, fingerprint: yield* fingerprintPorts(ports) };
}
