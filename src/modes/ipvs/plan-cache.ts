// Per-port plans kept between syncs, and their union (DesiredState). A port is replanned only
// when its Service port or endpoints object changed (the maps replace what changed and keep the
// rest, so identity tells), which is what keeps a one-endpoint change cheap at 10,000 Services.

import { type EventRecorder, nullRecorder } from "../../k8s/events.ts";
import type { Logger } from "../../log/logger.ts";
import { familyView, usableEndpoints } from "../../proxy/family-view.ts";
import type { SyncInput } from "../../proxy/proxier.ts";
import type { EndpointInfo, ServicePortInfo } from "../../proxy/types.ts";
import { collectYoungGarbage } from "../../runtime.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { ITEMS_PER_STEP, runStepsPaced, type Steps, TimeSlice } from "../../util/time-slice.ts";
import { DesiredState } from "./desired-state.ts";
import { SET_IDS, type SetCatalog, type SetId } from "./ipsets.ts";
import { type PlanContext, type PortPlan, planningServicePort } from "./port-plan.ts";
import type { SyncScope } from "./scope.ts";
import { fitServices, type ServicePlans, type Shortfall, SoloTally, setOfMember } from "./set-room.ts";

/**
 * Planning work (one unit per port replanned, per endpoint it was given and per virtual server
 * and set member it planned) between two collections of young garbage: planning a port leaves
 * its topology lists, endpoint views and family view behind, and adding its plan to the state
 * leaves the tables the state outgrew, which the runtime would otherwise let pile up to the
 * size of the plans (a port with 20,000 external IPs has a handful of endpoints but plans
 * 20,000 virtual servers).
 */
const WORK_PER_COLLECTION = 32_768;

/** Event reason for a Service held out because a set cannot hold its members (our addition). */
export const REASON_IPSET_FULL = "KubeProxyIPSetFull";

interface CachedPort {
  readonly serviceKey: string;
  readonly source: ServicePortInfo;
  readonly endpointsSource: readonly EndpointInfo[] | undefined;
  readonly endpointProtocol: string | undefined;
  /** undefined when this family does not serve the port. */
  readonly plan: PortPlan | undefined;
  stamp: number;
}

/** A cached port still holds for these inputs (the maps replace what changed: identity tells). */
function isCurrent(
  cached: CachedPort | undefined,
  source: ServicePortInfo,
  endpointsSource: readonly EndpointInfo[] | undefined,
  endpointProtocol: string | undefined,
): boolean {
  return (
    cached?.source === source &&
    cached.endpointsSource === endpointsSource &&
    cached.endpointProtocol === endpointProtocol
  );
}

export class PortPlans {
  state = new DesiredState();
  private readonly ports = new Map<string, CachedPort>();
  /** Port ids by Service, with the Service's key string (one string per Service, not per port). */
  private readonly byService = new Map<string, { readonly key: string; readonly ids: Set<string> }>();
  private stamp = 0;
  /** Planning work since the last collection (see WORK_PER_COLLECTION). */
  private work = 0;
  /** Planning work of the current replan (the proxier collects after a big one). */
  lastWork = 0;
  /**
   * Services whose members do not fit in a set (set-room.ts): their plans are kept here but
   * are not in the state, so nothing of them is programmed. Kept across reset(), so a replan of
   * every port does not program them for one sync and report them again.
   */
  private readonly heldOut = new Map<string, Shortfall>();
  /**
   * Services that pass a set's limit on their own (SoloTally): the rest of their ports are not
   * planned, and none of their plans is kept; their ports are cached without a plan until one of
   * them changes, when the whole Service is planned again.
   */
  private readonly oversized = new Map<string, Shortfall>();
  /** Services told as held out (by either way), so each is told once and told when it is back. */
  private readonly told = new Set<string>();
  /** A held-out Service was replanned or dropped since the last fit. */
  private heldOutTouched = false;
  /** Set sizes at the last fit, for the sets held-out Services want (room may open there). */
  private sizesAtFit = new Map<SetId, number>();

  /** Every hash set with its limit (bitmap:port sets hold any port and cannot overflow). */
  private readonly hashLimits = new Map<SetId, number>();

  constructor(
    private readonly family: IPFamily,
    private readonly sets: SetCatalog,
    private readonly log: Logger,
    private readonly recorder: EventRecorder = nullRecorder,
  ) {
    for (const id of SET_IDS) {
      const limit = sets[id].spec.maxElem;
      if (limit !== undefined) this.hashLimits.set(id, limit);
    }
  }

