// UDP has no teardown, so conntrack keeps sending datagrams where an old entry says: to an
// endpoint that is gone, or nowhere when the entry was made before the Service's rules existed.
// After each successful sync this reconciles the whole UDP table of one family against the
// desired state, as upstream's conntrack reconciler does (1.32+, target ports since 1.34, Services
// without endpoints since 1.37): a flow to a Service frontend (ClusterIP, externalIP or
// LoadBalancer IP and port, or any address and the NodePort) whose reply does not come from one
// of that port's serving endpoints is deleted. A missed event or a failed delete is therefore
// made good by the next sync. Beyond upstream, flows to the ClusterIP of a UDP Service deleted
// since the last sync go too (upstream lets them time out, still DNATed to the old endpoints).
// Failures are logged, never thrown: the rules are already in place.

import type { ConntrackClient, ConntrackFlowEntry, FlowFilter } from "../host/conntrack/types.ts";
import type { Logger } from "../log/logger.ts";
import type { Clock } from "../util/clock.ts";
import { errText } from "../util/err-text.ts";
import { familyOf, type IPFamily } from "../util/net/family.ts";
import { ITEMS_PER_STEP, runSteps, type Steps } from "../util/time-slice.ts";
import type { Metrics } from "./metrics/metrics.ts";
import type { EndpointInfo, EndpointsMap as EndpointsMapView, ServicePortMap } from "./types.ts";

/** What the reconciler needs of the host (the client, or the dry-run recorder behind it). */
export type ConntrackCleaner = Pick<ConntrackClient, "listFlows" | "deleteFlows">;

/**
 * A port's serving endpoints ("ip|port"): the one key itself when there is one (most ports:
 * a Set each would cost a few hundred bytes per UDP port of a big Service), else a set.
 */
export type ServingEndpoints = string | ReadonlySet<string>;

/** Serving endpoints by UDP frontend ("ip|port") and by UDP NodePort. */
export interface UDPDesiredState {
  readonly frontends: ReadonlyMap<string, ServingEndpoints>;
  readonly nodePorts: ReadonlyMap<number, ServingEndpoints>;
  /** ClusterIPs of UDP Services deleted since the last sync: every flow to them is stale. */
  readonly deletedIPs: ReadonlySet<string>;
}

const key = (ip: string, port: number) => `${ip}|${port}`;

/** The one set of ports without serving endpoints. */
const NONE_SERVING: ReadonlySet<string> = new Set<string>();

function serves(serving: ServingEndpoints, reply: string): boolean {
  return typeof serving === "string" ? serving === reply : serving.has(reply);
}

/** The serving endpoints of one port, this family's. */
function servingOf(eps: Iterable<EndpointInfo>, family: IPFamily): ServingEndpoints {
  let one: string | undefined;
  let many: Set<string> | undefined;
  for (const ep of eps) {
    if (!ep.serving || ep.family !== family) continue;
    const k = key(ep.ip, ep.port);
    if (many) many.add(k);
    else if (one === undefined) one = k;
    else if (one !== k) many = new Set([one, k]);
  }
  return many ?? one ?? NONE_SERVING;
}

/**
 * The desired state of one family: every UDP service port, its serving endpoints (ready or
 * terminating: traffic policy and topology are deliberately ignored, as for TCP), an empty set for
 * a port without any. Linear in services plus endpoints.
 */
export function desiredUDPState(
  services: ServicePortMap,
  endpoints: EndpointsMapView,
  family: IPFamily,
  deletedClusterIPs: Iterable<string> = [],
): UDPDesiredState {
  return runSteps(desiringUDPState(services, endpoints, family, deletedClusterIPs));
}

/**
 * desiredUDPState in steps (a Service may have 100,000 ports). The maps must not change until it
 * ends: the sync that owns them runs it before it returns.
 */
export function* desiringUDPState(
  services: ServicePortMap,
  endpoints: EndpointsMapView,
  family: IPFamily,
  deletedClusterIPs: Iterable<string> = [],
): Steps<UDPDesiredState> {
  const frontends = new Map<string, ServingEndpoints>();
  const nodePorts = new Map<number, ServingEndpoints>();
  let items = 0;
  for (const [id, svc] of services) {
    if (++items % ITEMS_PER_STEP === 0) yield;
    if (svc.protocol !== "UDP") continue;
    const clusterIP = svc.clusterIPs[family];
    if (!clusterIP) continue;
    const serving = servingOf(endpoints.get(id) ?? [], family);
    frontends.set(key(clusterIP, svc.port), serving);
    for (const ip of svc.externalIPs) if (familyOf(ip) === family) frontends.set(key(ip, svc.port), serving);
    for (const ip of svc.loadBalancerVIPs)
      if (familyOf(ip) === family) frontends.set(key(ip, svc.port), serving);
    if (svc.nodePort !== 0) nodePorts.set(svc.nodePort, serving);
  }
  const deletedIPs = new Set([...deletedClusterIPs].filter((ip) => familyOf(ip) === family));
  return { frontends, nodePorts, deletedIPs };
}

/**
 * The filters that delete every stale flow of `flows`, without duplicates: each names the
 * frontend (or, for a NodePort, only the port) and the reply's source, so that no flow to
 * anything but a Service frontend is touched (a pod's direct flows stay), as upstream's do. Each
 * filter costs the conntrack tool one walk of the table.
 */
