// The ipvs proxier for one IP family (a dual-stack node runs two over one IPVS table). It does
// what upstream's ipvs syncProxyRules does (v1.31), batched: each sync reads the IPVS table, the
// ipsets and the local addresses once, computes the differences in memory, and writes at most
// one `ipvsadm --restore`, one `ipset restore`, one `ip -batch` and one `iptables-restore`, so the
// number of commands per sync does not depend on the number of Services.
//
// Cost follows the change, not the cluster: per-port plans are cached and only the ports of
// Services the trackers report are replanned, and a sync after a change compares only what those
// ports touched. Everything is compared with the kernel (and drift repaired) on full syncs, on
// syncs with nothing to do, and at least once per --ipvs-sync-period.
//
// Full syncs (the first, after a failure, on request, hourly) also re-ensure kube-ipvs0, our
// chains and the jumps into them, which are otherwise left alone.

import { DEFAULT_FEATURE_GATES, type EffectiveFeatureGates } from "../../config/feature-gates.ts";
import type { ProxyConfig } from "../../config/types.ts";
import type { IpsetClient, IpsetSet, IpsetSetSpec } from "../../host/ipset/types.ts";
import type { IptablesClient } from "../../host/iptables/types.ts";
import type { IpvsChanges, IpvsClient, IpvsService, RealServer } from "../../host/ipvs/types.ts";
import type { InterfaceAddress, NetlinkClient } from "../../host/netlink/types.ts";
import type { EventRecorder } from "../../k8s/events.ts";
import type { Logger } from "../../log/logger.ts";
import type { ConntrackCleaner } from "../../proxy/conntrack-cleanup.ts";
import type { FamilyDrift } from "../../proxy/drift.ts";
import type { LocalTrafficDetector } from "../../proxy/local-detect.ts";
import type { Metrics } from "../../proxy/metrics/metrics.ts";
import { jumpRuleArgs } from "../../proxy/netfilter/jumps.ts";
import { masqueradeMark } from "../../proxy/netfilter/masquerade.ts";
import { NodePortAddresses, resolveNodePortAddresses } from "../../proxy/nodeport-addresses.ts";
import type { Proxier, SyncInput } from "../../proxy/proxier.ts";
import { restoreFailureFields } from "../../proxy/restore-log.ts";
import type { ServiceHealthSink } from "../../proxy/service-health-sink.ts";
import { SyncBookkeeping } from "../../proxy/sync-bookkeeping.ts";
import { collectGarbage } from "../../runtime.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import { errText } from "../../util/err-text.ts";
import { Listing } from "../../util/listing.ts";
import { cidrContains, isLoopbackLenient } from "../../util/net/address.ts";
import { familyOf, type IPFamily } from "../../util/net/family.ts";
import { type BindPlan, boundAddresses, DUMMY_DEVICE, nodeAddresses, planBindings } from "./bindings.ts";
import { ipsetDrift, ipvsDrift } from "./drift.ts";
import { GracefulTermination, indexTable } from "./graceful-termination.ts";
import type { HeldOutByFamily } from "./held-out-families.ts";
import { type IpsetSyncPlan, planIpsets } from "./ipset-sync.ts";
import { SET_IDS, type SetCatalog, type SetId, setCatalog } from "./ipsets.ts";
import {
  declaresOurChains,
  FILTER_CHAINS,
  freshBaselineRestore,
  IPVS_JUMP_CHAINS,
  JUMP_POSITION,
  NAT_CHAINS,
  renderIpvsRules,
} from "./iptables-rules.ts";
import { diffIpvs } from "./ipvs-diff.ts";
import { PortPlans } from "./plan-cache.ts";
import type { PlanContext } from "./port-plan.ts";
import { SyncScope } from "./scope.ts";
import { SerialQueue } from "./serial.ts";
import type { Shortfall } from "./set-room.ts";
import {
  DEFAULT_SCHEDULER,
  type RealServers,
  realId,
  SERVING_WEIGHT,
  schedulerFlags,
  type VirtualServerSettings,
  virtualServerOrder,
} from "./virtual-servers.ts";

