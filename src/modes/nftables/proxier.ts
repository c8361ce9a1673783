// The nftables proxier for one IP family (a dual-stack node runs two, one per table). Each sync
// is one nft transaction: a full one (at start, after any failure, when the Node's labels or
// pod CIDRs change, and hourly) writes the whole table; a partial one only the ports of
// changed Services. Chains left stale by an earlier sync are deleted first, on their own.

import { DEFAULT_FEATURE_GATES, type EffectiveFeatureGates } from "../../config/feature-gates.ts";
import type { ProxyConfig } from "../../config/types.ts";
import { NftError } from "../../host/nft/errors.ts";
import { parseNftTableListing } from "../../host/nft/table-listing.ts";
import { NftTransaction } from "../../host/nft/transaction.ts";
import type { NftClient } from "../../host/nft/types.ts";
import type { Logger } from "../../log/logger.ts";
import type { ConntrackCleaner } from "../../proxy/conntrack-cleanup.ts";
import type { FamilyDrift } from "../../proxy/drift.ts";
import type { LocalTrafficDetector } from "../../proxy/local-detect.ts";
import type { Metrics } from "../../proxy/metrics/metrics.ts";
import { masqueradeMark } from "../../proxy/netfilter/masquerade.ts";
import { NodePortAddresses, resolveNodePortAddresses } from "../../proxy/nodeport-addresses.ts";
import type { Proxier, SyncInput } from "../../proxy/proxier.ts";
import type { ServiceHealthSink } from "../../proxy/service-health-sink.ts";
import { SyncBookkeeping } from "../../proxy/sync-bookkeeping.ts";
import { SyncWatch } from "../../proxy/sync-watch.ts";
import type { ServiceKey } from "../../proxy/types.ts";
import { collectGarbage } from "../../runtime.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import { errText } from "../../util/err-text.ts";
import { isLoopbackLenient } from "../../util/net/address.ts";
import { familyOf, type IPFamily, nftFamily } from "../../util/net/family.ts";
import { nftablesDrift } from "./drift.ts";
import { KUBE_PROXY_TABLE } from "./names.ts";
import { ELEMENT_CONTAINERS, familyWords } from "./setup.ts";
import { TableSync } from "./table-sync.ts";
import { WrittenRecord } from "./written-record.ts";

const STORE_CONTAINERS: ReadonlySet<string> = new Set(ELEMENT_CONTAINERS.map((c) => c.name));

/** A partial sync this big (about 1,500 Services x 10) leaves tens of MB behind it. */
const OPERATIONS_FOR_FULL_COLLECTION = 100_000;

/** A full collection once the sync has returned and its payload is out of reach. */
function collectSoon(): void {
  const timer = setTimeout(collectGarbage, 0) as { unref?: () => void };
  timer.unref?.();
}

export interface NftablesProxierDeps {
  /** A client bound to this family's `kube-proxy` table. */
  readonly nft: NftClient;
  readonly family: IPFamily;
  readonly config: ProxyConfig;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** This node's name: endpoints hinted for it are preferred (PreferSameNode). */
  readonly nodeName: string;
  readonly nodeIPs: Readonly<Partial<Record<IPFamily, string>>>;
  /** nodePortAddresses in effect (upstream's nftables mode defaults an empty list to "primary"). */
  readonly nodePortAddresses: readonly string[];
  /** All local addresses ("ip" or "ip/prefix"); read on full syncs when not every address takes NodePorts. */
  readonly localAddresses: () => Promise<readonly string[]>;
  readonly localDetector?: LocalTrafficDetector;
  readonly conntrack?: ConntrackCleaner;
  readonly healthCheck?: ServiceHealthSink;
  readonly clock?: Clock;
  readonly wallClock?: () => number;
  readonly featureGates?: EffectiveFeatureGates;
}

/** A failed transaction is written to the log at verbosity 4 at most this often. */
export const FAILED_TRANSACTION_DUMP_INTERVAL_MS = 24 * 60 * 60 * 1000;

export class NftablesProxier implements Proxier {
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly book: SyncBookkeeping;
  private readonly table: TableSync;
  /**
   * The table holds what TableSync recorded: a full sync then skips listing it (110,000 chains
   * at 10,000 Services: seconds of nft and tens of MB here). False at start and after any
   * failure, when only a listing tells what an earlier run or a failed delete left.
   */
  private recordTrusted = false;
  private lastTransactionDump = Number.NEGATIVE_INFINITY;
  private readonly mark: string;
  private readonly nodePorts: NodePortAddresses;
  /** What the transactions wrote, beside the element store (drift checks). */
  private readonly written = new WrittenRecord((c) => STORE_CONTAINERS.has(c));
  /** Whether a sync ran while a drift check read the kernel. */
  private readonly syncs = new SyncWatch();

  constructor(private readonly deps: NftablesProxierDeps) {
    this.log = deps.logger.named("nftables");
    this.clock = deps.clock ?? realClock;
    this.book = new SyncBookkeeping({ ...deps, log: this.log });
    this.table = new TableSync(deps.family, this.log);
    this.mark = masqueradeMark(deps.config.nftables.masqueradeBit);
    this.nodePorts = new NodePortAddresses(
      deps.family,
      resolveNodePortAddresses(deps.nodePortAddresses, deps.nodeIPs),
    );
    this.log.v(2).info("Using nftables mark for masquerade", { ipFamily: deps.family, mark: this.mark });
  }

