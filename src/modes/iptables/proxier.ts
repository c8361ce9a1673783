// The iptables proxier for one IP family (a dual-stack node runs two). Each sync computes the
// restore input (rule-set.ts), writes it with one atomic iptables-restore --noflush, then does
// the housekeeping upstream does after a successful write. Partial syncs rewrite only the
// chains of changed services; a full sync happens at start, after any failure, after the
// tables were flushed (canaries), when node labels change, and hourly outside large clusters.

import { DEFAULT_FEATURE_GATES, type EffectiveFeatureGates } from "../../config/feature-gates.ts";
import type { ProxyConfig } from "../../config/types.ts";
import {
  type IptablesClient,
  type RestoreInput,
  restoreInputText,
  type Table,
} from "../../host/iptables/types.ts";
import type { NfacctClient } from "../../host/nfacct/types.ts";
import type { Logger } from "../../log/logger.ts";
import type { ConntrackCleaner } from "../../proxy/conntrack-cleanup.ts";
import type { FamilyDrift } from "../../proxy/drift.ts";
import type { LocalTrafficDetector } from "../../proxy/local-detect.ts";
import { decideLocalhostNodePorts } from "../../proxy/localhost-nodeports.ts";
import type { Metrics } from "../../proxy/metrics/metrics.ts";
import { chainNamesInSave } from "../../proxy/netfilter/chains.ts";
import { jumpRuleArgs } from "../../proxy/netfilter/jumps.ts";
import { masqueradeMark } from "../../proxy/netfilter/masquerade.ts";
import { iptablesDrift, RestoreRecord } from "../../proxy/netfilter/restore-record.ts";
import { NodePortAddresses, resolveNodePortAddresses } from "../../proxy/nodeport-addresses.ts";
import type { Proxier, SyncInput } from "../../proxy/proxier.ts";
import { restoreFailureFields } from "../../proxy/restore-log.ts";
import type { ServiceHealthSink } from "../../proxy/service-health-sink.ts";
import { SyncBookkeeping } from "../../proxy/sync-bookkeeping.ts";
import { SyncWatch } from "../../proxy/sync-watch.ts";
import { collectGarbage } from "../../runtime.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import { errText } from "../../util/err-text.ts";
import { memoryFigures } from "../../util/memory.ts";
import { isLoopbackLenient } from "../../util/net/address.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { TimeSlice } from "../../util/time-slice.ts";
import { CanaryMonitor, checkCanaryChains } from "./canary.ts";
import { ProbabilityCache } from "./probability.ts";
import {
  LARGE_CLUSTER_ENDPOINTS_THRESHOLD,
  LINES_FOR_FULL_COLLECTION,
  type RuleSet,
  RuleSetBuilder,
  type RuleSetSettings,
  type ScopeRequest,
  type SyncScope,
} from "./rule-set.ts";
import { LOCALHOST_NODEPORTS_COUNTER } from "./service-rules.ts";
import { CT_STATE_INVALID_DROPPED_COUNTER, JUMP_CHAINS } from "./top-level.ts";

/** A nat sweep slower than this is done once per sync period, as in large clusters. */
const SLOW_SWEEP_MS = 1000;
/** ...and so is one of tables this big, before its first slow sweep is paid. */
const LINES_FOR_SLOW_SWEEP = 100_000;

/** nfacct as the proxier uses it: counters are created on full syncs (metrics read them at scrape time). */

export type NfacctCounterClient = Pick<NfacctClient, "ensure">;

/** Per-service health check servers (upstream's ServiceHealthServer), fed after each success. */
export type { ServiceHealthSink } from "../../proxy/service-health-sink.ts";