export interface IpvsProxierDeps {
  readonly ipvs: IpvsClient;
  readonly ipset: IpsetClient;
  readonly netlink: NetlinkClient;
  readonly iptables: IptablesClient;
  readonly conntrack?: ConntrackCleaner;
  readonly config: ProxyConfig;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly family: IPFamily;
  readonly nodeName: string;
  /** The node's primary IPs (nodePortAddresses "primary", source ranges covering the node). */
  readonly nodeIPs: Readonly<Partial<Record<IPFamily, string>>>;
  /** Fixed detector; by default derived from config (NodeCIDR mode: from the Node's podCIDRs). */
  readonly localDetector?: LocalTrafficDetector;
  readonly healthCheck?: ServiceHealthSink;
  readonly clock?: Clock;
  /** Wall-clock milliseconds, for network programming latency. */
  readonly wallClock?: () => number;
  /** Graceful-termination check period; upstream's one minute by default. */
  readonly gracefulCheckIntervalMs?: number;
  /** The run's feature gates (topology); the v1.31 defaults when absent. */
  readonly featureGates?: EffectiveFeatureGates;
  /** Where a Service held out of the sets is told (set-room.ts); nowhere when absent. */
  readonly recorder?: EventRecorder;
  /**
   * Dual-stack: what every family's proxier held out, shared between them, so the health
   * check each reports to turns a Service away when either family holds it out.
   */
  readonly heldOutByFamily?: HeldOutByFamily;
}

/**
 * One IPVS virtual server as the dry run reports it (DESIGN.md `ipvs.virtualServers`). Its
 * `flags` are the plan's own array, shared by every virtual server of the port: read it, never
 * change it. `realServers` is made for the view (as a Listing in a report).
 */
export interface ViewedReal {
  readonly address: string;
  readonly port: number;
  readonly weight: number;
}

export interface VirtualServerView {
  readonly address: string;
  readonly port: number;
  readonly protocol: string;
  readonly scheduler: string;
  readonly flags: readonly string[];
  readonly timeout: number;
  readonly realServers: readonly ViewedReal[] | Listing<ViewedReal>;
}

/** What the last sync did, for logs, tests and the bench. */
export interface IpvsSyncStats {
  /** Dummy device, chains and jumps re-ensured. */
  readonly fullSync: boolean;
  /** "full": everything compared with the kernel; "partial": only what changed. */
  readonly reconcile: "full" | "partial";
  /** Wall time of the whole sync. */
  readonly totalMs: number;
  /** Time spent waiting on host tools (their fakes, in tests). */
  readonly hostMs: number;
  /** totalMs - hostMs: the proxier's own work. */
  readonly computeMs: number;
  readonly recomputedPorts: number;
  readonly virtualServers: number;
  readonly ipvsRestoreLines: number;
  readonly ipsetRestoreLines: number;
  readonly ipBatchLines: number;
  readonly iptablesRestoreBytes: number;
  /**
   * Where the time went, in order: each step's own milliseconds (host steps and planning). In a
   * full reconcile the ipset step runs alongside the ipvs and bind steps.
   */
  readonly steps: Readonly<Record<SyncStep, number>>;
}

/** The steps of a sync, timed for the v=2 "ipvs sync done" line (bench-api reads it). */
export type SyncStep = "baseline" | "read" | "plan" | "ipset" | "ipvs" | "bind" | "iptables";

const noSteps = (): Record<SyncStep, number> => ({
  baseline: 0,
  read: 0,
  plan: 0,
  ipset: 0,
  ipvs: 0,
  bind: 0,
  iptables: 0,
});

/**
 * Planning work (ports and endpoints replanned) from which a sync collects its garbage in full
 * once planning is done, before the writes are computed on top of it (a second collection once
 * they are computed saves little more and costs as much again); and, when the whole kernel is
 * read after such a replan, before that read too.
 */
const WORK_FOR_FULL_COLLECTION = 100_000;

/**
 * A partial sync reads at most this many virtual servers one by one (an ipvsadm call each);
 * beyond that one listing of the whole table costs less.
 */
const NARROW_READ_MAX = 16;

const NO_ENTRIES: ReadonlySet<string> = new Set();

type SyncCounts = Omit<IpvsSyncStats, "fullSync" | "totalMs" | "hostMs" | "computeMs" | "steps">;

/** Real servers of a view made as one array up to this many (a Listing costs more than a few). */
const VIEWED_WHOLE = 256;

/** A view's real servers: the serving ones, then the draining ones at weight 0. */
function realServersView(
  reals: RealServers,
  draining: readonly { readonly address: string; readonly port: number }[],
): readonly ViewedReal[] | Listing<ViewedReal> {
  const drained = (r: { readonly address: string; readonly port: number }) => ({
    address: r.address,
    port: r.port,
    weight: 0,
  });
  if (reals.length + draining.length <= VIEWED_WHOLE) return [...reals.toArray(), ...draining.map(drained)];
  return new Listing(reals.length + draining.length, function* () {
    yield* reals;
    for (const r of draining) yield drained(r);
  });
}

/** One sync's writes, planned. */
interface Batches {
  readonly full: boolean;
  readonly replanned: number;
  ipsets: IpsetSyncPlan;
  readonly changes: IpvsChanges;
  readonly binds: BindPlan;
}

