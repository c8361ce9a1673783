// Computes one sync's iptables-restore input. Synchronous and pure apart from the committed
// port states: the proxier does the I/O (iptables-save for stale chains, the restore) around
// it. Output lines are collected in joined blocks (line-blocks.ts), and the payload is made of
// those blocks: never joined into one string, the restore writes it piece by piece. The ports'
// own chain rules, most of a big payload, are only counted here and made as the restore reads
// them (a 10k x 10 full sync thus never holds its ~30 MB of them at once). Two
// walks produce it: the full walk over every Service port (full syncs, and partial syncs where
// Service objects changed), and the fast walk for endpoint-only changes, which writes unchanged
// ports chunk by chunk.

import { createHash } from "node:crypto";
import { familyPortIds, usableEndpointCount } from "../../proxy/family-view.ts";
import type { LocalTrafficDetector } from "../../proxy/local-detect.ts";
import { chainLine, KUBE_FIREWALL } from "../../proxy/netfilter/chains.ts";
import { masqueradeRules } from "../../proxy/netfilter/masquerade.ts";
import type { TopologyContext } from "../../proxy/topology.ts";
import type { EndpointInfo, ServicePortInfo } from "../../proxy/types.ts";
import { collectYoungGarbage } from "../../runtime.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { runStepsPaced, TimeSlice } from "../../util/time-slice.ts";
import { ChainDeclarations } from "./chain-declarations.ts";
import { isServiceChainName } from "./chains.ts";
import {
  FILTER_LINES_FOR_EDITS,
  type FilterEdit,
  FilterEdits,
  type PortFilterChange,
} from "./filter-edits.ts";
import { DeferredLineBlocks, LineBlocks, type LineSink } from "./line-blocks.ts";
import { CHUNK_SIZE, type Chunk, PortOrder } from "./port-order.ts";
import { type NatText, type PortState, portInputs } from "./port-state.ts";
import type { ProbabilityCache } from "./probability.ts";
import { type RenderOutput, renderPort } from "./render-port.ts";
import type { ChainRuleSettings } from "./service-chains.ts";
import {
  BLOCK_LOCALNET_RULE,
  FILTER_TOP_LEVEL_CHAINS,
  forwardRules,
  NAT_TOP_LEVEL_CHAINS,
  nodePortsTailForIP,
  nodePortsTailMatchAll,
  topLevelChainLines,
} from "./top-level.ts";

/**
 * Nat lines rendered between two young-generation collections. Each line leaves a few short-
 * lived strings behind (a 10k x 10 full sync writes 320k lines), and without these collections
 * their garbage peaks at ~80 MB before the runtime gets to it.
 */
const LINES_PER_COLLECTION = 32_768;

/** Nat lines from which a sync is big enough for full collections around its payload. */
export const LINES_FOR_FULL_COLLECTION = 100_000;

/** Above this many endpoints upstream switches to "large cluster mode". */
export const LARGE_CLUSTER_ENDPOINTS_THRESHOLD = 1000;

/** The service and endpoint maps as the sync controller hands them over. */
export interface RuleSetSources {
  readonly services: ReadonlyMap<string, ServicePortInfo>;
  readonly endpoints: {
    get(id: string): readonly EndpointInfo[] | undefined;
    portName(id: string): { readonly protocol: string } | undefined;
  };
}

export interface RuleSetSettings {
  readonly family: IPFamily;
  readonly mark: string;
  readonly randomFully: boolean;
  readonly masqueradeAll: boolean;
  readonly localDetector: LocalTrafficDetector;
  /** Effective value: IPv4 only, and only when nodePortAddresses include loopback. */
  readonly localhostNodePorts: boolean;
  readonly countLocalhostNodePorts: boolean;
  readonly countInvalidDrops: boolean;
  readonly conntrackTCPLiberal: boolean;
  readonly nodeIP: string | undefined;
  readonly probabilities: ProbabilityCache;
}

/** What changed: enough to pick the walk and size the cluster before rules are written. */
export interface ScopeRequest {
  readonly sources: RuleSetSources;
  /** Rewrite every service port's chains (otherwise only the changed ones). */
  readonly fullSync: boolean;
  /** Service keys ("ns/name") whose Service or endpoints changed since the last success. */
  readonly changedServices: ReadonlySet<string>;
  /** Whether any Service object changed (ports may have come or gone). */
  readonly servicesChanged: boolean;
}

