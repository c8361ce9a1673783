// What one sync writes into one family's `kube-proxy` table, and what the proxier remembers of
// it. A full sync writes the fixed part and every service port; a partial sync rewrites only
// the ports of changed Services: their chains, affinity sets and the elements that differ.
// Chains nobody uses any more are flushed at once and deleted a second later (a kernel before
// 6.2 may still see a just-deleted map element pointing at them); affinity sets go at once.

import { HostInputError } from "../../host/errors.ts";
import type { NftTransaction } from "../../host/nft/transaction.ts";
import { type Logger, nullLogger } from "../../log/logger.ts";
import { familyPortIds, familyView, usableEndpoints } from "../../proxy/family-view.ts";
import type { SyncInput } from "../../proxy/proxier.ts";
import { type ServiceKey, type ServicePortInfo, serviceKey } from "../../proxy/types.ts";
import { collectGarbage, collectYoungGarbage } from "../../runtime.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { lowerProtocol } from "../../util/net/protocol.ts";
import { StringMap } from "../../util/string-map.ts";
import { ITEMS_PER_STEP, runSteps, type Steps } from "../../util/time-slice.ts";
import { ElementStore, type HeldElements } from "./element-store.ts";
import { addNames, type NameList, nameList, namesIn } from "./name-list.ts";
import { CLUSTER_IPS_CHECK, isAffinitySetName, isServiceChainName } from "./names.ts";
import { PortNames, type PortRuleSettings, portRules } from "./port-rules.ts";
import {
  deleteObsoleteChains,
  ensureChain,
  type SetupSettings,
  writeClusterIPsCheckRules,
  writeSetup,
} from "./setup.ts";

/**
 * Full syncs collect young garbage after this many ports (about a millisecond each time while
 * the heap is small; past this many ports, after a thirty-second of the ports so far, as a young
 * collection too costs more the bigger the heap: 9 ms each at a 100,000-port Service).
 */
const PORTS_PER_COLLECTION = 256;

/**
 * ...and all garbage after this many: what outlived a young collection (the lines of a block
 * not yet joined) is old garbage once joined, which only a full collection frees. Left alone it
 * grew about 30 MB above the live heap at 10,000 Services; four full collections of ~50 ms
 * each keep the peak near what the sync really holds. A full collection costs what the heap
 * holds, which grows with the ports written, so past this many the gap grows with them too
 * (half the ports so far): a 100,000-port Service then pays a few collections per doubling
 * instead of forty ever dearer ones (15 s of CPU, against 3 s without them).
 */
const PORTS_PER_FULL_COLLECTION = 2500;

/**
 * The same by the operations written, for ports that are big on their own (100 ports of 10,000
 * endpoints each are three million operations): without it their garbage is never collected
 * during the sync and outgrows the transaction itself.
 */
const OPS_PER_COLLECTION = 131_072;
const OPS_PER_FULL_COLLECTION = 2_000_000;
/** Above this many changed ports, a partial sync is made as nft reads it (see writeChangedPorts). */
const PORTS_WRITTEN_AT_ONCE = 1000;

/** Chains deleted no earlier than this after they were flushed. */
export const STALE_CHAIN_DELAY_MS = 1000;

const NO_IDS: readonly string[] = [];

/** What is kept of a written port until it changes (one per service port: kept small). */
interface PortRecord extends HeldElements {
  readonly serviceKey: ServiceKey;
  /** Its names, hashed once while the port exists (kept over full syncs too). */
  readonly names: PortNames;
  readonly chains: NameList;
  readonly affinitySets: NameList;
  /** NO_LOCAL_INTERNAL and NO_LOCAL_EXTERNAL bits: one field for the two. */
  readonly noLocal: number;
}

const NO_LOCAL_INTERNAL = 1;
const NO_LOCAL_EXTERNAL = 2;