interface KernelView {
  readonly services: readonly IpvsService[];
  readonly sets: Map<string, IpsetSet>;
  readonly addresses: readonly InterfaceAddress[];
}

export class IpvsProxier implements Proxier {
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly family: IPFamily;
  private readonly sets: SetCatalog;
  private readonly scheduler: VirtualServerSettings;
  private readonly mark: string;
  private readonly nodePortAddresses: NodePortAddresses;
  private readonly excludeCIDRs: readonly string[];
  private readonly queue = new SerialQueue();
  private readonly graceful: GracefulTermination;
  private readonly plans: PortPlans;
  private contextKey = "";
  private needFullScan = true;
  private lastReconcile = Number.NEGATIVE_INFINITY;
  private readonly book: SyncBookkeeping;
  private randomFully: boolean | undefined;
  private resetWeights = true;
  private timeoutsConfigured = false;
  private hostMs = 0;
  /** The node's addresses (not kube-ipvs0's) and our sets' kinds, as the last full read found them. */
  private lastNodeAddresses: string[] | undefined;
  private readonly lastSetSpecs = new Map<string, IpsetSetSpec>();
  private steps = noSteps();
  private stats: IpvsSyncStats | undefined;
  /** prepare()'s baseline, settled to whether it succeeded; the next full sync consumes it. */
  private preparedBaseline: Promise<boolean> | undefined;

  constructor(private readonly deps: IpvsProxierDeps) {
    this.family = deps.family;
    this.log = deps.logger.named("ipvs");
    this.clock = deps.clock ?? realClock;
    this.sets = setCatalog(deps.family);
    const scheduler = deps.config.ipvs.scheduler || DEFAULT_SCHEDULER;
    this.scheduler = { scheduler, flags: schedulerFlags(scheduler) };
    this.mark = masqueradeMark(deps.config.iptables.masqueradeBit);
    this.nodePortAddresses = new NodePortAddresses(
      deps.family,
      resolveNodePortAddresses(deps.config.nodePortAddresses, deps.nodeIPs),
    );
    this.excludeCIDRs = deps.config.ipvs.excludeCIDRs.filter((c) => familyOf(c) === deps.family);
    this.book = new SyncBookkeeping({ ...deps, log: this.log });
    this.plans = new PortPlans(deps.family, this.sets, this.log, deps.recorder);
    this.graceful = new GracefulTermination({
      ipvs: deps.ipvs,
      clock: this.clock,
      logger: this.log,
      exclusive: (work) => this.queue.run(work),
      ownsAddress: (a) => this.ownsAddress(a),
      isWanted: (vsKey, id) => this.plans.state.virtualServers.get(vsKey)?.reals.hasId(id) ?? false,
      ...(deps.gracefulCheckIntervalMs !== undefined ? { intervalMs: deps.gracefulCheckIntervalMs } : {}),
    });
    this.log.v(2).info("ipvs sync params", { ipFamily: deps.family, scheduler, mark: this.mark });
  }

  /** Forces the next sync to re-ensure the dummy device, chains and jump rules. */
  requestFullSync(): void {
    this.book.requestFullSync();
  }

  /**
   * The first full sync's baseline (kube-ipvs0, our chains, the jumps into them), made while the
   * cluster is listed: in an emulated guest those thirty-odd process spawns per family took 7 to
   * 10 s of the first sync. A failure is logged and the first sync tries again.
   */
  prepare(): Promise<void> {
    this.preparedBaseline ??= this.queue.run(async () => {
      try {
        await this.ensureBaseline(true);
        return true;
      } catch (err) {
        this.log.error("Failed to prepare the ipvs baseline; the first sync tries again", {
          ipFamily: this.family,
          err: errText(err),
        });
        return false;
      }
    });
    return this.preparedBaseline.then(() => {});
  }

  /** Whether prepare() made the baseline (once: later full syncs make it again). */
  private async takePreparedBaseline(): Promise<boolean> {
    const prepared = this.preparedBaseline;
    if (!prepared) return false;
    this.preparedBaseline = Promise.resolve(false);
    return prepared;
  }

  /** Stops the periodic graceful-termination check. */
  stop(): void {
    this.graceful.stop();
  }

  /** Statistics of the last sync (undefined before the first). */
  lastSyncStats(): IpvsSyncStats | undefined {
    return this.stats;
  }

  /** Services held out because their members do not fit in a set (set-room.ts), by key. */
  heldOutServices(): ReadonlyMap<string, Shortfall> {
    return this.plans.heldOutServices();
  }

  /** Service ports with a plan kept (tests: a Service past a set's limit keeps none). */
  plannedPorts(): number {
    return this.plans.plannedPorts;
  }

