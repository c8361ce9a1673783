// Collects EndpointSlice changes between syncs, per Service, and the trigger times behind them
// (for the network-programming-latency metric). Both address families are tracked together;
// every endpoint carries its family and each per-family proxier takes its own.

import { type EventRecorder, nullRecorder } from "../k8s/events.ts";
import type { EndpointSliceObject } from "../k8s/objects.ts";
import { shownText, shownValue, validEndpointSliceName, validServiceNameLabel } from "../k8s/validation.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import type { IPFamily } from "../util/net/family.ts";
import type { ChangeMetrics } from "./change-metrics.ts";
import {
  type ParsedSlice,
  parseSlice,
  parseTriggerTime,
  SERVICE_NAME_LABEL,
  TRIGGER_TIME_ANNOTATION,
} from "./endpoint-slice.ts";
import { EndpointSliceCache } from "./endpoint-slice-cache.ts";
import { guarded, reportedObjectName, uidOf } from "./guard.ts";
import { ProblemList, ProblemReporter } from "./problems.ts";
import { type ServiceKey, serviceKey } from "./types.ts";

export interface EndpointsTrackerOptions {
  /** This node's name: endpoints whose nodeName equals it are local. */
  readonly nodeName: string;
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  /** Clock for the tracker's start time (trigger times before it are not reported). */
  readonly now?: () => Date;
  /** kubeproxy_sync_proxy_rules_endpoint_changes_{total,pending}. */
  readonly metrics?: ChangeMetrics;
}

export interface EndpointsCheckout {
  readonly slices: Map<ServiceKey, ReadonlyMap<string, ParsedSlice>>;
  readonly triggerTimes: Map<ServiceKey, Date[]>;
}

interface SliceKeys {
  readonly key: ServiceKey;
  readonly namespace: string;
  readonly service: string;
  readonly sliceName: string;
}

/** The slice's family; undefined for FQDN and anything else (never an inherited property). */
function familyOf(addressType: unknown): IPFamily | undefined {
  return addressType === "IPv4" || addressType === "IPv6" ? addressType : undefined;
}

export class EndpointsChangeTracker {
  readonly nodeName: string;
  readonly logger: Logger;
  private readonly cache = new EndpointSliceCache();
  private triggerTimes = new Map<ServiceKey, Date[]>();
  private readonly startTime: number;
  private readonly reporter: ProblemReporter;
  private readonly metrics: ChangeMetrics | undefined;

  constructor(opts: EndpointsTrackerOptions) {
    this.nodeName = opts.nodeName;
    this.metrics = opts.metrics;
    this.logger = opts.logger ?? nullLogger;
    this.startTime = (opts.now ?? (() => new Date()))().getTime();
    this.reporter = new ProblemReporter(this.logger, opts.recorder ?? nullRecorder, "GatherEndpoints");
  }

  /** Records an added/updated slice, or a deleted one (removed). True when pending state changed. */
  endpointSliceChanged(slice: EndpointSliceObject, removed: boolean): boolean {
    return guarded(this.logger, "endpointSliceChanged", false, () => this.record(slice, removed));
  }

  /** Services whose endpoints have changes waiting for the next update. */
  pendingChanges(): Set<ServiceKey> {
    return this.cache.pendingServices();
  }

  /** Every slice the tracker holds, pending changes applied over the synced ones (/debug/state). */
  latestSlices(): Generator<{ service: ServiceKey; name: string; slice: ParsedSlice }> {
    return this.cache.latestSlices();
  }

  /** Applies pending slices and hands out what changed, with the trigger times collected. */
  checkout(): EndpointsCheckout {
    const triggerTimes = this.triggerTimes;
    this.triggerTimes = new Map();
    this.metrics?.pending.set(0);
    return { slices: this.cache.checkout(), triggerTimes };
  }