export interface TableSyncRequest {
  readonly input: SyncInput;
  readonly fullSync: boolean;
  /** Services whose ports or endpoints changed since the last successful sync. */
  readonly changedServices: ReadonlySet<ServiceKey>;
  /** Full syncs: the fixed part of the table. */
  readonly setup: Omit<SetupSettings, "recreateBaseChains" | "serviceCIDRs"> | undefined;
  /**
   * This family's ServiceCIDRs: a partial sync rewrites cluster-ips-check when they differ from
   * what the table holds (upstream waits for its next full sync, up to an hour).
   */
  readonly serviceCIDRs: readonly string[];
  /** Full syncs: the table's chains and sets as listed before the sync (undefined: unknown). */
  readonly existing?: { readonly chains: readonly string[]; readonly sets: readonly string[] };
  readonly rules: PortRuleSettings;
  readonly now: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export interface TableSyncResult {
  readonly rewrittenPorts: number;
  readonly staleChains: number;
  readonly noLocalInternal: number;
  readonly noLocalExternal: number;
}

export class TableSync {
  /** By id: a StringMap, as there is a record per service port (a Map's costs ~68 bytes). */
  private records = new StringMap<PortRecord>();
  /** The ids of each Service's records (StringMaps: a Set's entry costs ~52 bytes, a port). */
  private readonly idsByService = new Map<ServiceKey, StringMap<true>>();
  /** During a full sync: the names of the ports written before it, until each is written again. */
  private previousNames: Map<string, PortNames> | undefined;
  private readonly elements = new ElementStore();
  private readonly staleChains = new Map<string, number>();
  private baseChainsRecreated = false;
  /** The ServiceCIDRs cluster-ips-check was last written with (undefined: not yet written). */
  private writtenServiceCIDRs: string | undefined;
  /** During a full sync: the chains the table held before it, listed or recorded (undefined: not known). */
  private listedChains: ReadonlySet<string> | undefined;
  private noLocalInternal = 0;
  private noLocalExternal = 0;
  /** Ports skipped because nft could not be given their names, with what was logged for each. */
  private readonly refused = new Map<string, string>();

  constructor(
    private readonly family: IPFamily,
    private readonly log: Logger = nullLogger,
  ) {}

  /** Chains flushed at least STALE_CHAIN_DELAY_MS ago: deleted (in a transaction of their own). */
  takeDueStaleChains(now: number): string[] {
    const due: string[] = [];
    for (const [chain, since] of this.staleChains) {
      if (now - since < STALE_CHAIN_DELAY_MS) continue;
      due.push(chain);
      this.staleChains.delete(chain);
    }
    return due.sort();
  }

  get pendingStaleChains(): number {
    return this.staleChains.size;
  }

  /** After a failed transaction nothing recorded can be trusted: the next sync is a full one. */
  forgetStaleChains(): void {
    this.staleChains.clear();
    this.writtenServiceCIDRs = undefined;
  }

  /**
   * Writes a sync into `tx`. A full sync's service ports are a part of `tx` made as nft reads
   * it (a 10,000-Service table is never held as text), so its result is final only once `tx`
   * has been read in full; a partial sync's is final at once.
   */
  write(tx: NftTransaction, req: TableSyncRequest): TableSyncResult {
    const result: Mutable<TableSyncResult> = {
      rewrittenPorts: 0,
      staleChains: 0,
      noLocalInternal: 0,
      noLocalExternal: 0,
    };
    const cidrs = req.serviceCIDRs.join(",");
    if (!req.fullSync) {
      if (this.writtenServiceCIDRs !== undefined && this.writtenServiceCIDRs !== cidrs) {
        tx.flush({ kind: "chain", name: CLUSTER_IPS_CHECK });
        writeClusterIPsCheckRules(tx, req.rules.words, req.serviceCIDRs);
        this.writtenServiceCIDRs = cidrs;
      }
      this.writeChangedPorts(tx, req, result);
      return result;
    }
    if (!req.setup) throw new Error("a full sync needs the table's fixed settings");
    writeSetup(tx, {
      ...req.setup,
      serviceCIDRs: req.serviceCIDRs,
      recreateBaseChains: !this.baseChainsRecreated,
    });
    this.baseChainsRecreated = true;
    this.writtenServiceCIDRs = cidrs;
    // What the table holds (listed, or recorded): when unknown, what the last sync wrote.
    const existing = req.existing ?? this.writtenObjects();
    // The names outlive the records (hashing them is most of a full sync's work); the rest of
    // a record is garbage from here on.
    this.previousNames = new Map();
    for (const [id, r] of this.records) this.previousNames.set(id, r.names);
    this.records = new StringMap();
    this.idsByService.clear();
    this.elements.reset();
    this.noLocalInternal = 0;
    this.noLocalExternal = 0;
    tx.defer((t) => this.writeAllPorts(t, req, existing, result));
    return result;
  }