  /** Forgets every plan (the node-level context changed: all must be recomputed). */
  reset(): void {
    this.state = new DesiredState();
    this.ports.clear();
    this.byService.clear();
    this.oversized.clear();
    this.heldOutTouched = true;
  }

  /** Ports with a plan kept (an oversized Service's are cached without one). */
  get plannedPorts(): number {
    let n = 0;
    for (const cached of this.ports.values()) if (cached.plan) n++;
    return n;
  }

  /** Services held out of the state, with the set each would overfill. */
  heldOutServices(): ReadonlyMap<string, Shortfall> {
    if (this.oversized.size === 0) return this.heldOut;
    return new Map([...this.heldOut, ...this.oversized]);
  }

  /** Checks every port; returns how many were replanned. */
  async replanAll(input: SyncInput, ctx: PlanContext, scope?: SyncScope): Promise<number> {
    // The inputs stay as they are until this sync ends (maps are updated only between syncs).
    return runStepsPaced(this.replanningAll(input, ctx, scope), new TimeSlice());
  }

  private *replanningAll(input: SyncInput, ctx: PlanContext, scope: SyncScope | undefined): Steps<number> {
    const stamp = ++this.stamp;
    let replanned = 0;
    this.lastWork = 0;
    for (const key of [...this.oversized.keys()])
      if (yield* this.changed(key, input)) yield* this.reopen(key, scope);
    const tally = new SoloTally(this.hashLimits);
    for (const [id, source] of input.services) {
      yield;
      if (yield* this.replanPort(id, source, input, ctx, stamp, scope, tally)) replanned++;
    }
    // Every current port now carries this stamp; anything else belongs to a port that is gone.
    if (this.ports.size > input.services.size) {
      for (const [id, cached] of this.ports) {
        yield;
        if (cached.stamp !== stamp) this.dropPort(id, scope);
      }
    }
    return replanned;
  }

  /** Checks the ports of the Services the trackers reported; returns how many were replanned. */
  async replanServices(
    keys: Iterable<string>,
    input: SyncInput,
    ctx: PlanContext,
    scope: SyncScope,
  ): Promise<number> {
    return runStepsPaced(this.replanningServices(keys, input, ctx, scope), new TimeSlice());
  }

  private *replanningServices(
    keys: Iterable<string>,
    input: SyncInput,
    ctx: PlanContext,
    scope: SyncScope,
  ): Steps<number> {
    const stamp = ++this.stamp;
    let replanned = 0;
    this.lastWork = 0;
    const tally = new SoloTally(this.hashLimits);
    for (const key of keys) {
      if (this.oversized.has(key) && (yield* this.changed(key, input))) yield* this.reopen(key, scope);
      for (const source of input.services.portsOf(key)) {
        yield;
        if (yield* this.replanPort(source.id, source, input, ctx, stamp, scope, tally)) replanned++;
      }
      for (const id of this.byService.get(key)?.ids ?? []) {
        yield;
        if (this.ports.get(id)?.stamp !== stamp) this.dropPort(id, scope);
      }
    }
    return replanned;
  }

  private *replanPort(
    id: string,
    source: ServicePortInfo,
    input: SyncInput,
    ctx: PlanContext,
    stamp: number,
    scope: SyncScope | undefined,
    tally: SoloTally,
  ): Steps<boolean> {
    const endpointsSource = input.endpoints.get(id);
    const endpointProtocol = endpointsSource ? input.endpoints.portName(id)?.protocol : undefined;
    const cached = this.ports.get(id);
    if (cached && isCurrent(cached, source, endpointsSource, endpointProtocol)) {
      cached.stamp = stamp;
      if (cached.plan && !this.oversized.has(cached.serviceKey)) {
        const short = yield* tally.adding(cached.serviceKey, cached.plan);
        if (short) yield* this.oversize(cached.serviceKey, short, scope);
      }
      return false;
    }
    if (cached) this.dropPort(id, scope);
    const service = this.serviceOf(source);
    const serviceKey = service.key;
    if (this.oversized.has(serviceKey)) {
      // Its own members already pass a limit: this port is not planned (see `oversized`).
      this.ports.set(id, { serviceKey, source, endpointsSource, endpointProtocol, plan: undefined, stamp });
      service.ids.add(id);
      return true;
    }
    const plan = yield* this.planPort(source, endpointsSource, endpointProtocol, ctx, serviceKey);
    const work = 1 + (endpointsSource?.length ?? 0) + (plan ? plan.size : 0);
    this.lastWork += work;
    this.work += work;
    // Paced by the state's growth too: each collection walks what is young, so a fixed pace
    // would cost more the more there is.
    if (this.work >= Math.max(WORK_PER_COLLECTION, this.lastWork / 8)) {
      this.work = 0;
      collectYoungGarbage();
    }
    // Tallied first: a plan that makes its Service pass a limit on its own (100,000 source
    // ranges) never goes into the state, rather than going in and straight out again.
    const short = plan && (yield* tally.adding(serviceKey, plan));
    // Touched before the state takes it: the scope notes what the state held (SyncScope).
    if (this.heldOut.has(serviceKey)) this.heldOutTouched = true;
    else if (plan && !short) {
      scope?.touch(plan);
      this.state.add(plan);
    }
    const kept = short ? undefined : plan;
    this.ports.set(id, { serviceKey, source, endpointsSource, endpointProtocol, plan: kept, stamp });
    service.ids.add(id);
    if (short) yield* this.oversize(serviceKey, short, scope);
    return true;
  }

