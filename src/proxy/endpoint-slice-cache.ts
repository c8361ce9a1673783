// The EndpointSlices of every Service, as applied at the last sync plus what is pending since.
// Endpoints can move between slices of one Service, so the cache keeps slices separately and
// merges them per Service only when that Service has pending changes.

import type { Logger } from "../log/logger.ts";
import { collectYoungGarbage } from "../runtime.ts";
import { flatString } from "../util/flat-string.ts";
import type { IPFamily } from "../util/net/family.ts";
import { joinHostPort } from "../util/net/host-port.ts";
import type { Protocol } from "../util/net/protocol.ts";
import { ITEMS_PER_STEP, type Steps } from "../util/time-slice.ts";
import type { ParsedSlice, SliceEndpoint, SlicePort } from "./endpoint-slice.ts";
import { type EndpointInfo, type ServiceKey, type ServicePortName, servicePortNameString } from "./types.ts";

interface SliceState {
  readonly applied: Map<string, ParsedSlice>;
  /**
   * null: the slice is to be removed. Absent between changes: an empty Map is ~200 bytes, and
   * a large cluster has one state per Service.
   */
  pending?: Map<string, ParsedSlice | null>;
}

/**
 * The endpoints of one service port, sorted by "ip:port", and the protocol the slices gave it
 * (its name is its id: one is kept per service port, so nothing else is).
 */
export interface PortEndpoints {
  readonly protocol: Protocol;
  readonly endpoints: readonly EndpointInfo[];
}

function sameSlice(a: ParsedSlice | null | undefined, b: ParsedSlice | null): boolean {
  return (a ?? null) === null ? b === null : b !== null && a!.fingerprint === b.fingerprint;
}

export class EndpointSliceCache {
  private readonly services = new Map<ServiceKey, SliceState>();
  /** Services with at least one pending slice: the only ones the next checkout visits. */
  private readonly touched = new Set<ServiceKey>();

  /**
   * Sets the pending state of one slice (null: removed). Returns true when that changes what
   * the next checkout yields; a change back to the applied state cancels the pending entry.
   */
  setPending(key: ServiceKey, sliceName: string, slice: ParsedSlice | null): boolean {
    let state = this.services.get(key);
    if (!state) {
      if (slice === null) return false;
      state = { applied: new Map() };
      this.services.set(key, state);
    }
    const pending = state.pending;
    const base = pending?.has(sliceName) ? pending.get(sliceName) : state.applied.get(sliceName);
    if (sameSlice(base, slice)) return false;
    if (sameSlice(state.applied.get(sliceName), slice)) pending?.delete(sliceName);
    else {
      state.pending ??= new Map();
      state.pending.set(sliceName, slice);
    }
    if (state.pending && state.pending.size > 0) this.touched.add(key);
    else {
      state.pending = undefined;
      this.touched.delete(key);
    }
    if (!state.pending && state.applied.size === 0) this.services.delete(key);
    return true;
  }

  pendingServices(): Set<ServiceKey> {
    return new Set(this.touched);
  }

  /** Every slice as the next checkout leaves it: the applied ones with pending changes over them. */
  *latestSlices(): Generator<{ service: ServiceKey; name: string; slice: ParsedSlice }> {
    for (const [service, state] of this.services) {
      const pending = state.pending;
      for (const [name, slice] of state.applied) if (!pending?.has(name)) yield { service, name, slice };
      for (const [name, slice] of pending ?? []) if (slice) yield { service, name, slice };
    }
  }

  /** Applies every pending slice; returns the applied slices of each Service that had some. */
  checkout(): Map<ServiceKey, ReadonlyMap<string, ParsedSlice>> {
    const out = new Map<ServiceKey, ReadonlyMap<string, ParsedSlice>>();
    for (const key of this.touched) {
      const state = this.services.get(key);
      if (!state) continue;
      for (const [name, slice] of state.pending ?? []) {
        if (slice) state.applied.set(name, slice);
        else state.applied.delete(name);
      }
      state.pending = undefined;
      out.set(key, state.applied);
      if (state.applied.size === 0) this.services.delete(key);
    }
    this.touched.clear();
    return out;
  }
}