  private keysOf(slice: EndpointSliceObject, removed: boolean): SliceKeys | undefined {
    const meta = slice?.metadata;
    const id = reportedObjectName("EndpointSlice", meta, validEndpointSliceName, this.reporter, removed);
    if (!id) return undefined;
    const labels: unknown = meta?.labels;
    const service =
      typeof labels === "object" && labels !== null && Object.hasOwn(labels, SERVICE_NAME_LABEL)
        ? (labels as Record<string, unknown>)[SERVICE_NAME_LABEL]
        : undefined;
    if (service === undefined || service === null || service === "") {
      this.logger.v(4).info("Ignoring EndpointSlice without a service-name label", {
        endpointSlice: `${id.namespace}/${id.name}`,
      });
      return undefined;
    }
    const problem = validServiceNameLabel(service);
    if (problem) {
      this.reportBadServiceLabel(id, slice, service, problem, removed);
      return undefined;
    }
    const name = service as string;
    return {
      key: serviceKey(id.namespace, name),
      namespace: id.namespace,
      service: name,
      sliceName: id.name,
    };
  }

  // The label names the Service whose endpoints these are: one that no Service could have would
  // file them under a key that is not a Service's, so the slice is skipped.
  private reportBadServiceLabel(
    id: { namespace: string; name: string },
    slice: EndpointSliceObject,
    value: unknown,
    problem: string,
    removed: boolean,
  ): void {
    const reportKey = `${id.namespace}/${id.name}`;
    if (removed) {
      this.reporter.forget(reportKey);
      return;
    }
    const problems = new ProblemList({ kind: "EndpointSlice", ...id, uid: uidOf(slice.metadata) });
    problems.invalid(
      `metadata.labels["${SERVICE_NAME_LABEL}"]`,
      shownValue(value),
      `${problem}; EndpointSlice ignored`,
    );
    this.reporter.report(reportKey, problems);
  }

  private record(slice: EndpointSliceObject, removed: boolean): boolean {
    const family = familyOf(slice?.addressType);
    if (!family) {
      this.logger.v(4).info("EndpointSlice address type not supported by kube-proxy", {
        addressType: shownText(slice?.addressType),
      });
      return false;
    }
    const keys = this.keysOf(slice, removed);
    if (!keys) return false;
    // As upstream: every slice of a supported family with usable keys counts as a change seen;
    // pending grows by one for each that alters what the next sync applies.
    this.metrics?.total.inc();
    const reportKey = `${keys.namespace}/${keys.sliceName}`;
    let parsed: ParsedSlice | null = null;
    if (removed) this.reporter.forget(reportKey);
    else {
      const problems = new ProblemList({
        kind: "EndpointSlice",
        namespace: keys.namespace,
        name: keys.sliceName,
        uid: uidOf(slice.metadata),
      });
      parsed = parseSlice(slice, {
        family,
        problems,
        serviceRef: { kind: "Service", namespace: keys.namespace, name: keys.service },
        nodeName: this.nodeName,
      });
      this.reporter.report(reportKey, problems);
    }
    const changed = this.cache.setPending(keys.key, keys.sliceName, parsed);
    if (changed) {
      this.metrics?.pending.inc();
      this.noteTriggerTime(keys.key, slice, removed);
    }
    return changed;
  }

  // A deleted slice's annotation dates from its last update, not the deletion, so removals
  // clear the Service's times rather than report a misleading latency (as upstream does).
  private noteTriggerTime(key: ServiceKey, slice: EndpointSliceObject, removed: boolean): void {
    if (removed) {
      this.triggerTimes.delete(key);
      return;
    }
    const raw = slice.metadata?.annotations?.[TRIGGER_TIME_ANNOTATION];
    if (raw === undefined) return;
    const t = parseTriggerTime(raw);
    if (!t) {
      this.logger.warn("Error while parsing EndpointsLastChangeTriggerTimeAnnotation", {
        value: shownText(raw),
      });
      return;
    }
    if (t.getTime() <= this.startTime) return;
    const list = this.triggerTimes.get(key);
    if (list) list.push(t);
    else this.triggerTimes.set(key, [t]);
  }
}