  /** Real servers waiting for their connections to drain. */
  terminatingRealServers(): number {
    return this.graceful.size;
  }

  /** Runs the graceful-termination check now (tests; normally it runs every minute). */
  checkGracefulTermination(): Promise<number> {
    return this.queue.run(() => this.graceful.check());
  }

  /** The virtual servers the last sync programmed, terminating real servers at weight 0. */
  desiredVirtualServers(): VirtualServerView[] {
    return Array.from(this.virtualServerListing(), (vs) => ({ ...vs, realServers: [...vs.realServers] }));
  }

  /**
   * desiredVirtualServers as a Listing, each view (and its list of real servers) made as it is
   * read: the dry run's report of two million virtual servers, or of 100 with 10,000 real
   * servers each, writes them one by one rather than holding them all.
   */
  virtualServerListing(): Listing<VirtualServerView> {
    const servers = virtualServerOrder(this.plans.state.virtualServers.values());
    const graceful = this.graceful;
    return new Listing(servers.length, function* () {
      for (const vs of servers) {
        const draining = graceful.hasAny(vs.key) ? graceful.realsOf(vs.key) : [];
        yield {
          address: vs.address,
          port: vs.port,
          protocol: vs.protocol,
          scheduler: vs.scheduler,
          flags: vs.flags,
          timeout: vs.timeout,
          realServers: realServersView(vs.reals, draining),
        };
      }
    });
  }

  sync(input: SyncInput): Promise<void> {
    return this.queue.run(() => this.syncNow(input));
  }

  /**
   * The IPVS table and our ipsets against what the last sync programmed, between syncs. Skipped while a full
   * sync is pending: it compares and rewrites everything anyway.
   */
  drift(): Promise<FamilyDrift> {
    return this.queue.run(async () => {
      if (this.book.fullSyncNeeded) return { skipped: `${this.family}: a full sync is pending` };
      const [kernel, sets] = await Promise.all([this.deps.ipvs.read(), this.deps.ipset.listSets()]);
      const differences = ipvsDrift(this.virtualServerListing(), kernel, {
        family: this.family,
        owns: (a) => this.ownsAddress(a) && !this.excludeCIDRs.some((cidr) => cidrContains(cidr, a)),
      });
      const recorded = SET_IDS.map((id) => ({
        name: this.sets[id].spec.name,
        members: this.plans.state.entries[id].keys(),
      }));
      differences.push(...ipsetDrift(recorded, sets, this.family));
      return { differences };
    });
  }

  private async syncNow(input: SyncInput): Promise<void> {
    const startMs = performance.now();
    const start = this.clock.now();
    this.hostMs = 0;
    this.steps = noSteps();
    // Node labels and podCIDRs reach the plans through the plan context, not a full sync.
    this.book.observeNode(input.node);
    const fullSync = this.book.fullSyncNeeded || this.book.periodicFullSyncDue(start);
    this.log.v(3).info("Syncing ipvs proxier rules", { ipFamily: this.family, fullSync });
    let counts: SyncCounts | undefined;
    try {
      if (fullSync && !(await this.takePreparedBaseline())) {
        await this.timed("baseline", () => this.ensureBaseline());
      }
      await this.configureTimeoutsOnce();
      counts = await this.reconcile(input, fullSync, start);
      this.book.synced(fullSync, start);
      this.resetWeights = false;
      await this.afterSuccess(input);
    } catch (err) {
      // The kernel may now be anywhere between old and new, and this sync's change reports are
      // consumed: re-ensure, re-check every port, compare everything, reset weights.
      this.book.requestFullSync();
      this.needFullScan = true;
      this.resetWeights = true;
      this.log.error("Sync failed; retrying with a full sync", { ipFamily: this.family, err: errText(err) });
      throw err;
    } finally {
      this.finishStats(startMs, start, fullSync, counts);
      const written = counts && counts.ipvsRestoreLines + counts.ipsetRestoreLines + counts.ipBatchLines;
      input.note?.family(
        this.family,
        fullSync,
        written === undefined ? undefined : { count: written, unit: "commands" },
      );
    }
  }