export interface SyncScope {
  /** Endpoint-only partial sync: walk the committed order. */
  readonly fastPath: boolean;
  /** Positions in the committed order to re-render (fast path only). */
  readonly dirty: readonly number[];
  /** Endpoints of this family's service ports, any readiness (upstream's size measure). */
  readonly totalEndpoints: number;
}

export interface RuleSetRequest extends ScopeRequest, TopologyContext {
  readonly largeClusterMode: boolean;
  /** Chain names iptables-save reported for nat, when a stale-chain sweep is due. */
  readonly existingNatChains: Iterable<string> | undefined;
  /** undefined: nodePortAddresses match every local address. */
  readonly nodePortIPs: readonly string[] | undefined;
  /** Now, on the proxier's clock (how long unwanted filter rules have stayed: filter-edits.ts). */
  readonly nowMs: number;
  /** The sync period: the longest an unwanted filter rule stays. */
  readonly syncPeriodMs: number;
}

export interface RuleSet {
  /**
   * The restore input in pieces, in order: concatenated they are its text (types.ts
   * RestoreInput). Made as it is read, and made again if read again (for an error's context).
   */
  readonly payload: Iterable<string>;
  /** The nat chains the payload declares: the strings the port states hold. */
  readonly natChains: readonly string[];
  readonly filterRuleLines: number;
  /** Nat rules written, without the "-X" lines. */
  readonly natRuleLines: number;
  /** Nat rules of unchanged ports that this (partial) sync did not rewrite. */
  readonly skippedNatRuleLines: number;
  readonly deletedChains: readonly string[];
  /**
   * How the filter table was written: whole, as appended rules (a big table, filter-edits.ts),
   * or not at all (a partial sync that left it as the kernel holds it).
   */
  readonly filterEdit: FilterEdit;
  /** Filter lines in this payload. */
  readonly filterLinesWritten: number;
  /** Filter rules the kernel holds after this sync: the model's plus stale ones. */
  readonly filterLinesHeld: number;
  /** Digests of the filter table's text and of its part that is no port's, committed with the sync. */
  readonly filterDigest: string;
  readonly fixedFilterDigest: string;
  readonly rewrittenPorts: number;
  readonly noLocalInternal: number;
  readonly noLocalExternal: number;
  /** Applied to the committed state once the restore succeeded. */
  readonly commit:
    | { readonly order: PortState[] }
    | { readonly replacements: ReadonlyMap<number, PortState> };
}

interface Output extends RenderOutput {
  readonly filterRules: LineBlocks;
  readonly natChains: ChainDeclarations;
  readonly natRules: DeferredLineBlocks;
  readonly rendered: { readonly prev: PortState | undefined; readonly now: PortState }[];
  readonly removed: PortState[];
  skippedNatRuleLines: number;
  noLocalInternal: number;
  noLocalExternal: number;
  /** Nat entries written when garbage was last collected. */
  collectedAt: number;
}

function newOutput(settings: RuleSetSettings): Output {
  const natChains = new ChainDeclarations();
  natChains.pushAll(NAT_TOP_LEVEL_CHAINS);
  const natRules = new DeferredLineBlocks();
  natRules.pushAll(masqueradeRules(settings.mark, settings.randomFully));
  return {
    filterRules: new LineBlocks(),
    natChains,
    natRules,
    filterExtraLines: 0,
    natExtraLines: 0,
    rendered: [],
    removed: [],
    skippedNatRuleLines: 0,
    noLocalInternal: 0,
    noLocalExternal: 0,
    collectedAt: 0,
  };
}

/** Appends a cached block of `lines` lines (joined by newlines); returns the extra line count. */
function pushBlock(target: LineSink, text: string, lines: number): number {
  if (lines === 0) return 0;
  target.push(text);
  return lines - 1;
}

function reuse(s: PortState, out: Output): void {
  out.filterExtraLines += pushBlock(out.filterRules, s.extras.filterText, s.extras.filterLines);
  out.natExtraLines += pushNatTexts(out.natRules, [s.natText], s.natLines);
  out.skippedNatRuleLines += s.chainRuleLines;
}

/** Appends cached texts holding `lines` lines in all; returns the extra line count. */
function pushTexts(target: LineSink, texts: readonly string[], lines: number): number {
  for (const t of texts) target.push(t);
  return lines - texts.length;
}

/**
 * pushTexts for nat, where a port's lines may be written only as they are read (counted by the
 * section as deferred lines, so not in the extra count).
 */