  private *writeAllPorts(
    tx: NftTransaction,
    req: TableSyncRequest,
    existing: { readonly chains: readonly string[]; readonly sets: readonly string[] },
    result: Mutable<TableSyncResult>,
  ): Generator<void> {
    // Chains the table did not hold are created by this transaction: nothing to flush.
    this.listedChains = req.existing ? new Set(req.existing.chains) : undefined;
    // Ports of Services with no ClusterIP of this family write nothing here: not visited.
    const ids = yield* familyPortIds(req.input.services, this.family);
    let youngAt = tx.size;
    let fullAt = tx.size;
    let fullAtPort = 0;
    let youngAtPort = 0;
    // Collections are paced by the ports written: one this family skips (none of its
    // addresses) leaves nothing behind.
    let written = 0;
    for (const id of ids) {
      if (!(yield* this.renderPort(tx, req, id, undefined))) {
        yield;
        continue;
      }
      result.rewrittenPorts++;
      written++;
      // Every port leaves its rule texts behind once they are lines: collected as we go, or
      // a 10,000-Service sync piles up a few hundred MB before the runtime collects on its own.
      const ops = tx.size;
      if (
        written - fullAtPort >= Math.max(PORTS_PER_FULL_COLLECTION, fullAtPort / 2) ||
        ops - fullAt >= Math.max(OPS_PER_FULL_COLLECTION, fullAt / 2)
      ) {
        collectGarbage();
        fullAt = youngAt = ops;
        fullAtPort = youngAtPort = written;
      } else if (
        written - youngAtPort >= Math.max(PORTS_PER_COLLECTION, youngAtPort / 32) ||
        ops - youngAt >= Math.max(OPS_PER_COLLECTION, youngAt / 32)
      ) {
        collectYoungGarbage();
        youngAt = ops;
        youngAtPort = written;
      }
      yield;
    }
    this.listedChains = undefined;
    const flushedStale: string[] = [];
    const deletedSets: string[] = [];
    const active = this.activeChains();
    const activeSets = this.activeSets();
    for (const chain of existing.chains) {
      if (!isServiceChainName(chain) || active.has(chain)) continue;
      if (!this.staleChains.has(chain)) flushedStale.push(chain);
    }
    for (const chain of this.staleChains.keys()) if (active.has(chain)) this.staleChains.delete(chain);
    for (const set of existing.sets)
      if (isAffinitySetName(set) && !activeSets.has(set)) deletedSets.push(set);
    this.previousNames = undefined;
    for (const id of this.refused.keys()) if (!req.input.services.has(id)) this.refused.delete(id);
    this.writeStale(tx, req, flushedStale, deletedSets, result);
    // Last: every chain that could jump to them is rewritten or flushed by now.
    deleteObsoleteChains(tx, existing.chains);
  }

  private writeChangedPorts(
    tx: NftTransaction,
    req: TableSyncRequest,
    result: Mutable<TableSyncResult>,
  ): void {
    // How many ports change, without listing them: a Service's ids are its own, so between the
    // larger of its written and wanted counts and their sum. Listed here only when these
    // bounds do not decide (at most twice PORTS_WRITTEN_AT_ONCE ids).
    let least = 0;
    let most = 0;
    for (const key of req.changedServices) {
      const written = this.idsByService.get(key)?.size ?? 0;
      const wanted = this.wantedIds(req, key).length;
      least += Math.max(written, wanted);
      most += written + wanted;
    }
    const ids =
      least <= PORTS_WRITTEN_AT_ONCE && most > PORTS_WRITTEN_AT_ONCE
        ? runSteps(this.changedPortIds(req))
        : undefined;
    // A change as big as a full sync (a Service with 100,000 ports) is made as nft reads it, like
    // a full sync, so the servers are not held up meanwhile; a small one is written at once.
    if ((ids?.length ?? least) > PORTS_WRITTEN_AT_ONCE) {
      tx.defer((t) => this.changedPorts(t, req, result, ids));
      return;
    }
    for (const _ of this.changedPorts(tx, req, result, ids));
  }