/** One service port of a Service being merged: the slice ports that carry it. */
interface MergeTarget {
  readonly protocol: Protocol;
  /** Each slice port merged into it, then its slice's endpoints, in slice name order. */
  readonly sources: (SlicePort | readonly SliceEndpoint[])[];
}

/**
 * The reads of a PortEndpoint, on a class of their own: JSC gives every instance of a class
 * whose prototype holds getters room for six fields (64 bytes); PortEndpoint holds its two in 32.
 */
abstract class PortEndpointReads {
  protected abstract readonly shared: SliceEndpoint;
  abstract readonly port: number;

  get endpoint(): string {
    return joinHostPort(this.shared.ip, this.port);
  }
  get ip(): string {
    return this.shared.ip;
  }
  get family(): IPFamily {
    return this.shared.family;
  }
  get nodeName(): string {
    return this.shared.nodeName;
  }
  get zone(): string {
    return this.shared.zone;
  }
  get isLocal(): boolean {
    return this.shared.isLocal;
  }
  get ready(): boolean {
    return this.shared.ready;
  }
  get serving(): boolean {
    return this.shared.serving;
  }
  get terminating(): boolean {
    return this.shared.terminating;
  }
  get zoneHints(): ReadonlySet<string> {
    return this.shared.zoneHints;
  }
  get nodeHints(): ReadonlySet<string> {
    return this.shared.nodeHints;
  }
}

/**
 * One endpoint on one port: a port number and a reference to the slice's endpoint, which all
 * its ports share, the rest read through. A service port with 10,000 endpoints times 100 ports is a million of
 * these, so they stay two fields wide; the "ip:port" text is made when asked for.
 */
class PortEndpoint extends PortEndpointReads implements EndpointInfo {
  constructor(
    protected readonly shared: SliceEndpoint,
    readonly port: number,
  ) {
    super();
  }
}

/** 2: ready; 1: serving (terminating); 0: neither. */
const usability = (ep: Pick<EndpointInfo, "ready" | "serving">) => (ep.ready ? 2 : ep.serving ? 1 : 0);

/**
 * `sorted` (by compareEndpoints, stably) with one endpoint per IP:port. One IP:port listed twice
 * is an endpoint moving between slices, or (upstream 1.36, kubernetes#135593) a pod IP reused by
 * a new pod while the old one still terminates: the more usable copy wins (ready, then serving),
 * so a ghost terminating pod never hides the live one; between equals, the first slice by name
 * (the stable sort keeps the slices' order among equal IP:ports). In place.
 */
function withoutRepeats(sorted: PortEndpoint[]): PortEndpoint[] {
  let kept = 0;
  for (const e of sorted) {
    const last = kept > 0 ? sorted[kept - 1]! : undefined;
    if (last && last.ip === e.ip && last.port === e.port) {
      if (usability(e) > usability(last)) sorted[kept - 1] = e;
      continue;
    }
    sorted[kept++] = e;
  }
  sorted.length = kept;
  return sorted;
}

/** Where the id strings of known service ports are found (the service map): one copy kept. */
export interface KnownPortIds {
  get(id: string): { readonly id: string } | undefined;
}

export interface MergeContext {
  readonly namespace: string;
  readonly service: string;
  readonly nodeName: string;
  readonly logger: Logger;
  readonly knownIds?: KnownPortIds;
}