function pushNatTexts(target: DeferredLineBlocks, texts: readonly NatText[], lines: number): number {
  if (lines === 0) return 0;
  let counted = 0;
  for (const t of texts) {
    if (typeof t === "string") {
      target.push(t);
      counted++;
    } else {
      target.defer(t);
      counted += t.lines;
    }
  }
  return lines - counted;
}

function reuseChunk(c: Chunk, out: Output): void {
  out.filterExtraLines += pushTexts(out.filterRules, c.filterTexts, c.filterLines);
  out.natExtraLines += pushNatTexts(out.natRules, c.natTexts, c.natLines);
  out.skippedNatRuleLines += c.chainRuleLines;
}

function countNoLocal(s: PortState, out: Output): void {
  if (s.extras.noLocalInternal) out.noLocalInternal++;
  if (s.extras.noLocalExternal) out.noLocalExternal++;
}

export class RuleSetBuilder {
  private readonly order = new PortOrder();
  /** The ids of the ports this family serves, sorted; made when Services change. */
  private sortedIds: string[] = [];
  /** The number of ports sortedIds was made from (-1: never made). */
  private sortedOfSize = -1;
  private committedOnce = false;
  /** The filter table the kernel holds since the last successful restore (its text's digest). */
  private committedFilterDigest: string | undefined;
  /** ...the digest of its lines that are no port's (chains, guard, forward rules)... */
  private committedFixedFilterDigest: string | undefined;
  /** ...its rules, stale ones included... */
  private committedFilterLines = 0;
  /** ...and the rules in it that no port wants any longer. */
  private readonly filterEdits: FilterEdits;
  /** Whether the build in progress is a full sync (the filter table is then always written). */
  private fullSync = false;
  /** Settings of the build in progress (they change only on full syncs). */
  private settings!: RuleSetSettings;

  /** `filterLinesForEdits`: where a big filter table starts (tests make it small). */
  constructor(private readonly filterLinesForEdits = FILTER_LINES_FOR_EDITS) {
    this.filterEdits = new FilterEdits();
  }

  /** Picks the walk and counts endpoints; cheap on the fast path. Paced by `slice`. */
  async scope(req: ScopeRequest, family: IPFamily, slice: TimeSlice): Promise<SyncScope> {
    if (!req.fullSync && !req.servicesChanged && this.committedOnce) {
      const dirty = this.order.positionsOf(req.changedServices);
      let total = this.order.endpointTotal;
      let consistent = true;
      for (const pos of dirty) {
        if (slice.due) await slice.pause();
        const prev = this.order.states[pos]!;
        const id = prev.source.id;
        if (req.sources.services.get(id) !== prev.source) consistent = false;
        const count = usableEndpointCount(
          prev.source,
          req.sources.endpoints.get(id),
          protocolOf(req, id),
          family,
        );
        total += count - prev.endpointCount;
      }
      if (consistent) return { fastPath: true, dirty, totalEndpoints: total };
    }
    let total = 0;
    for (const [id, svc] of req.sources.services) {
      if (slice.due) await slice.pause();
      // Another family's port counts nothing (usableEndpointCount): no lookups for it.
      if (!svc.clusterIPs[family]) continue;
      total += usableEndpointCount(svc, req.sources.endpoints.get(id), protocolOf(req, id), family);
    }
    return { fastPath: false, dirty: [], totalEndpoints: total };
  }

  /** Keeps the states of a sync whose restore succeeded. */
  commit(set: RuleSet): void {
    if ("order" in set.commit) this.order.replaceAll(set.commit.order);
    else this.order.replaceAt(set.commit.replacements);
    this.committedOnce = true;
    this.committedFilterDigest = set.filterDigest;
    this.committedFixedFilterDigest = set.fixedFilterDigest;
    this.committedFilterLines = set.filterLinesHeld;
    this.filterEdits.commit(set.filterEdit);
  }

  /** The chains every committed service port owns (all KUBE-SVC/SVL/EXT/FW/SEP). */
  activeChains(): Set<string> {
    const out = new Set<string>();
    for (const s of this.order.states) for (const c of s.activeChains) out.add(c);
    return out;
  }