export interface IptablesProxierDeps {
  readonly iptables: IptablesClient;
  readonly family: IPFamily;
  readonly config: ProxyConfig;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly nodeName: string;
  /** The node's primary IPs (for nodePortAddresses "primary" and source ranges covering the node). */
  readonly nodeIPs: Readonly<Partial<Record<IPFamily, string>>>;
  /**
   * All local addresses ("ip" or "ip/prefix"), e.g. from `ip -o addr`; used with nodePortAddresses.
   * A rejection fails the sync before anything is restored (the previous rules stay).
   */
  readonly localAddresses: () => Promise<readonly string[]>;
  /**
   * The node-wide localhost NodePorts decision (decideLocalhostNodePorts), made once by the
   * assembly that also sets route_localnet from it; derived from config when absent (tests).
   */
  readonly localhostNodePorts?: boolean;
  /** Fixed detector; by default derived from config (NodeCIDR mode: from the Node's podCIDRs). */
  readonly localDetector?: LocalTrafficDetector;
  readonly conntrack?: ConntrackCleaner;
  /** Present when the node has usable nfacct; then the counters are created and matched. */
  readonly nfacct?: NfacctCounterClient;
  /** nf_conntrack_tcp_be_liberal as read from the kernel; defaults to config.conntrack.tcpBeLiberal. */
  readonly conntrackTCPLiberal?: boolean;
  readonly healthCheck?: ServiceHealthSink;
  readonly clock?: Clock;
  /** Wall-clock milliseconds, for network programming latency (trigger times are wall times). */
  readonly wallClock?: () => number;
  /** The run's feature gates (topology); the v1.31 defaults when absent. */
  readonly featureGates?: EffectiveFeatureGates;
  /** Filter rules from which partial syncs edit that table (filter-edits.ts); tests lower it. */
  readonly filterLinesForEdits?: number;
}

/** Everything that stays fixed for the life of the proxier. */
interface FixedSettings {
  readonly mark: string;
  readonly localhostNodePorts: boolean;
  readonly nodePortAddresses: NodePortAddresses;
  readonly conntrackTCPLiberal: boolean;
}

function fixedSettings(deps: IptablesProxierDeps): FixedSettings {
  const { config, family } = deps;
  const npa = new NodePortAddresses(family, resolveNodePortAddresses(config.nodePortAddresses, deps.nodeIPs));
  const localhost =
    deps.localhostNodePorts ??
    decideLocalhostNodePorts({
      enabledByConfig: config.iptables.localhostNodePorts,
      nodePortAddresses: config.nodePortAddresses,
      nodeIPs: deps.nodeIPs,
      proxiesIPv4: family === "IPv4",
    }).enabled;
  return {
    mark: masqueradeMark(config.iptables.masqueradeBit),
    // route_localnet (and so the localnet guard) exists for IPv4 only.
    localhostNodePorts: family === "IPv4" && localhost,
    nodePortAddresses: npa,
    conntrackTCPLiberal: deps.conntrackTCPLiberal ?? config.conntrack.tcpBeLiberal,
  };
}

/** Service ports from which a full sync starts with a full collection. */
const PORTS_FOR_FULL_COLLECTION_BEFORE = 10_000;

export class IptablesProxier implements Proxier {
  private readonly fixed: FixedSettings;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly builder: RuleSetBuilder;
  private readonly probabilities = new ProbabilityCache();
  private readonly counters = new Map<string, boolean>([
    [CT_STATE_INVALID_DROPPED_COUNTER, false],
    [LOCALHOST_NODEPORTS_COUNTER, false],
  ]);
  private lastCleanup = Number.NEGATIVE_INFINITY;
  /** How long the last nat sweep's iptables-save took (wall ms). */
  private lastSweepMs = 0;
  /** Rules the tables hold after the last computed sync (filter and nat). */
  private tableLines = 0;
  private readonly book: SyncBookkeeping;
  private randomFully: boolean | undefined;
  private canariesInstalled = false;
  private largeClusterMode = false;
  /** prepare()'s baseline, settled to whether it succeeded; the next full sync consumes it. */
  private preparedBaseline: Promise<boolean> | undefined;
  /** What the restores wrote into our chains (drift checks). */
  private readonly record = new RestoreRecord();
  /** Whether a sync ran while a drift check read the kernel. */
  private readonly syncs = new SyncWatch();

  constructor(private readonly deps: IptablesProxierDeps) {
    this.fixed = fixedSettings(deps);
    this.builder = new RuleSetBuilder(deps.filterLinesForEdits);
    this.clock = deps.clock ?? realClock;
    this.log = deps.logger.named("iptables");
    this.book = new SyncBookkeeping({ ...deps, log: this.log });
    this.log
      .v(2)
      .info("Using iptables mark for masquerade", { ipFamily: deps.family, mark: this.fixed.mark });
  }