  /** Forces the next sync to be a full one; `relist`: one that lists the table first. */
  requestFullSync(opts: { relist?: boolean } = {}): void {
    this.book.requestFullSync();
    if (opts.relist) this.recordTrusted = false;
  }

  sync(input: SyncInput): Promise<void> {
    return this.syncs.watch(() => this.syncNow(input));
  }

  /**
   * The table against the record of what the syncs wrote, between syncs. Skipped while a full
   * sync is pending (it rewrites everything), and when a sync ran while nft listed the table.
   */
  async drift(): Promise<FamilyDrift> {
    await this.syncs.idle();
    const family = this.deps.family;
    if (this.book.fullSyncNeeded || !this.written.valid)
      return { skipped: `${family}: a full sync is pending` };
    if (!this.deps.nft.listTableJson) return { skipped: `${family}: the nft client cannot list the table` };
    const mark = this.syncs.mark();
    const json = await this.deps.nft.listTableJson();
    if (this.syncs.changedSince(mark)) return { skipped: `${family}: a sync ran while the table was listed` };
    const listed = json === undefined ? undefined : parseNftTableListing(json, KUBE_PROXY_TABLE);
    const written = this.written;
    const table = this.table;
    const elements = function* (): Generator<readonly [string, string, string]> {
      yield* table.recordedElements();
      for (const [container, held] of written.elements)
        for (const [key, value] of held) yield [container, key, value];
    };
    const record = { chains: written.chains, containers: written.containers, elements: elements() };
    const where = `${nftFamily(family)} ${KUBE_PROXY_TABLE}`;
    return { differences: nftablesDrift(record, listed, where, family) };
  }

  private async syncNow(input: SyncInput): Promise<void> {
    const start = this.clock.now();
    if (this.book.observeNode(input.node)) this.book.requestFullSync();
    const fullSync = this.book.fullSyncNeeded || this.book.periodicFullSyncDue(start);
    this.log.v(2).info("Syncing nftables rules", { ipFamily: this.deps.family, fullSync });
    let operations: number | undefined;
    try {
      await this.deleteStaleChains(start);
      const existing = !fullSync
        ? undefined
        : this.recordTrusted
          ? this.table.recordedObjects()
          : await this.existingObjects();
      // A partial sync keeps its operations: a client that speaks netlink sends them as they are.
      const tx = new NftTransaction(nftFamily(this.deps.family), KUBE_PROXY_TABLE, {
        keepOperations: !fullSync,
        observe: this.written.observe,
        observesElementsOf: this.written.observesElementsOf,
      });
      if (fullSync) this.written.reset();
      const result = this.table.write(tx, {
        input,
        fullSync,
        changedServices: changedServices(input),
        setup: fullSync
          ? {
              family: this.deps.family,
              mark: this.mark,
              masqueradeAll: this.deps.config.nftables.masqueradeAll,
              ifNotLocal: this.book.detector.implemented
                ? this.book.detector.ifNotLocalNFT.join(" ")
                : undefined,
              nodePortIPs: await this.nodePortIPs(),
            }
          : undefined,
        serviceCIDRs: familyServiceCIDRs(input.serviceCIDRs, this.deps.family),
        ...(existing ? { existing } : {}),
        rules: {
          words: familyWords(this.deps.family),
          mark: this.mark,
          localDetector: this.book.detector,
          nodeIP: this.deps.nodeIPs[this.deps.family],
          topology: {
            nodeName: this.deps.nodeName,
            nodeLabels: this.book.nodeLabels,
            featureGates: this.deps.featureGates ?? DEFAULT_FEATURE_GATES,
          },
        },
        now: start,
      });
      // A full sync's service ports are computed as nft reads them: the counts below are known
      // only once it has.
      this.log.v(2).info("Reloading service nftables data", {
        numServices: input.services.size,
        fullSync,
      });
      // What the last sync and the listing left behind goes before nft takes its time; collected
      // again once the sync is over.
      const big = fullSync || tx.size >= OPERATIONS_FOR_FULL_COLLECTION;
      if (big) collectGarbage();
      const trace = this.log.v(9);
      if (trace.enabled) trace.info("Running nftables transaction", { transaction: tx.render() });
      await this.run(tx);
      operations = tx.size;
      if (!tx.isEmpty())
        this.log.v(2).info("Applied nftables transaction", {
          ipFamily: this.deps.family,
          numRewrittenServicePorts: result.rewrittenPorts,
          numStaleChains: result.staleChains,
          numOperations: tx.size,
        });
      if (big) collectSoon();
      if (existing) this.recordTrusted = true;
      if (fullSync) this.written.valid = true;
      this.book.synced(fullSync, start);
      await this.book.afterSuccess(input, {
        internal: result.noLocalInternal,
        external: result.noLocalExternal,
      });
    } catch (err) {
      // The change sets of this sync are consumed: only a full sync can catch up, and one that
      // reads the table again.
      this.book.requestFullSync();
      this.recordTrusted = false;
      this.written.valid = false;
      this.table.forgetStaleChains();
      this.log.info("Sync failed; the next sync is a full one", { ipFamily: this.deps.family });
      throw err;
    } finally {
      this.observeDuration(start, fullSync);
      const written = operations === undefined ? undefined : { count: operations, unit: "operations" };
      input.note?.family(this.deps.family, fullSync, written);
    }
  }