  async build(req: RuleSetRequest, scope: SyncScope, settings: RuleSetSettings): Promise<RuleSet> {
    this.settings = settings;
    this.fullSync = req.fullSync;
    const out = newOutput(settings);
    if (this.writesLocalnetGuard()) out.filterRules.push(BLOCK_LOCALNET_RULE);
    // Every loop over the ports below pauses with this slice: the servers answer between.
    const slice = new TimeSlice();
    const commit = scope.fastPath
      ? await this.fastWalk(req, scope, out, slice)
      : await this.fullWalk(req, out, slice);
    const next = "order" in commit ? commit.order : this.withReplacements(commit.replacements);
    const deletedChains = await this.staleChains(req, out, next, slice);
    for (const chain of deletedChains) {
      out.natChains.push(chain);
      out.natRules.push(`-X ${chain}`);
    }
    out.natRules.pushAll(this.nodePortsTail(req.nodePortIPs));
    out.filterRules.pushAll(forwardRules(settings));
    // Same tables, restored faster from empty (chain-order.ts): the names sorted now, their
    // lines made as the restore reads them. (The walk's garbage is collected by the proxier,
    // once, before the restore: a full collection costs 130-210 ms at 10k x 10.)
    out.natChains.order();
    return this.finish(req, out, deletedChains, commit, slice);
  }

  private writesLocalnetGuard(): boolean {
    return this.settings.family === "IPv4" && this.settings.localhostNodePorts;
  }

  private chainSettings(req: RuleSetRequest): ChainRuleSettings {
    return { ...this.settings, largeClusterMode: req.largeClusterMode };
  }

  /** Every port, in id order: reuse what is unchanged (partial), render the rest. */
  private async fullWalk(
    req: RuleSetRequest,
    out: Output,
    slice: TimeSlice,
  ): Promise<{ order: PortState[] }> {
    const chainSettings = this.chainSettings(req);
    const order: PortState[] = [];
    const services = req.sources.services;
    if (req.servicesChanged || this.sortedOfSize !== services.size) {
      // Ports of Services with no ClusterIP of this family render nothing: not visited.
      this.sortedIds = await runStepsPaced(familyPortIds(services, this.settings.family), slice);
      this.sortedOfSize = services.size;
    }
    // The sources stay as they are until this sync ends (maps are updated only between syncs).
    // The committed states are in id order too: walked alongside (no map by id is kept).
    const committed = this.order.states;
    let c = 0;
    for (const id of this.sortedIds) {
      if (slice.due) await slice.pause();
      while (c < committed.length && committed[c]!.source.id < id) c++;
      const svc = req.sources.services.get(id);
      if (!svc) continue;
      const endpoints = req.sources.endpoints.get(id);
      const prev = c < committed.length && committed[c]!.source.id === id ? committed[c] : undefined;
      let state: PortState | undefined = prev;
      if (
        prev &&
        !req.fullSync &&
        prev.source === svc &&
        prev.endpointsSource === endpoints &&
        !req.changedServices.has(prev.serviceKey)
      ) {
        reuse(prev, out);
      } else {
        state = this.render(req, id, svc, endpoints, prev, chainSettings, out);
      }
      if (!state) continue;
      order.push(state);
      countNoLocal(state, out);
    }
    if (order.length !== this.order.states.length || out.rendered.some((r) => !r.prev))
      await this.findRemoved(order, out, slice);
    return { order };
  }

  /** Endpoint-only changes: untouched chunks are written whole, dirty positions re-rendered. */
  private async fastWalk(
    req: RuleSetRequest,
    scope: SyncScope,
    out: Output,
    slice: TimeSlice,
  ): Promise<{ replacements: Map<number, PortState> }> {
    const chainSettings = this.chainSettings(req);
    const { states } = this.order;
    const replacements = new Map<number, PortState>();
    let d = 0;
    for (let c = 0; c < this.order.chunkCount; c++) {
      // Between chunks only: a chunk is a few dozen ports.
      if (slice.due) await slice.pause();
      const from = c * CHUNK_SIZE;
      const to = Math.min(states.length, from + CHUNK_SIZE);
      if (d >= scope.dirty.length || scope.dirty[d]! >= to) {
        const chunk = this.order.chunk(c);
        reuseChunk(chunk, out);
        out.noLocalInternal += chunk.noLocalInternal;
        out.noLocalExternal += chunk.noLocalExternal;
        continue;
      }
      for (let i = from; i < to; i++) {
        let state = states[i]!;
        if (scope.dirty[d] === i) {
          d++;
          const id = state.source.id;
          const endpoints = req.sources.endpoints.get(id);
          state = this.render(req, id, state.source, endpoints, state, chainSettings, out) ?? state;
          replacements.set(i, state);
        } else {
          reuse(state, out);
        }
        countNoLocal(state, out);
      }
    }
    return { replacements };
  }