  /** Whether the last sync saw more endpoints than upstream's large-cluster threshold. */
  get inLargeClusterMode(): boolean {
    return this.largeClusterMode;
  }

  /** Forces the next sync to be a full one (upstream's forceSyncProxyRules, minus the sync). */
  requestFullSync(): void {
    this.book.requestFullSync();
  }

  /**
   * The first full sync's jump rules and nfacct counters, made while the cluster is listed (at
   * 10,000 Services that is a second of process spawns off the first sync's path), and the
   * canary chains, created as upstream's monitor creates them: at start, while the tables are
   * small. Created after a big first restore, the nat canary would make legacy iptables rewrite
   * that whole table, holding the xtables lock for seconds while the next change waits.
   */
  prepare(): Promise<void> {
    this.preparedBaseline ??= this.prepareOnce();
    return this.preparedBaseline.then(() => {});
  }

  private async prepareOnce(): Promise<boolean> {
    let ready = true;
    try {
      await this.ensureBaseline();
    } catch {
      ready = false; // logged by ensureBaseline; the first sync tries again
    }
    try {
      await this.checkCanaries();
    } catch (err) {
      // The monitor's first check, after the first sync, creates them instead.
      this.log.error("Could not check iptables canary", { err: errText(err) });
    }
    return ready;
  }

  sync(input: SyncInput): Promise<void> {
    return this.syncs.watch(() => this.syncNow(input));
  }

  /**
   * Our chains as iptables-save lists them against what the restores wrote, between syncs.
   * Skipped while a full sync is pending (it rewrites every chain), and when a sync ran while
   * the tables were read.
   */
  async drift(): Promise<FamilyDrift> {
    await this.syncs.idle();
    const family = this.deps.family;
    if (this.book.fullSyncNeeded || !this.record.valid)
      return { skipped: `${family}: a full sync is pending` };
    const mark = this.syncs.mark();
    const saved: string[] = [];
    for (const table of this.record.rules.keys()) saved.push(await this.deps.iptables.save(table as Table));
    if (this.syncs.changedSince(mark)) return { skipped: `${family}: a sync ran while the tables were read` };
    return {
      differences: iptablesDrift(this.record.rules, saved.join("\n"), family),
    };
  }

  private async syncNow(input: SyncInput): Promise<void> {
    const start = this.clock.now();
    // Node labels drive topology and podCIDRs may define "local": a change rewrites everything.
    if (this.book.observeNode(input.node)) this.book.requestFullSync();
    const { request, scope } = await this.chooseScope(input, start);
    const fullSync = request.fullSync;
    this.log.v(2).info("Syncing iptables rules", { ipFamily: this.deps.family, fullSync });
    let rulesWritten: number | undefined;
    try {
      if (fullSync && !(await this.takePreparedBaseline())) await this.ensureBaseline();
      // What the maps' update (and, in a dual-stack node, the other family's sync) left behind
      // goes before a big full sync builds its payload on top of it.
      if (fullSync && input.services.size >= PORTS_FOR_FULL_COLLECTION_BEFORE) collectGarbage();
      const set = await this.computeRuleSet(request, scope, start);
      // What computing a big payload left behind is garbage now: collected before the restore,
      // which takes seconds and after which the commit allocates, rather than after both.
      const big = set.natRuleLines >= LINES_FOR_FULL_COLLECTION;
      if (big) collectGarbage();
      this.recordRuleCounts(set, input, scope.totalEndpoints);
      this.tableLines = set.filterLinesHeld + set.natRuleLines + set.skippedNatRuleLines;
      await this.restore(this.record.tap(set.payload, { table: "nat", chains: set.natChains }));
      this.record.commit(fullSync);
      rulesWritten = set.filterLinesWritten + set.natRuleLines;
      // A throttled sweep's period runs from the end of the sync that swept: when a restore
      // takes longer than the period (upstream's 5,000 x 50 takes ~40 s against 30 s), timing it
      // from the start would make the next sync, a one-endpoint change, pay iptables-save again
      // (3 s of a 3.1 s change measured there).
      // (existingNatChainsIfDue stamps a sweep with the sync's start, so equality means this one swept.)
      if (this.lastCleanup === start) this.lastCleanup = this.clock.now();
      this.book.synced(fullSync, start);
      this.builder.commit(set);
      await this.afterSuccess(input, set);
      if (big) collectAfterThisSync();
    } catch (err) {
      // The change sets of this sync are consumed: only a full sync can catch up.
      this.book.requestFullSync();
      this.record.abandon();
      if (!fullSync) this.deps.metrics.iptablesPartialRestoreFailures.inc();
      this.log.info("Sync failed; the next sync is a full one", { ipFamily: this.deps.family });
      throw err;
    } finally {
      this.observeDuration(start, fullSync);
      const written = rulesWritten === undefined ? undefined : { count: rulesWritten, unit: "rules" };
      input.note?.family(this.deps.family, fullSync, written);
    }
  }