  private async run(tx: NftTransaction): Promise<void> {
    try {
      await this.deps.nft.run(tx);
    } catch (err) {
      this.log.error("nftables sync failed", { ipFamily: this.deps.family, err: errText(err) });
      this.deps.metrics.nftablesSyncFailures.inc();
      this.dumpFailedTransaction(tx);
      throw err;
    }
  }

  /**
   * At verbosity 4, the whole failed transaction, at most once a day (upstream 1.33): enough to
   * debug a rejected sync without writing tens of MB to the log at every retry.
   */
  private dumpFailedTransaction(tx: NftTransaction): void {
    const v4 = this.log.v(4);
    const now = this.clock.now();
    if (!v4.enabled || now - this.lastTransactionDump < FAILED_TRANSACTION_DUMP_INTERVAL_MS) return;
    this.lastTransactionDump = now;
    let transaction: string;
    try {
      transaction = tx.render();
    } catch {
      // A full sync's input is made as nft reads it and not kept (tens of MB at 10,000 Services).
      transaction = "(a full sync's input is not kept; nft's error above quotes the failing line)";
    }
    v4.info("Failed nftables transaction", { ipFamily: this.deps.family, transaction });
  }

  /** Chains flushed a second or more ago; a failure is logged and they are found again later. */
  private async deleteStaleChains(now: number): Promise<void> {
    const due = this.table.takeDueStaleChains(now);
    if (due.length === 0) return;
    const tx = new NftTransaction(nftFamily(this.deps.family), KUBE_PROXY_TABLE, {
      keepOperations: true,
      observe: this.written.observe,
    });
    for (const chain of due) tx.delete({ kind: "chain", name: chain });
    this.log.info("Deleting stale nftables chains", { ipFamily: this.deps.family, numChains: due.length });
    try {
      await this.deps.nft.run(tx);
    } catch (err) {
      // Still there: the next full sync lists them and flushes them again.
      this.recordTrusted = false;
      this.written.valid = false;
      this.log.error("Unable to delete stale chains; will retry later", { err: errText(err) });
      this.deps.metrics.nftablesCleanupFailures.inc();
    }
  }

  /** What the table holds before a full sync; undefined (unknown) when it cannot be listed. */
  private async existingObjects(): Promise<{ chains: string[]; sets: string[] } | undefined> {
    try {
      const listed = { chains: await this.deps.nft.list("chains"), sets: await this.deps.nft.list("sets") };
      // Reading 110,000 chain names (10,000 Services) leaves nft's output behind: gone before
      // the sync builds anything.
      collectGarbage();
      return listed;
    } catch (err) {
      if (err instanceof NftError && err.isNotFound()) return { chains: [], sets: [] };
      this.log.error("Failed to list nftables chains: stale chains will not be deleted", {
        err: errText(err),
      });
      return undefined;
    }
  }

  /**
   * undefined when every local address takes NodePorts; else the matching node addresses,
   * loopback refused (upstream's nftables mode has no localhost NodePorts). When the addresses
   * cannot be listed the sync fails here, before anything is written.
   */
  private async nodePortIPs(): Promise<string[] | undefined> {
    const npa = this.nodePorts;
    if (npa.matchAll) return undefined;
    let addresses: readonly string[];
    try {
      addresses = await this.deps.localAddresses();
    } catch (err) {
      this.log.error(
        "Failed to get node ip address matching nodeport cidrs, services with nodeport may not work as intended",
        {
          CIDRs: npa.toString(),
          err: errText(err),
        },
      );
      throw err;
    }
    return npa.nodeIPs(addresses).filter((ip) => {
      if (!isLoopbackLenient(ip)) return true;
      this.log.error("--nodeport-addresses includes localhost but localhost NodePorts are not supported", {
        address: ip,
      });
      return false;
    });
  }

  private observeDuration(start: number, fullSync: boolean): void {
    this.book.observeDuration(Math.max(0, this.clock.now() - start) / 1000, fullSync);
  }
}

/** Canonical CIDRs arrive here; the shape is checked again, as this text goes into nft input. */
const CIDR_SHAPE = /^[0-9a-f.:]+\/[0-9]{1,3}$/;

/** This family's ServiceCIDRs. */
function familyServiceCIDRs(cidrs: readonly string[], family: IPFamily): string[] {
  return cidrs.filter((cidr) => CIDR_SHAPE.test(cidr) && familyOf(cidr) === family);
}

function changedServices(input: SyncInput): Set<ServiceKey> {
  const out = new Set<ServiceKey>(input.serviceUpdate.updatedServices);
  for (const key of input.endpointsUpdate.updatedServices) out.add(key);
  return out;
}