  private render(
    req: RuleSetRequest,
    id: string,
    svc: ServicePortInfo,
    endpoints: readonly EndpointInfo[] | undefined,
    prev: PortState | undefined,
    chainSettings: ChainRuleSettings,
    out: Output,
  ): PortState | undefined {
    const inputs = portInputs(svc, endpoints, protocolOf(req, id), this.settings.family, prev);
    if (!inputs) {
      if (prev) out.removed.push(prev);
      return undefined;
    }
    const now = renderPort(inputs, req, this.settings, chainSettings, out);
    out.rendered.push({ prev, now });
    const written = out.natChains.length + out.natRules.length;
    if (written - out.collectedAt >= LINES_PER_COLLECTION) {
      out.collectedAt = written;
      collectYoungGarbage();
    }
    return now;
  }

  /** Committed ports missing from the new order (their Service or its port is gone). */
  private async findRemoved(order: readonly PortState[], out: Output, slice: TimeSlice): Promise<void> {
    const present = new Set<string>();
    for (const s of order) {
      if (slice.due) await slice.pause();
      present.add(s.source.id);
    }
    const already = new Set(out.removed);
    for (const s of this.order.states) {
      if (slice.due) await slice.pause();
      if (!present.has(s.source.id) && !already.has(s)) out.removed.push(s);
    }
  }

  private withReplacements(replacements: ReadonlyMap<number, PortState>): PortState[] {
    if (replacements.size === 0) return this.order.states;
    return this.order.states.map((s, i) => replacements.get(i) ?? s);
  }

  /**
   * Chains to flush and delete, sorted so output is stable: with a sweep, what iptables-save
   * listed that no port owns; between sweeps, what committed ports owned and no longer do.
   */
  private async staleChains(
    req: RuleSetRequest,
    out: Output,
    next: readonly PortState[],
    slice: TimeSlice,
  ): Promise<string[]> {
    const stale = new Set<string>();
    if (req.existingNatChains) {
      // Read one name at a time: only the stale ones are kept. A first sync into empty tables
      // has no service chains at all: every port's chains are gathered only once one shows up.
      let active: Set<string> | undefined;
      for (const c of req.existingNatChains) {
        if (slice.due) await slice.pause();
        if (!isServiceChainName(c)) continue;
        if (!active) {
          active = new Set<string>();
          for (const s of next) {
            if (slice.due) await slice.pause();
            for (const owned of s.activeChains) active.add(owned);
          }
        }
        if (!active.has(c)) stale.add(c);
      }
      return [...stale].sort();
    }
    // Chain names hash the port's name and protocol, so no other port can own them.
    for (const { prev, now } of out.rendered) {
      if (slice.due) await slice.pause();
      if (!prev || sameChains(prev.activeChains, now.activeChains)) continue;
      const keep = new Set(now.activeChains);
      for (const c of prev.activeChains) if (!keep.has(c)) stale.add(c);
    }
    for (const s of out.removed) {
      if (slice.due) await slice.pause();
      for (const c of s.activeChains) stale.add(c);
    }
    return [...stale].sort();
  }

  private nodePortsTail(nodePortIPs: readonly string[] | undefined): string[] {
    if (!nodePortIPs) return [nodePortsTailMatchAll(this.settings.family, this.settings.localhostNodePorts)];
    return nodePortIPs.map(nodePortsTailForIP);
  }