  /**
   * Computes every batch from one read of the kernel, then writes them. The kernel's tables are
   * no longer referenced once the batches exist, so they are not held while the batches are
   * written (on a warm node with two million virtual servers the table read is as large as the
   * restore input).
   */
  private async reconcile(input: SyncInput, fullSync: boolean, now: number): Promise<SyncCounts> {
    const batches = await this.batches(input, fullSync, now);
    const { full, changes, binds } = batches;
    const rules = await this.timed("plan", () => this.rules(batches.ipsets.nonEmpty));
    const ipsetLines = batches.ipsets.lines;
    await this.write(batches, rules);
    if (full) this.lastReconcile = now;
    return {
      reconcile: full ? "full" : "partial",
      recomputedPorts: batches.replanned,
      virtualServers: this.plans.state.virtualServers.size,
      ipvsRestoreLines: changes.length,
      ipsetRestoreLines: ipsetLines,
      ipBatchLines: binds.add.length + binds.remove.length,
      iptablesRestoreBytes: Buffer.byteLength(rules),
    };
  }

  /**
   * What this sync writes, from the plans and the kernel. A sync that can be partial (no full
   * sync, no full scan, a full reconcile less than --ipvs-sync-period ago) plans first, with the
   * node addresses of the last full read, and then reads only what its scope touched: those
   * virtual servers from IPVS (connection counts decide draining), and set members and bound
   * addresses from the scope's memory of the state (see SyncScope). A sync with nothing to do
   * then reads nothing; the periodic full reconcile is what repairs drift. Everything else reads
   * the whole kernel first; so does a sync that touches many virtual servers.
   */
  private async batches(input: SyncInput, fullSync: boolean, now: number): Promise<Batches> {
    const mayBePartial =
      !fullSync &&
      !this.needFullScan &&
      this.lastNodeAddresses !== undefined &&
      now - this.lastReconcile < this.deps.config.ipvs.syncPeriod;
    let kernel = mayBePartial ? undefined : await this.timed("read", () => this.readKernel());
    let { replanned, scope } = await this.timed("plan", () => this.replan(input, this.planContext()));
    if (kernel === undefined) {
      const narrow = scope ? this.withDraining(scope) : undefined;
      if (narrow && narrow.virtualServers.size <= NARROW_READ_MAX) {
        kernel = await this.timed("read", () => this.readScoped(narrow));
      } else {
        // A big replan (every port, after a Node change) left the old plans and its own leftovers
        // behind: collected before the whole table is read and parsed on top of them.
        if (this.plans.lastWork >= WORK_FOR_FULL_COLLECTION) collectGarbage();
        kernel = await this.timed("read", () => this.readKernel());
        // The node's addresses, read again, may have changed: then every port is replanned.
        const ctx = this.planContext();
        if (this.needFullScan) {
          const again = await this.timed("plan", () => this.replan(input, ctx));
          replanned += again.replanned;
          scope = again.scope;
        }
      }
    }
    const view = kernel;
    // Partial: only what the scope touched is compared (the rest is as the last sync left it).
    const partial = mayBePartial && scope !== undefined ? this.withDraining(scope) : undefined;
    return this.timed("plan", async () => {
      // Planning's leftovers go before the ipset and IPVS changes are computed on top of them.
      if (this.plans.lastWork >= WORK_FOR_FULL_COLLECTION) collectGarbage();
      const ipsets = planIpsets({
        sets: this.sets,
        desired: this.plans.state.entries,
        kernel: view.sets,
        logger: this.log,
        ...(partial ? { scope: partial.entries } : {}),
      });
      const changes = diffIpvs({
        desired: this.plans.state.virtualServers,
        kernel: indexTable(view.services, (a) => this.ownsAddress(a), partial?.virtualServerAddresses),
        graceful: this.graceful,
        resetWeights: this.resetWeights,
        excluded: (address) => this.excludeCIDRs.some((cidr) => cidrContains(cidr, address)),
        ...(partial ? { keys: partial.virtualServers.keys() } : {}),
      });
      const bound = boundAddresses(view.addresses, this.family, partial?.bindAddresses);
      const binds = planBindings(this.plans.state.bindAddresses, bound, partial?.bindAddresses);
      return { full: partial === undefined, replanned, ipsets, changes, binds };
    });
  }

  /**
   * The kernel as far as a partial sync looks at it: the scope's virtual servers as IPVS lists
   * them; the members and addresses it touched that the state held, our sets as the last full
   * read found them (or as we create them), which a successful sync left in the kernel.
   */
  private async readScoped(scope: SyncScope): Promise<KernelView> {
    const services =
      this.rememberedServices(scope) ??
      (await this.host(() => this.deps.ipvs.readServices([...scope.virtualServers.values()])));
    const sets = new Map<string, IpsetSet>();
    for (const id of SET_IDS) {
      const { spec } = this.sets[id];
      sets.set(spec.name, {
        spec: this.lastSetSpecs.get(spec.name) ?? spec,
        entries: scope.heldEntries.get(id) ?? NO_ENTRIES,
      });
    }
    const addresses = [...scope.heldBinds].map((address) => ({ device: DUMMY_DEVICE, address }));
    return { services, sets, addresses };
  }