  /** The ids of the changed Services' ports, written or wanted, in steps; sorted. */
  private *changedPortIds(req: TableSyncRequest): Steps<string[]> {
    const ids = new Set<string>();
    for (const key of req.changedServices) {
      for (const id of this.idsByService.get(key)?.keys() ?? []) {
        ids.add(id);
        if (ids.size % ITEMS_PER_STEP === 0) yield;
      }
      for (const id of this.wantedIds(req, key)) {
        ids.add(id);
        if (ids.size % ITEMS_PER_STEP === 0) yield;
      }
    }
    yield;
    return [...ids].sort();
  }

  /**
   * The ids of `key`'s ports that this family writes: none when the Service has no ClusterIP
   * of it (a Service's ClusterIPs are its ports' own), as held by the map (read, never kept).
   */
  private wantedIds(req: TableSyncRequest, key: ServiceKey): readonly string[] {
    const ids = req.input.services.portIdsOf(key);
    const first = ids.length > 0 ? req.input.services.get(ids[0]!) : undefined;
    return first?.clusterIPs[this.family] ? ids : NO_IDS;
  }

  private *changedPorts(
    tx: NftTransaction,
    req: TableSyncRequest,
    result: Mutable<TableSyncResult>,
    listed: readonly string[] | undefined,
  ): Generator<void> {
    const flushedStale: string[] = [];
    const deletedSets: string[] = [];
    const ids = listed ?? (yield* this.changedPortIds(req));
    for (const id of ids) {
      yield;
      const before = this.records.get(id);
      const after = yield* this.renderPort(tx, req, id, before);
      if (after) result.rewrittenPorts++;
      if (!before) continue;
      const keptChains = new Set<string>();
      if (after) addNames(keptChains, after.chains);
      for (const c of namesIn(before.chains)) {
        if (!keptChains.has(c) && !this.staleChains.has(c)) flushedStale.push(c);
      }
      const keptSets = new Set<string>();
      if (after) addNames(keptSets, after.affinitySets);
      for (const s of namesIn(before.affinitySets)) if (!keptSets.has(s)) deletedSets.push(s);
    }
    this.writeStale(tx, req, flushedStale, deletedSets, result);
  }

  // Flushed before sets are deleted: a stale endpoint chain may still update its set.
  private writeStale(
    tx: NftTransaction,
    req: TableSyncRequest,
    flushedStale: string[],
    deletedSets: string[],
    result: Mutable<TableSyncResult>,
  ): void {
    for (const chain of flushedStale.sort()) {
      tx.flush({ kind: "chain", name: chain });
      this.staleChains.set(chain, req.now);
    }
    for (const set of deletedSets.sort()) tx.delete({ kind: "set", name: set });
    result.staleChains = flushedStale.length;
    result.noLocalInternal = this.noLocalInternal;
    result.noLocalExternal = this.noLocalExternal;
  }

  /**
   * (Re)writes one port: its chains and sets, elements added before the previous ones are
   * released (an element both need stays untouched). Undefined when the port is gone or has
   * nothing in this family. Pauses within a port of many elements.
   */
  private *renderPort(
    tx: NftTransaction,
    req: TableSyncRequest,
    id: string,
    before: PortRecord | undefined,
  ): Generator<void, PortRecord | undefined> {
    const svc = req.input.services.get(id);
    const view = svc && familyView(svc, this.family);
    let record: PortRecord | undefined;
    const known = before?.names ?? this.previousNames?.get(id);
    this.previousNames?.delete(id);
    const computed = svc && view ? this.computePort(req, id, svc, view, known) : undefined;
    if (svc && computed) {
      const { out, names } = computed;
      // Every chain exists before any rule or element jumps to it...
      for (const c of out.chains) {
        ensureChain(tx, c.name, undefined, this.listedChains?.has(c.name) ?? true);
        this.staleChains.delete(c.name);
      }
      // Affinity sets too: policy chains match them, endpoint chains update them.
      for (const set of out.affinitySets) tx.add(set);
      for (const c of out.chains) for (const r of c.rules) tx.add({ kind: "rule", chain: c.name, ...r });
      const held = yield* this.elements.ensureAll(tx, out.elements);
      record = {
        serviceKey: serviceKeyOf(svc, before),
        names,
        runs: held.runs,
        chains: nameList(out.chains.map((c) => c.name)),
        affinitySets: nameList(out.affinitySets.map((s) => s.name)),
        noLocal:
          (out.noLocalInternal ? NO_LOCAL_INTERNAL : 0) | (out.noLocalExternal ? NO_LOCAL_EXTERNAL : 0),
      };
    }
    if (before) {
      yield* this.elements.releaseAll(tx, before);
      this.count(before, -1);
      this.idsByService.get(before.serviceKey)?.delete(id);
      this.records.delete(id);
    }
    if (record) {
      this.records.set(id, record);
      let ids = this.idsByService.get(record.serviceKey);
      if (!ids) {
        ids = new StringMap();
        this.idsByService.set(record.serviceKey, ids);
      }
      ids.set(id, true);
      this.count(record, 1);
    }
    return record;
  }