  /** Whether any port of Service `key` differs from what is cached (or came or went). */
  private *changed(key: string, input: SyncInput): Steps<boolean> {
    const ports = input.services.portsOf(key);
    if (ports.length !== (this.byService.get(key)?.ids.size ?? 0)) return true;
    let items = 0;
    for (const source of ports) {
      if (++items % ITEMS_PER_STEP === 0) yield;
      const endpointsSource = input.endpoints.get(source.id);
      const endpointProtocol = endpointsSource ? input.endpoints.portName(source.id)?.protocol : undefined;
      if (!isCurrent(this.ports.get(source.id), source, endpointsSource, endpointProtocol)) return true;
    }
    return false;
  }

  /** An oversized Service changed: forget its unplanned ports, so that all are planned again. */
  private *reopen(key: string, scope: SyncScope | undefined): Steps<void> {
    this.oversized.delete(key);
    let items = 0;
    for (const id of [...(this.byService.get(key)?.ids ?? [])]) {
      if (++items % ITEMS_PER_STEP === 0) yield;
      this.dropPort(id, scope);
    }
  }

  /**
   * Service `key` passes a limit on its own: its plans leave the state (and the greedy fit) and
   * are let go; its remaining ports in this replan are cached without planning.
   */
  private *oversize(key: string, short: Shortfall, scope: SyncScope | undefined): Steps<void> {
    const inState = !this.heldOut.has(key);
    this.heldOut.delete(key);
    this.oversized.set(key, short);
    let items = 0;
    for (const id of this.byService.get(key)?.ids ?? []) {
      if (++items % ITEMS_PER_STEP === 0) yield;
      const cached = this.ports.get(id);
      if (!cached?.plan) continue;
      if (inState) {
        scope?.touch(cached.plan);
        this.state.remove(cached.plan);
      }
      this.ports.set(id, { ...cached, plan: undefined });
    }
    this.tellHeldOut(key, short);
  }

  private serviceOf(source: ServicePortInfo): { readonly key: string; readonly ids: Set<string> } {
    const key = `${source.name.namespace}/${source.name.name}`;
    let service = this.byService.get(key);
    if (!service) {
      service = { key, ids: new Set() };
      this.byService.set(key, service);
    }
    return service;
  }

  private dropPort(id: string, scope: SyncScope | undefined): void {
    const cached = this.ports.get(id);
    if (!cached) return;
    if (this.heldOut.has(cached.serviceKey)) this.heldOutTouched = true;
    else if (cached.plan) {
      scope?.touch(cached.plan);
      this.state.remove(cached.plan);
    }
    this.ports.delete(id);
    const service = this.byService.get(cached.serviceKey);
    service?.ids.delete(id);
    // heldOut keeps a Service while it is replanned (the next fit forgets it if it is gone);
    // `oversized` goes with the Service's last port.
    if (service?.ids.size === 0) {
      this.byService.delete(cached.serviceKey);
      this.oversized.delete(cached.serviceKey);
    }
  }

  /**
   * After a replan: holds out the Services whose members do not fit in a set, and takes back
   * those that fit again (set-room.ts), moving their plans out of or into the state. Runs only
   * when a set is over its limit, or when a held-out Service changed or room may have opened;
   * otherwise it costs a look at each set's size.
   */
  async fitSets(scope: SyncScope | undefined): Promise<void> {
    if (this.heldOut.size === 0) this.sizesAtFit.clear();
    if (this.fitDue()) await this.fit(scope);
    // Told Services that are programmed again (or gone).
    for (const key of this.told) {
      if (this.heldOut.has(key) || this.oversized.has(key)) continue;
      this.told.delete(key);
      if (!this.byService.has(key)) continue;
      this.log.info("Service's ipset members fit again; it is programmed", {
        service: key,
        ipFamily: this.family,
      });
    }
  }