  /**
   * The scope's virtual servers as the last successful sync left them in the kernel, when this
   * sync only adds to them or drops them whole: then no connection count is needed, and a change
   * on the path to traffic spares an ipvsadm call. Undefined (read the kernel) when any real
   * server would go (its connections decide how), is draining, or a virtual server is in scope
   * for another reason. Drift behind our back makes a write fail, and the retry reads it all.
   */
  private rememberedServices(scope: SyncScope): IpvsService[] | undefined {
    const out: IpvsService[] = [];
    for (const key of scope.virtualServers.keys()) {
      const held = scope.heldVirtualServers.get(key);
      if (held === undefined || this.graceful.hasAny(key)) return undefined;
      if (held === null) continue;
      const wanted = this.plans.state.virtualServers.get(key);
      if (wanted) {
        const ids = new Set<string>();
        for (const r of wanted.reals) ids.add(realId(r));
        for (const r of held.reals) if (!ids.has(realId(r))) return undefined;
      }
      const reals: RealServer[] = [];
      for (const r of held.reals) {
        reals.push({
          address: r.address,
          port: r.port,
          weight: SERVING_WEIGHT,
          activeConnections: 0,
          inactiveConnections: 0,
        });
      }
      out.push({ server: held, reals });
    }
    return out;
  }

  /**
   * Replans what changed. After a context change or a failed sync every port is checked (and
   * no scope is returned: everything must be compared); otherwise only the reported Services.
   */
  private async replan(
    input: SyncInput,
    ctx: PlanContext,
  ): Promise<{ replanned: number; scope: SyncScope | undefined }> {
    if (this.needFullScan) {
      const replanned = await this.plans.replanAll(input, ctx);
      this.needFullScan = false;
      await this.plans.fitSets(undefined);
      return { replanned, scope: undefined };
    }
    const changed = new Set(input.serviceUpdate.updatedServices);
    for (const key of input.endpointsUpdate.updatedServices) changed.add(key);
    const scope = new SyncScope(this.plans.state);
    const replanned = await this.plans.replanServices(changed, input, ctx, scope);
    await this.plans.fitSets(scope);
    return { replanned, scope };
  }

  /** A partial sync also looks at virtual servers with real servers still draining. */
  private withDraining(scope: SyncScope): SyncScope {
    for (const [key, vs] of this.graceful.pendingVirtualServers()) scope.addVirtualServer(key, vs);
    return scope;
  }

  private async rules(nonEmpty: ReadonlySet<SetId>): Promise<string> {
    return renderIpvsRules({
      family: this.family,
      sets: this.sets,
      nonEmpty,
      mark: this.mark,
      masqueradeAll: this.deps.config.iptables.masqueradeAll,
      localDetector: this.book.detector,
      randomFully: await this.hasRandomFully(),
      noNodeAccessRules: [...this.plans.state.noNodeAccessRules.keys()].sort(),
    });
  }

  /**
   * Writes every batch, each even if an earlier one failed (they are independent enough that
   * partial progress beats none); the first failure (in the order sets, IPVS, binds, iptables)
   * is rethrown so the runner retries.
   *
   * The sets go before the iptables rules, which name them (iptables-restore refuses a missing
   * set). A full reconcile writes the sets and IPVS (then the binds) at once: separate kernel
   * tables, each tool busy for seconds on a big sync. A partial sync (a change: the path to
   * traffic) writes IPVS and the binds first, as upstream does, then the sets.
   */
  private async write(batches: Batches, rules: string): Promise<void> {
    const { changes, binds } = batches;
    // The ipset script is let go as it is handed over: it is not held once ipset has read it.
    const ipsetScript = () => {
      const { script } = batches.ipsets;
      batches.ipsets = { ...batches.ipsets, script: [] };
      return script;
    };
    const failed: Partial<Record<"ipset" | "ipvs" | "bind" | "iptables", unknown>> = {};
    // Host time is counted by the caller when attempts overlap.
    const attempt = async (
      what: string,
      step: keyof typeof failed,
      op: () => Promise<void>,
      overlap = false,
    ) => {
      try {
        await this.timed(step, () => (overlap ? op() : this.host(op)));
      } catch (err) {
        this.log.error(what, restoreFailureFields(err));
        failed[step] = err;
      }
    };
    const syncSets = async (overlap?: boolean) => {
      if (batches.ipsets.lines === 0) return;
      const lines = batches.ipsets.lines;
      await attempt(
        "Failed to sync ipsets",
        "ipset",
        () => this.deps.ipset.restore(ipsetScript(), { lines }),
        overlap,
      );
    };
    const syncIpvs = async (overlap?: boolean) => {
      if (changes.length > 0)
        await attempt("Failed to apply IPVS changes", "ipvs", () => this.deps.ipvs.apply(changes), overlap);
      if (binds.add.length > 0 || binds.remove.length > 0) {
        await attempt(
          "Failed to bind service addresses",
          "bind",
          () => this.deps.netlink.bindAddresses(DUMMY_DEVICE, binds.add, binds.remove),
          overlap,
        );
      }
    };
    if (batches.full) {
      await this.host(() => Promise.all([syncSets(true), syncIpvs(true)]));
    } else {
      await syncIpvs();
      await syncSets();
    }
    await attempt("Failed to execute iptables-restore", "iptables", async () => {
      try {
        await this.deps.iptables.restoreAll(rules, { noFlush: true, counters: true });
      } catch (err) {
        this.deps.metrics.iptablesRestoreFailures.inc();
        throw err;
      }
    });
    for (const step of ["ipset", "ipvs", "bind", "iptables"] as const) if (step in failed) throw failed[step];
  }