export function staleFlowFilters(
  flows: readonly ConntrackFlowEntry[],
  desired: UDPDesiredState,
  family: IPFamily,
): { filters: FlowFilter[]; staleFlows: number } {
  const out = new Map<string, FlowFilter>();
  let staleFlows = 0;
  for (const f of flows) {
    const reply = key(f.replySrc, f.replySport);
    const base = { family, protocol: "UDP" as const, replySrc: f.replySrc, replySport: f.replySport };
    const frontend = desired.frontends.get(key(f.origDst, f.origDport));
    const gone = frontend === undefined && desired.deletedIPs.has(f.origDst);
    if (gone || (frontend !== undefined && !serves(frontend, reply))) {
      staleFlows++;
      const k = `${f.origDst}|${f.origDport}|${reply}`;
      if (!out.has(k)) out.set(k, { ...base, origDst: f.origDst, origDport: f.origDport });
      continue;
    }
    // A NodePort flow may be addressed to any local address: only the port is matched.
    const nodePort = frontend === undefined ? desired.nodePorts.get(f.origDport) : undefined;
    if (nodePort !== undefined && !serves(nodePort, reply)) {
      staleFlows++;
      const k = `*|${f.origDport}|${reply}`;
      if (!out.has(k)) out.set(k, { ...base, origDport: f.origDport });
    }
  }
  return { filters: [...out.values()], staleFlows };
}

export interface ReconcileInput {
  readonly family: IPFamily;
  /** What a sync made of its maps (desiringUDPState): a pass lists the flows later. */
  readonly desired: UDPDesiredState;
}

export interface ReconcileDeps {
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly clock: Clock;
}

/** What one pass did: flows deleted, and stale flows it listed (-1 each when listing failed). */
export interface ReconcileResult {
  readonly deleted: number;
  readonly stale: number;
}

/** One reconcile pass. */
export async function reconcileConntrack(
  ct: ConntrackCleaner,
  input: ReconcileInput,
  deps: ReconcileDeps,
): Promise<ReconcileResult> {
  const { log, metrics, clock } = deps;
  const start = clock.now();
  const desired = input.desired;
  // Nothing to protect and nothing to clean: no listing at all.
  if (desired.frontends.size === 0 && desired.nodePorts.size === 0 && desired.deletedIPs.size === 0)
    return { deleted: 0, stale: 0 };
  log.v(4).info("Started to reconcile conntrack entries", { ipFamily: input.family });
  let flows: ConntrackFlowEntry[];
  try {
    flows = await ct.listFlows(input.family, "UDP");
  } catch (err) {
    log.error("Failed to list conntrack entries", { ipFamily: input.family, err: errText(err) });
    return { deleted: -1, stale: -1 };
  }
  const { filters, staleFlows } = staleFlowFilters(flows, desired, input.family);
  for (const filter of filters) log.v(6).info("Adding conntrack filter for cleanup", { ...filter });
  let deleted = 0;
  let failed = false;
  try {
    if (filters.length > 0) deleted = await ct.deleteFlows(filters);
  } catch (err) {
    failed = true;
    log.error("Failed to clear all conntrack entries", { ipFamily: input.family, err: errText(err) });
  }
  const took = Math.max(0, clock.now() - start) / 1000;
  metrics.conntrackReconcilerSyncDuration.observe({ ip_family: input.family }, took);
  metrics.conntrackReconcilerDeletedEntries.inc({ ip_family: input.family }, deleted);
  if (!failed)
    log.v(4).info("Finished reconciling conntrack entries", {
      ipFamily: input.family,
      entriesDeleted: deleted,
      took: `${took}s`,
    });
  return { deleted, stale: failed ? -1 : staleFlows };
}

/** Passes run again at once, at most this many times, when one deleted fewer flows than it found. */
const MAX_IMMEDIATE_RETRIES = 3;

/** Every client's reconcilers, so tests can wait for the passes a sync started. */
const running = new WeakMap<ConntrackCleaner, Set<ConntrackReconciler>>();

/**
 * Runs reconcile passes for one family after the syncs that ask for them, off the sync's path:
 * listing a big conntrack table takes the tool far longer than the 100 ms a sync may spend on it,
 * and rules must not wait for flow cleanup. One pass at a time; requests during a pass coalesce
 * into one more pass with the newest state.
 */
export class ConntrackReconciler {
  private current: Promise<void> | undefined;
  private pending: ReconcileInput | undefined;

  constructor(
    private readonly ct: ConntrackCleaner,
    private readonly deps: ReconcileDeps,
  ) {
    const set = running.get(ct) ?? new Set<ConntrackReconciler>();
    running.set(ct, set);
    set.add(this);
  }

  request(input: ReconcileInput): void {
    this.pending = input;
    if (!this.current) this.current = this.drain();
  }

  /** Resolves once no pass is running or pending. */
  async settled(): Promise<void> {
    while (this.current) await this.current;
  }

  private async drain(): Promise<void> {
    try {
      let retries = 0;
      while (this.pending) {
        const input = this.pending;
        this.pending = undefined;
        const r = await reconcileConntrack(this.ct, input, this.deps);
        // The tool's walk can miss flows it deletes under (a big table changing while it is
        // walked): go again at once, a few times, rather than wait for the next change.
        const missed = r.stale > 0 && r.deleted < r.stale;
        retries = missed && !this.pending ? retries + 1 : 0;
        if (missed && !this.pending && retries <= MAX_IMMEDIATE_RETRIES) this.pending = input;
      }
    } catch (err) {
      // reconcileConntrack logs its own failures; anything else must not kill the process.
      this.deps.log.error("Conntrack reconcile pass failed", { err: errText(err) });
    } finally {
      this.current = undefined;
    }
  }
}

/** Resolves once every reconciler over `ct` is idle (tests: the passes their syncs started). */
export async function conntrackSettled(ct: ConntrackCleaner): Promise<void> {
  for (const r of running.get(ct) ?? []) await r.settled();
}