  /**
   * The port's names and rules; undefined, logged once, when nft could not be given them (a
   * name or address no API server would accept): the port is skipped, the rest of the sync
   * goes on. Nothing is written to the transaction before this answers.
   */
  private computePort(
    req: TableSyncRequest,
    id: string,
    svc: ServicePortInfo,
    view: Parameters<typeof portRules>[0],
    known: PortNames | undefined,
  ): { out: ReturnType<typeof portRules>; names: PortNames } | undefined {
    try {
      // Names are made again when the protocol changed (the id names the port, not its protocol).
      const names = known?.protocol === lowerProtocol(svc.protocol) ? known : new PortNames(view);
      const endpoints = usableEndpoints(
        svc,
        req.input.endpoints.get(id),
        req.input.endpoints.portName(id)?.protocol,
        this.family,
      );
      const out = portRules(view, endpoints, names, req.rules);
      this.refused.delete(id);
      return { out, names };
    } catch (err) {
      if (!(err instanceof HostInputError)) throw err;
      if (this.refused.get(id) !== err.message) {
        this.refused.set(id, err.message);
        this.log.error("Skipping service port: nftables cannot be given its names", {
          servicePort: id,
          ipFamily: this.family,
          err: err.message,
        });
      }
      return undefined;
    }
  }

  private count(r: PortRecord, sign: 1 | -1): void {
    if (r.noLocal & NO_LOCAL_INTERNAL) this.noLocalInternal += sign;
    if (r.noLocal & NO_LOCAL_EXTERNAL) this.noLocalExternal += sign;
  }

  private writtenObjects(): { chains: string[]; sets: string[] } {
    return { chains: [...this.activeChains()], sets: [...this.activeSets()] };
  }

  /**
   * What the table holds by this proxier's own record: the chains and affinity sets its syncs
   * wrote, and the chains flushed but not yet deleted. True of the kernel once a sync that
   * listed the table succeeded, for as long as every transaction since did.
   */
  recordedObjects(): { chains: string[]; sets: string[] } {
    const written = this.writtenObjects();
    for (const chain of this.staleChains.keys()) written.chains.push(chain);
    return written;
  }

  /** The elements the element store holds (what the syncs since the last full one wrote). */
  recordedElements(): Iterable<readonly [string, string, string]> {
    return this.elements.elements();
  }

  private activeChains(): Set<string> {
    const out = new Set<string>();
    for (const r of this.records.values()) addNames(out, r.chains);
    return out;
  }

  private activeSets(): Set<string> {
    const out = new Set<string>();
    for (const r of this.records.values()) addNames(out, r.affinitySets);
    return out;
  }
}

// The ports of one Service come one after another in a sync: they share one key string.
let lastKey = "";

/** "ns/name" of the port's Service: the previous record's, or the string its Service's ports share. */
function serviceKeyOf(svc: ServicePortInfo, before: PortRecord | undefined): ServiceKey {
  const key = before?.serviceKey ?? lastKey;
  const { namespace, name } = svc.name;
  if (key.length === namespace.length + 1 + name.length && key.startsWith(namespace) && key.endsWith(name))
    return key;
  lastKey = serviceKey(namespace, name);
  return lastKey;
}