  private async finish(
    req: RuleSetRequest,
    out: Output,
    deletedChains: string[],
    commit: RuleSet["commit"],
    slice: TimeSlice,
  ): Promise<RuleSet> {
    const filterChains = topLevelChainLines(FILTER_TOP_LEVEL_CHAINS);
    if (this.writesLocalnetGuard()) filterChains.push(chainLine(KUBE_FIREWALL));
    const filterBlocks = [...filterChains, ...out.filterRules.joinedBlocks()];
    const filterDigest = await digestOf(filterBlocks, slice);
    const fixedFilterDigest = await digestOf([...filterChains, ...this.fixedFilterRules()], slice);
    const filterRuleLines = out.filterRules.length + out.filterExtraLines;
    const edit = await this.filterEdit(req, out, filterDigest, fixedFilterDigest, slice);
    const filterSection = edit.kind === "whole" ? filterBlocks : edit.kind === "appends" ? edit.appends : [];
    const filter = ["*filter", ...filterSection, "COMMIT"];
    const declarations = { pieces: () => out.natChains.linePieces() };
    const nat = ["*nat", declarations, out.natRules, "COMMIT"];
    // Each COMMIT is its own commit, in input order. A big filter table goes last: the nat rules
    // that send new endpoints their traffic are in while it is still being rewritten (its rules
    // match only traffic nat did not DNAT, so until then they stand aside).
    const natFirst = edit.kind === "whole" && filterRuleLines >= this.filterLinesForEdits;
    // The blocks as they are, each ended by a newline: no copy of the whole input is made.
    const payload = new NewlineEnded(natFirst ? [...nat, ...filter] : [...filter, ...nat]);
    return {
      payload,
      natChains: out.natChains.chains,
      filterRuleLines,
      natRuleLines:
        out.natRules.length + out.natRules.deferredLines + out.natExtraLines - deletedChains.length,
      skippedNatRuleLines: out.skippedNatRuleLines,
      deletedChains,
      filterEdit: edit,
      filterLinesWritten:
        edit.kind === "whole" ? filterRuleLines : edit.kind === "appends" ? edit.appends.length : 0,
      filterLinesHeld: filterRuleLines + edit.stale.size,
      filterDigest,
      fixedFilterDigest,
      rewrittenPorts: out.rendered.length,
      noLocalInternal: out.noLocalInternal,
      noLocalExternal: out.noLocalExternal,
      commit,
    };
  }

  /** The filter rules that are no port's, in the order build() wrote them. */
  private fixedFilterRules(): string[] {
    const guard = this.writesLocalnetGuard() ? [BLOCK_LOCALNET_RULE] : [];
    return [...guard, ...forwardRules(this.settings)];
  }

  /**
   * Full syncs write the filter table whole, so anything else that touched it is repaired there.
   * A partial sync leaves it out when it is what the kernel holds; over a big table, it edits
   * it from the ports' changes (filter-edits.ts); otherwise it writes it whole.
   */
  private async filterEdit(
    req: RuleSetRequest,
    out: Output,
    digest: string,
    fixedDigest: string,
    slice: TimeSlice,
  ): Promise<FilterEdit> {
    const edits = this.filterEdits;
    if (this.fullSync || this.committedFilterDigest === undefined) return edits.whole();
    const big = this.committedFilterLines >= this.filterLinesForEdits;
    if (!big || fixedDigest !== this.committedFixedFilterDigest) {
      if (digest !== this.committedFilterDigest || edits.staleLines > 0) return edits.whole();
      return edits.plan({ changes: [], nowMs: req.nowMs, maxStaleMs: req.syncPeriodMs });
    }
    const changes: PortFilterChange[] = [];
    for (const { prev, now } of out.rendered) {
      if (slice.due) await slice.pause();
      const after = now.extras.filterText;
      changes.push({ portId: now.source.id, before: prev?.extras.filterText ?? "", after });
    }
    for (const s of out.removed)
      changes.push({ portId: s.source.id, before: s.extras.filterText, after: "" });
    return edits.plan({ changes, nowMs: req.nowMs, maxStaleMs: req.syncPeriodMs });
  }
}

/** Lines made as they are read (a section's deferred lines, its chain declarations). */
interface DeferredText {
  /** Their text, each line ended by a newline, in pieces. */
  pieces(): Iterable<string>;
}

/**
 * The text of the parts, each ended by a newline, in pieces, without joining them: a block (one
 * or more lines) and then a newline piece, or the pieces of lines made as they are read. Those
 * come with their newlines: each piece the tool is given is then a block of lines, made while
 * the tool reads the one before (a newline piece between two made blocks would have the next
 * block made only once the tool had read the last).
 */
class NewlineEnded implements Iterable<string> {
  constructor(private readonly parts: readonly (string | DeferredText)[]) {}

  *[Symbol.iterator](): Generator<string> {
    for (const part of this.parts) {
      if (typeof part !== "string") yield* part.pieces();
      else {
        if (part !== "") yield part;
        yield "\n";
      }
    }
  }
}

/** sha256 over the lines' text, block by block (no second copy of a 13 MB table), paced. */
async function digestOf(blocks: readonly string[], slice: TimeSlice): Promise<string> {
  const h = createHash("sha256");
  for (const b of blocks) {
    if (slice.due) await slice.pause();
    h.update(b).update("\n");
  }
  return h.digest("base64");
}

function protocolOf(req: ScopeRequest, id: string): string | undefined {
  return req.sources.endpoints.portName(id)?.protocol;
}

function sameChains(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
