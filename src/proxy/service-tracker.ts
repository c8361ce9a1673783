// Collects Service changes between syncs. Per Service it keeps the fingerprint of the state the
// service map last took ("previous") and the newest state ("current"); when they become equal
// again (add then delete, update and back) the Service drops out, so a sync only touches what
// really changed. Only the current object is read: the previous state is the tracker's own
// record, so an update of a 100,000-port Service is read once, not twice, and a resync (the same
// object handed back) is not read at all.

import { DEFAULT_FEATURE_GATES, type EffectiveFeatureGates } from "../config/feature-gates.ts";
import { type EventRecorder, nullRecorder } from "../k8s/events.ts";
import type { ServiceObject } from "../k8s/objects.ts";
import { validServiceName } from "../k8s/validation.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import type { ChangeMetrics } from "./change-metrics.ts";
import { guarded, reportedObjectName } from "./guard.ts";
import { ProblemList, ProblemReporter } from "./problems.ts";
import { servicePorts, servicePortsFingerprint } from "./service-port.ts";
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

export interface ServiceTrackerOptions {
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  /** The run's feature gates (LoadBalancerIPMode); the v1.31 defaults when absent. */
  readonly featureGates?: EffectiveFeatureGates;
  /** kubeproxy_sync_proxy_rules_service_changes_{total,pending}. */
  readonly metrics?: ChangeMetrics;
}

export class ServiceChangeTracker {
  private items = new Map<ServiceKey, ServiceChange>();
  /** Each Service's fingerprint as the last checkout handed it to the map (none: no ports). */
  private readonly taken = new Map<ServiceKey, string>();
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
    const out = this.items;
    this.items = new Map();
    for (const [key, change] of out) {
      if (change.current.fingerprint === "") this.taken.delete(key);
      else this.taken.set(key, change.current.fingerprint);
    }
    this.metrics?.pending.set(0);
    return out;
  }

  private record(previous: ServiceObject | undefined, current: ServiceObject | undefined): boolean {
    const obj = current ?? previous;
    if (!obj) return false;
    // A name the API server would refuse (a `/`, a newline, 300 characters) is skipped and told:
    // it would otherwise reach keys, chain names and comments.
    const id = reportedObjectName("Service", obj.metadata, validServiceName, this.reporter, !current);
    if (!id) return false;
    const key = serviceKey(id.namespace, id.name);
    const problems = new ProblemList({ kind: "Service", ...id, uid: obj.metadata?.uid });
    const next = current ? toState(current, id.namespace, id.name, problems, this.gates) : EMPTY;
    if (current) this.reporter.report(key, problems);
    else this.reporter.forget(key);

    const item = this.items.get(key);
    const before = item ? item.current.fingerprint : undefined;
    if (item) item.current = next;
    else this.items.set(key, { previous: this.taken.get(key) ?? "", current: next });
    const change = this.items.get(key)!;
    const settled = change.previous === change.current.fingerprint;
    if (settled) this.items.delete(key);
    const after = settled ? undefined : next.fingerprint;
    if (before !== after)
      this.logger.v(4).info("Service updated ports", { service: key, portCount: next.ports.length });
    return before !== after;
  }
}

function toState(
  svc: ServiceObject,
  ns: string,
  name: string,
  problems: ProblemList,
  gates: EffectiveFeatureGates,
): ServiceState {
  const ports = servicePorts(svc, ns, name, problems, gates);
  return ports.length === 0 ? EMPTY : { ports, fingerprint: servicePortsFingerprint(ports) };
}