// The merge target for one slice port; undefined when the name is already taken by another
// protocol (Service port names are unique, so such a slice is malformed).
function targetFor(targets: Map<string, MergeTarget>, port: SlicePort, sliceName: string, ctx: MergeContext) {
  const name: ServicePortName = {
    namespace: ctx.namespace,
    name: ctx.service,
    port: port.name,
    protocol: port.protocol,
  };
  const id = servicePortNameString(name);
  const target = targets.get(id);
  if (!target) {
    const created: MergeTarget = { protocol: port.protocol, sources: [] };
    // The id is kept as the endpoints map's key: the service port's own string when there is
    // one, else flat (not the tree of its parts).
    targets.set(ctx.knownIds?.get(id)?.id ?? flatString(id), created);
    return created;
  }
  if (target.protocol === port.protocol) return target;
  ctx.logger.warn("Ignoring EndpointSlice port whose name is used with another protocol", {
    endpointSlice: `${ctx.namespace}/${sliceName}`,
    port: port.name,
    protocol: port.protocol,
  });
  return undefined;
}

/**
 * The order of the endpoints' "ip:port" texts, without making them: IPv4 text (a digit first)
 * before bracketed IPv6; otherwise the IPs decide, except where one IP is a prefix of the other
 * and the shorter's closing character (":" or "]") meets the longer's next one; equal IPs go by
 * the port's decimal text.
 */
export function compareEndpoints(a: EndpointInfo, b: EndpointInfo): number {
  const x = a.ip;
  const y = b.ip;
  if (x === y) {
    if (a.port === b.port) return 0;
    return String(a.port) < String(b.port) ? -1 : 1;
  }
  const bracketX = a.family === "IPv6";
  if (bracketX !== (b.family === "IPv6")) return bracketX ? 1 : -1;
  const close = bracketX ? 0x5d : 0x3a;
  if (x < y) return y.length > x.length && y.startsWith(x) && close > y.charCodeAt(x.length) ? 1 : -1;
  return x.length > y.length && x.startsWith(y) && x.charCodeAt(y.length) < close ? -1 : 1;
}

/**
 * Endpoints merged between two collections of young garbage: each port merged leaves garbage
 * behind (its sort's), which the runtime would let pile up (a Service of 100 ports x 10,000
 * endpoints merges a million endpoints, one port's at a time).
 */
const ENDPOINTS_PER_COLLECTION = 65_536;
let sinceCollection = 0;

/**
 * Merges the slices of one Service into endpoints per service port id. The ports are found
 * first, then merged one at a time, so only one port's endpoints are being sorted at once.
 * Steps: a pause may come between any two slice ports, or merged ports.
 */
export function* mergeSlices(
  slices: ReadonlyMap<string, ParsedSlice>,
  ctx: MergeContext,
): Steps<Map<string, PortEndpoints>> {
  const targets = new Map<string, MergeTarget>();
  let items = 0;
  for (const sliceName of [...slices.keys()].sort()) {
    const slice = slices.get(sliceName)!;
    for (let i = 0; i < slice.ports.size; i++) {
      if (++items % ITEMS_PER_STEP === 0) yield;
      const port = slice.ports.at(i);
      targetFor(targets, port, sliceName, ctx)?.sources.push(port, slice.endpoints);
    }
  }
  const out = new Map<string, PortEndpoints>();
  for (const [id, t] of targets) {
    // Sorted, then repeats dropped: no table by IP per port (a Service of 100,000 ports would
    // make 100,000 of them).
    const endpoints: PortEndpoint[] = [];
    const { sources } = t;
    for (let i = 0; i < sources.length; i += 2) {
      const port = (sources[i] as SlicePort).port;
      for (const e of sources[i + 1] as readonly SliceEndpoint[]) endpoints.push(new PortEndpoint(e, port));
    }
    sources.length = 0;
    withoutRepeats(endpoints.sort(compareEndpoints));
    if (endpoints.length > 0) out.set(id, { protocol: t.protocol, endpoints });
    sinceCollection += endpoints.length;
    if (sinceCollection >= ENDPOINTS_PER_COLLECTION) {
      sinceCollection = 0;
      collectYoungGarbage();
    }
    // A port's endpoints count as items too: a port of 10,000 endpoints is a step of its own.
    items += 1 + endpoints.length;
    if (items >= ITEMS_PER_STEP) {
      items = 0;
      yield;
    }
  }
  return out;
}