  /**
   * Full or partial, and how big the cluster is. The periodic full sync is skipped in large
   * clusters, where rewriting every chain is what partial syncs exist to avoid.
   */
  private async chooseScope(
    input: SyncInput,
    now: number,
  ): Promise<{ request: ScopeRequest; scope: SyncScope }> {
    // Counting a cluster's endpoints walks every port: paced, the servers answer meanwhile.
    const slice = new TimeSlice();
    let request = this.scopeRequest(input, this.book.fullSyncNeeded);
    let scope = await this.builder.scope(request, this.deps.family, slice);
    this.largeClusterMode = scope.totalEndpoints > LARGE_CLUSTER_ENDPOINTS_THRESHOLD;
    if (!request.fullSync && !this.largeClusterMode && this.book.periodicFullSyncDue(now)) {
      request = { ...request, fullSync: true };
      scope = await this.builder.scope(request, this.deps.family, slice);
    }
    return { request, scope };
  }

  /** One canary check; true when the tables were flushed (the next sync is then a full one). */
  async checkCanaries(): Promise<boolean> {
    const state = await checkCanaryChains(this.deps.iptables, this.canariesInstalled, this.log);
    this.canariesInstalled = true;
    if (state !== "flushed") return false;
    this.log.v(2).info("Reloading after iptables flush", { ipFamily: this.deps.family });
    this.book.requestFullSync();
    return true;
  }

  /** A monitor polling the canaries every iptables.syncPeriod; onFlush should queue a sync. */
  canaryMonitor(onFlush: () => void): CanaryMonitor {
    return new CanaryMonitor({
      intervalMs: this.deps.config.iptables.syncPeriod,
      clock: this.clock,
      check: () => this.checkCanaries(),
      onFlush,
      logger: this.log,
    });
  }

  /** Whether a prepare() made the baseline this full sync needs (used once: later full syncs redo it). */
  private async takePreparedBaseline(): Promise<boolean> {
    const prepared = this.preparedBaseline;
    if (!prepared) return false;
    this.preparedBaseline = Promise.resolve(false);
    return prepared;
  }

  /** Jump rules from the built-in chains and the nfacct counters: full syncs only. */
  private async ensureBaseline(): Promise<void> {
    const ipt = this.deps.iptables;
    for (const j of JUMP_CHAINS) {
      try {
        await ipt.ensureChain(j.table, j.dstChain);
      } catch (err) {
        this.log.error("Failed to ensure chain exists", {
          table: j.table,
          chain: j.dstChain,
          err: errText(err),
        });
        throw err;
      }
      try {
        await ipt.ensureRule("prepend", j.table, j.srcChain, jumpRuleArgs(j));
      } catch (err) {
        const kv = { table: j.table, srcChain: j.srcChain, dstChain: j.dstChain, err: errText(err) };
        this.log.error("Failed to ensure chain jumps", kv);
        throw err;
      }
    }
    await this.ensureCounters();
  }