  private async fit(scope: SyncScope | undefined): Promise<void> {
    this.heldOutTouched = false;
    const limits = this.limits(this.heldOutSets());
    const services: ServicePlans[] = [];
    for (const { key, ids } of this.byService.values()) {
      if (this.oversized.has(key)) continue;
      const plans: PortPlan[] = [];
      let createdAtMs: number | undefined;
      for (const id of ids) {
        const cached = this.ports.get(id);
        createdAtMs ??= cached?.source.createdAtMs;
        if (cached?.plan) plans.push(cached.plan);
      }
      services.push({ key, createdAtMs, plans });
    }
    const fit = await runStepsPaced(fitServices(services, limits), new TimeSlice());
    for (const service of services) {
      const now = fit.get(service.key);
      const before = this.heldOut.get(service.key);
      if (now && !before) {
        for (const plan of service.plans) {
          scope?.touch(plan);
          this.state.remove(plan);
        }
        this.tellHeldOut(service.key, now);
      } else if (!now && before) {
        for (const plan of service.plans) {
          scope?.touch(plan);
          this.state.add(plan);
        }
      }
    }
    this.heldOut.clear();
    for (const [key, short] of fit) this.heldOut.set(key, short);
    this.sizesAtFit = new Map();
    for (const id of this.heldOutSets()) this.sizesAtFit.set(id, this.state.entries[id].size);
  }

  private tellHeldOut(key: string, short: Shortfall): void {
    if (this.told.has(key)) return;
    this.told.add(key);
    const ipset = this.sets[short.set].spec.name;
    this.log.error("Service's ipset members do not fit; it is not programmed", {
      service: key,
      ipset,
      membersAtLeast: short.wanted,
      maxelem: short.limit,
      ipFamily: this.family,
    });
    const slash = key.indexOf("/");
    this.recorder.record({
      ref: { kind: "Service", namespace: key.slice(0, slash), name: key.slice(slash + 1) },
      type: "Warning",
      reason: REASON_IPSET_FULL,
      action: "SyncProxyRules",
      message:
        `ipset ${ipset} would hold at least ${short.wanted} members with this Service's, more than its maxelem ` +
        `${short.limit}: the Service is not programmed in ipvs mode (${this.family}) on this node`,
    });
  }

  /**
   * Whether a fit can change anything: a set is over its limit, a held-out Service changed, or
   * a set a held-out Service wants has shrunk since the last fit (room may have opened).
   */
  private fitDue(): boolean {
    if (this.heldOutTouched && this.heldOut.size > 0) return true;
    for (const [id, limit] of this.hashLimits) if (this.state.entries[id].size > limit) return true;
    for (const [id, size] of this.sizesAtFit) if (this.state.entries[id].size < size) return true;
    return false;
  }

  /** The hash sets a fit checks, with their limits: those over, and those in `wanted`. */
  private limits(wanted: ReadonlySet<SetId>): Map<SetId, number> {
    const out = new Map<SetId, number>();
    for (const [id, limit] of this.hashLimits)
      if (this.state.entries[id].size > limit || wanted.has(id)) out.set(id, limit);
    return out;
  }

  /** Sets the held-out Services' plans have members in. */
  private heldOutSets(): Set<SetId> {
    const out = new Set<SetId>();
    for (const key of this.heldOut.keys()) {
      for (const id of this.byService.get(key)?.ids ?? []) {
        const members = this.ports.get(id)?.plan?.members ?? [];
        for (let i = 0; i < members.length; i += 2) out.add(setOfMember(members[i]!));
      }
    }
    return out;
  }

  private *planPort(
    source: ServicePortInfo,
    endpointsSource: readonly EndpointInfo[] | undefined,
    endpointProtocol: string | undefined,
    ctx: PlanContext,
    serviceKey: string,
  ): Steps<PortPlan | undefined> {
    const view = familyView(source, this.family);
    if (!view) return undefined;
    const endpoints = usableEndpoints(source, endpointsSource, endpointProtocol, this.family);
    const plan = yield* planningServicePort(view, endpoints, ctx, serviceKey);
    for (const r of plan.rejected) {
      this.log.error("Error adding entry to ipset", {
        servicePortName: source.id,
        entry: r.entry,
        ipset: this.sets[r.set].spec.name,
      });
    }
    return plan;
  }
}