  /** Awaits a host tool, accounting the wait as host time (not the proxier's compute). */
  private async host<T>(op: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await op();
    } finally {
      this.hostMs += performance.now() - t0;
    }
  }

  /** Runs one step of the sync, adding its wall time to the step's (kept on failure too). */
  private async timed<T>(step: SyncStep, op: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await op();
    } finally {
      this.steps[step] += performance.now() - t0;
    }
  }

  /**
   * One read of each kernel table, concurrently. The node's addresses and our sets' kinds are
   * kept for partial syncs (readScoped).
   */
  private async readKernel(): Promise<KernelView> {
    const [services, sets, addresses] = await this.host(() =>
      Promise.all([this.deps.ipvs.read(), this.deps.ipset.listSets(), this.deps.netlink.localAddresses()]),
    );
    this.lastNodeAddresses = nodeAddresses(addresses, this.family);
    this.lastSetSpecs.clear();
    for (const id of SET_IDS) {
      const have = sets.get(this.sets[id].spec.name);
      if (have) this.lastSetSpecs.set(have.spec.name, have.spec);
    }
    return { services, sets, addresses };
  }

  private ownsAddress(address: string): boolean {
    return familyOf(address) === this.family;
  }

  /**
   * The node-level inputs of every plan (the node's addresses as last read); when they change,
   * every plan is recomputed.
   */
  private planContext(): PlanContext {
    const nodeAddresses = this.lastNodeAddresses ?? [];
    const ctx: PlanContext = {
      family: this.family,
      sets: this.sets,
      scheduler: this.scheduler,
      nodeName: this.deps.nodeName,
      nodeLabels: this.book.nodeLabels,
      featureGates: this.deps.featureGates ?? DEFAULT_FEATURE_GATES,
      nodeIP: this.deps.nodeIPs[this.family],
      nodePortIPs: this.nodePortIPs(nodeAddresses),
      nodeAddresses: new Set(nodeAddresses),
    };
    const key = JSON.stringify([
      Object.entries(ctx.nodeLabels).sort(),
      ctx.nodeIP,
      ctx.nodePortIPs,
      nodeAddresses,
    ]);
    if (key !== this.contextKey) {
      this.contextKey = key;
      this.plans.reset();
      this.needFullScan = true;
    }
    return ctx;
  }

  /** NodePort addresses: every node address, or those inside --nodeport-addresses; never loopback. */
  private nodePortIPs(nodeAddresses: readonly string[]): string[] {
    const npa = this.nodePortAddresses;
    const ips = npa.matchAll ? nodeAddresses : npa.nodeIPs(nodeAddresses);
    return ips.filter((ip) => !isLoopbackLenient(ip));
  }

  /**
   * The dummy device, our chains and the jumps into them: full syncs only, or prepare() (a real
   * run, where -N's answer is the kernel's; a dry run only records it). prepare() on a node with
   * none of our chains makes them and the jumps with one iptables-restore (every spawn costs);
   * otherwise, a jump to a chain -N just created is inserted without checking for it first.
   */
  private async ensureBaseline(prepare = false): Promise<void> {
    await this.host(() => this.deps.netlink.ensureDummyDevice(DUMMY_DEVICE));
    if (prepare && (await this.freshBaseline())) return;
    const ipt = this.deps.iptables;
    const chains = [
      ...NAT_CHAINS.map((chain) => ({ table: "nat" as const, chain })),
      ...FILTER_CHAINS.map((chain) => ({ table: "filter" as const, chain })),
    ];
    const created = new Set<string>();
    for (const { table, chain } of chains) {
      if (!(await this.host(() => ipt.ensureChain(table, chain)))) created.add(`${table} ${chain}`);
    }
    for (const j of IPVS_JUMP_CHAINS) {
      // No rule can jump to a chain that did not exist: a jump to one just created is absent.
      const absent = prepare && created.has(`${j.table} ${j.dstChain}`);
      await this.host(() =>
        ipt.ensureRule(JUMP_POSITION, j.table, j.srcChain, jumpRuleArgs(j), absent ? { absent } : undefined),
      );
    }
  }

  /** On a node without our chains, makes them and the jumps into them in one restore. */
  private async freshBaseline(): Promise<boolean> {
    const ipt = this.deps.iptables;
    try {
      const only = { linesStartingWith: ":" };
      const [nat, filter] = await this.host(() =>
        Promise.all([ipt.save("nat", only), ipt.save("filter", only)]),
      );
      if (declaresOurChains("nat", nat) || declaresOurChains("filter", filter)) return false;
      await this.host(() => ipt.restoreAll(freshBaselineRestore(), { noFlush: true, counters: false }));
      return true;
    } catch (err) {
      this.log.info("Could not make the chains in one restore; making them one by one", {
        ipFamily: this.family,
        err: errText(err),
      });
      return false;
    }
  }

  /** ipvsadm --set, once, when any timeout is configured (upstream does it at startup). */
  private async configureTimeoutsOnce(): Promise<void> {
    if (this.timeoutsConfigured) return;
    this.timeoutsConfigured = true;
    const { tcpTimeout, tcpFinTimeout, udpTimeout } = this.deps.config.ipvs;
    if (tcpTimeout <= 0 && tcpFinTimeout <= 0 && udpTimeout <= 0) return;
    const seconds = (ms: number) => Math.max(0, Math.floor(ms / 1000));
    try {
      await this.host(() =>
        this.deps.ipvs.setTimeouts({
          tcp: seconds(tcpTimeout),
          tcpFin: seconds(tcpFinTimeout),
          udp: seconds(udpTimeout),
        }),
      );
    } catch (err) {
      this.log.error("Failed to configure IPVS timeouts", { err: errText(err) });
    }
  }

  private async hasRandomFully(): Promise<boolean> {
    this.randomFully ??= await this.host(() => this.deps.iptables.hasRandomFully());
    return this.randomFully;
  }

  private async afterSuccess(input: SyncInput): Promise<void> {
    const noLocal = {
      internal: this.plans.state.noLocalInternal.size,
      external: this.plans.state.noLocalExternal.size,
    };
    // A held-out Service has no virtual server here: its health check must not draw traffic.
    const held = this.plans.heldOutServices();
    const shared = this.deps.heldOutByFamily;
    const unserved = shared
      ? shared.record(this.family, held.keys())
      : held.size > 0
        ? new Set(held.keys())
        : undefined;
    await this.book.afterSuccess(input, noLocal, unserved);
  }

  private finishStats(
    startMs: number,
    start: number,
    fullSync: boolean,
    counts: SyncCounts | undefined,
  ): void {
    const totalMs = performance.now() - startMs;
    this.deps.metrics.syncProxyRulesLatency.observe(Math.max(0, this.clock.now() - start) / 1000);
    this.stats = {
      fullSync,
      reconcile: counts?.reconcile ?? "full",
      totalMs,
      hostMs: this.hostMs,
      computeMs: Math.max(0, totalMs - this.hostMs),
      recomputedPorts: counts?.recomputedPorts ?? 0,
      virtualServers: counts?.virtualServers ?? this.plans.state.virtualServers.size,
      ipvsRestoreLines: counts?.ipvsRestoreLines ?? 0,
      ipsetRestoreLines: counts?.ipsetRestoreLines ?? 0,
      ipBatchLines: counts?.ipBatchLines ?? 0,
      iptablesRestoreBytes: counts?.iptablesRestoreBytes ?? 0,
      steps: this.steps,
    };
    // One line per sync at -v=2: its steps and sizes (bench-api reads the phases from it).
    const ms = (x: number) => Math.round(x);
    this.log.v(2).info("ipvs sync done", {
      ipFamily: this.family,
      fullSync,
      reconcile: this.stats.reconcile,
      totalMs: ms(totalMs),
      ...Object.fromEntries(Object.entries(this.steps).map(([k, v]) => [`${k}Ms`, ms(v)])),
      virtualServers: this.stats.virtualServers,
      ipvsLines: this.stats.ipvsRestoreLines,
      ipsetLines: this.stats.ipsetRestoreLines,
      bindLines: this.stats.ipBatchLines,
    });
    this.log.v(4).info("syncProxyRules complete", { ipFamily: this.family, elapsed: `${totalMs / 1000}s` });
  }
}