  private async ensureCounters(): Promise<void> {
    const nfacct = this.deps.nfacct;
    if (!nfacct) return;
    for (const name of this.counters.keys()) {
      try {
        await nfacct.ensure(name);
        this.counters.set(name, true);
      } catch (err) {
        this.counters.set(name, false);
        this.log.error("Failed to create nfacct counter; the corresponding metric will not be updated", {
          counter: name,
          err: errText(err),
        });
      }
    }
  }

  private async settings(): Promise<RuleSetSettings> {
    this.randomFully ??= await this.deps.iptables.hasRandomFully();
    return {
      family: this.deps.family,
      mark: this.fixed.mark,
      randomFully: this.randomFully,
      masqueradeAll: this.deps.config.iptables.masqueradeAll,
      localDetector: this.book.detector,
      localhostNodePorts: this.fixed.localhostNodePorts,
      countLocalhostNodePorts:
        this.fixed.localhostNodePorts && this.counters.get(LOCALHOST_NODEPORTS_COUNTER) === true,
      countInvalidDrops: this.counters.get(CT_STATE_INVALID_DROPPED_COUNTER) === true,
      conntrackTCPLiberal: this.fixed.conntrackTCPLiberal,
      nodeIP: this.deps.nodeIPs[this.deps.family],
      probabilities: this.probabilities,
    };
  }

  private scopeRequest(input: SyncInput, fullSync: boolean): ScopeRequest {
    const changedServices = new Set(input.serviceUpdate.updatedServices);
    for (const key of input.endpointsUpdate.updatedServices) changedServices.add(key);
    return {
      sources: input,
      fullSync,
      changedServices,
      servicesChanged: input.serviceUpdate.updatedServices.size > 0,
    };
  }

  private async computeRuleSet(req: ScopeRequest, scope: SyncScope, now: number): Promise<RuleSet> {
    const settings = await this.settings();
    const existingNatChains = await this.existingNatChainsIfDue(
      now,
      req.fullSync,
      req.changedServices.size > 0,
    );
    const nodePortIPs = await this.nodePortIPs();
    const request = {
      ...req,
      nodeName: this.deps.nodeName,
      nodeLabels: this.book.nodeLabels,
      featureGates: this.deps.featureGates ?? DEFAULT_FEATURE_GATES,
      largeClusterMode: this.largeClusterMode,
      existingNatChains,
      nodePortIPs,
      nowMs: now,
      syncPeriodMs: this.deps.config.iptables.syncPeriod,
    };
    return this.builder.build(request, scope, settings);
  }

  // iptables-save can take seconds on big hosts: in large clusters sweep once per sync period.
  // So too when the tables are big or the last sweep itself was slow (iptables-nft-save reads
  // every table: one Service with 100,000 ports and no endpoints puts 100,000 rules in filter,
  // and each save then took 4-9 s).
  // There, a full sync after the first leaves a due sweep to the next sync (a partial one, at
  // the latest a sync period later): the sweep's chain list and the full payload at once were
  // the daemon's peak (10,000 x 10: 273 MiB, against 226 for either alone). The first sync
  // still sweeps: on a fresh node the tables are empty, and deferring it made the first change
  // after start pay for a sweep of the whole table.
  private async existingNatChainsIfDue(
    now: number,
    fullSync: boolean,
    changes: boolean,
  ): Promise<Iterable<string> | undefined> {
    const throttled =
      this.largeClusterMode || this.lastSweepMs > SLOW_SWEEP_MS || this.tableLines > LINES_FOR_SLOW_SWEEP;
    const swept = this.lastCleanup !== Number.NEGATIVE_INFINITY;
    const period = this.deps.config.iptables.syncPeriod;
    const since = now - this.lastCleanup;
    // A sync carrying changes leaves a due sweep to the periodic sync with none (a change should
    // not wait for a whole iptables-save), unless the sweep is a second period overdue.
    const deferred = changes && since <= 2 * period;
    if (throttled && (since <= period || (swept && (fullSync || deferred)))) return undefined;
    try {
      const started = performance.now();
      // Only the chain declarations are read: the whole nat table is tens of MB at 10,000
      // Services, and holding it (bytes, then text) once a sync period was the daemon's peak.
      const chains = chainNamesInSave(await this.deps.iptables.save("nat", { linesStartingWith: ":" }));
      this.lastSweepMs = performance.now() - started;
      this.lastCleanup = now;
      return chains;
    } catch (err) {
      this.log.error("Failed to execute iptables-save: stale chains will not be deleted", {
        err: errText(err),
      });
      return undefined;
    }
  }

  /**
   * undefined when every local address takes NodePorts; else the matching node addresses. When
   * the addresses cannot be listed the sync fails here, before the restore: writing the rules
   * without the NodePort tail would silently close every NodePort.
   */
  private async nodePortIPs(): Promise<string[] | undefined> {
    const npa = this.fixed.nodePortAddresses;
    if (npa.matchAll) return undefined;
    let addresses: readonly string[];
    try {
      addresses = await this.deps.localAddresses();
    } catch (err) {
      this.log.error("Failed to list node addresses matching nodePortAddresses; keeping the previous rules", {
        CIDRs: npa.toString(),
        err: errText(err),
      });
      throw err;
    }
    return npa.nodeIPs(addresses).filter((ip) => this.acceptsNodePortsOn(ip));
  }

  private acceptsNodePortsOn(ip: string): boolean {
    if (!isLoopbackLenient(ip)) return true;
    if (this.deps.family === "IPv6") {
      this.log.error(
        "--nodeport-addresses includes localhost but localhost NodePorts are not supported on IPv6",
        {
          address: ip,
        },
      );
      return false;
    }
    if (this.fixed.localhostNodePorts) return true;
    this.log.error(
      "--nodeport-addresses includes localhost but --iptables-localhost-nodeports=false was passed",
      {
        address: ip,
      },
    );
    return false;
  }

  private recordRuleCounts(set: RuleSet, input: SyncInput, totalEndpoints: number): void {
    const m = this.deps.metrics;
    m.iptablesRulesTotal.set({ table: "filter" }, set.filterLinesHeld);
    m.iptablesRulesLastSync.set({ table: "filter" }, set.filterLinesWritten);
    m.iptablesRulesTotal.set({ table: "nat" }, set.natRuleLines + set.skippedNatRuleLines);
    m.iptablesRulesLastSync.set({ table: "nat" }, set.natRuleLines);
    this.log.v(2).info("Reloading service iptables data", {
      numServices: input.services.size,
      numEndpoints: totalEndpoints,
      numRewrittenServicePorts: set.rewrittenPorts,
      numFilterRules: set.filterRuleLines,
      numNATRules: set.natRuleLines,
      numDeletedChains: set.deletedChains.length,
      filterTable: set.filterEdit.kind,
      numFilterRulesWritten: set.filterLinesWritten,
    });
    const v9 = this.log.v(9);
    if (v9.enabled) v9.info("Restoring iptables", { rules: restoreInputText(set.payload) });
  }

  private async restore(payload: RestoreInput): Promise<void> {
    try {
      // --noflush: chains we do not name (other software's) are left alone.
      await this.deps.iptables.restoreAll(payload, { noFlush: true, counters: true });
    } catch (err) {
      this.log.error("Failed to execute iptables-restore", restoreFailureFields(err));
      this.deps.metrics.iptablesRestoreFailures.inc();
      throw err;
    }
  }

  private async afterSuccess(input: SyncInput, set: RuleSet): Promise<void> {
    await this.book.afterSuccess(input, { internal: set.noLocalInternal, external: set.noLocalExternal });
  }

  private observeDuration(start: number, fullSync: boolean): void {
    this.book.observeDuration(Math.max(0, this.clock.now() - start) / 1000, fullSync);
    // Full syncs are the memory peaks: what the process holds after one is worth a line.
    if (fullSync)
      this.log.v(2).info("Memory after a full sync", { ipFamily: this.deps.family, ...memoryFigures() });
  }
}

/**
 * A big sync leaves its payload (the blocks made as the restore read them, and what they were
 * made from) and its own garbage behind (tens of MB at 10k x 10), and while the proxier waits
 * for changes nothing allocates, so nothing would collect them. Collected once the sync has
 * returned and they are out of reach.
 */
function collectAfterThisSync(): void {
  const timer = setTimeout(collectGarbage, 0) as { unref?: () => void };
  timer.unref?.();
}
