// The IPVS half of a sync: desired virtual servers against one read of the kernel table, as one
// list of changes for a single `ipvsadm --restore`. Upstream's syncService / syncEndpoint /
// cleanLegacyService, decided in memory: virtual servers are added or edited in place (the VIP
// never goes down), real servers that went away are drained through graceful termination, and
// virtual servers nobody wants are deleted unless they sit in an excluded CIDR.

import type {
  AddRealsChange,
  CompactIpvsChanges,
  IpvsChange,
  IpvsService,
  RealServer,
  VirtualServer,
  VirtualServerKey,
} from "../../host/ipvs/types.ts";
import { joinHostPort } from "../../util/net/host-port.ts";
import type { VirtualServerClaims } from "./desired-state.ts";
import { drained, type GracefulTermination } from "./graceful-termination.ts";
import { NO_REALS } from "./real-servers.ts";
import {
  type DesiredReal,
  DesiredVirtualServer,
  type RealServers,
  realId,
  SERVING_WEIGHT,
} from "./virtual-servers.ts";

export interface IpvsDiffInput {
  readonly desired: VirtualServerClaims;
  /** The kernel table of this family, by virtual server key. */
  readonly kernel: ReadonlyMap<string, IpvsService>;
  readonly graceful: GracefulTermination;
  /**
   * Resets the weight of every wanted real server to 1 (first sync after start, and after a
   * failed write): a previous instance may have left them at 0 mid-termination.
   */
  readonly resetWeights: boolean;
  /** --ipvs-exclude-cidrs: virtual servers on these addresses are never deleted. */
  readonly excluded: (address: string) => boolean;
  /** Partial sync: only these virtual server keys are compared (undefined: all of them). */
  readonly keys?: Iterable<string>;
}

/**
 * Changes in the order ipvsadm must run them: services exist before their real servers. A
 * virtual server the kernel lacks is held as itself, once in `services` (its add) and once in
 * `realsUp` (the adds of all its real servers), not as an object per line: a first sync of
 * two million virtual servers then costs two references each, and the changes handed over
 * while the restore input is written are two small objects per virtual server, not one per line.
 */
export class IpvsChangeList implements CompactIpvsChanges {
  readonly services: (IpvsChange | DesiredVirtualServer)[] = [];
  readonly realsUp: (IpvsChange | DesiredVirtualServer)[] = [];
  readonly realsDown: IpvsChange[] = [];
  readonly servicesGone: IpvsChange[] = [];
  private lines = 0;

  /** Lines of the restore input (one per change). */
  get length(): number {
    return this.lines;
  }

  /** A virtual server the kernel lacks, with every one of its real servers. */
  addNew(vs: DesiredVirtualServer): void {
    this.services.push(vs);
    this.lines++;
    if (vs.reals.length === 0) return;
    this.realsUp.push(vs);
    this.lines += vs.reals.length;
  }

  push(batch: "services" | "realsUp" | "realsDown" | "servicesGone", change: IpvsChange): void {
    this[batch].push(change);
    this.lines++;
  }

  *[Symbol.iterator](): Generator<IpvsChange | AddRealsChange> {
    // Two objects refilled for each new virtual server, not two made for each.
    const addService: { op: "add-service"; server: VirtualServer } = { op: "add-service", server: NO_SERVER };
    for (const c of this.services) {
      if (!(c instanceof DesiredVirtualServer)) yield c;
      else {
        addService.server = c;
        yield addService;
      }
    }
    const addReals: { op: "add-reals"; key: VirtualServerKey; reals: RealServers } = {
      op: "add-reals",
      key: NO_SERVER,
      reals: NO_REALS,
    };
    for (const c of this.realsUp) {
      if (!(c instanceof DesiredVirtualServer)) yield c;
      else {
        addReals.key = c;
        addReals.reals = c.reals;
        yield addReals;
      }
    }
    yield* this.realsDown;
    yield* this.servicesGone;
  }
}

type Batches = IpvsChangeList;

/** A placeholder until a refilled change gets its first virtual server. */
const NO_SERVER: VirtualServer = {
  address: "",
  port: 0,
  protocol: "TCP",
  scheduler: "",
  flags: [],
  timeout: 0,
};

export function diffIpvs(input: IpvsDiffInput): IpvsChangeList {
  const out = new IpvsChangeList();
  if (input.keys) {
    for (const key of input.keys) {
      const vs = input.desired.get(key);
      if (vs) diffVirtualServer(vs, input.kernel.get(key), input, out);
      else retireVirtualServer(key, input.kernel.get(key), input, out);
    }
  } else {
    for (const vs of input.desired.values()) diffVirtualServer(vs, input.kernel.get(vs.key), input, out);
    for (const [key, svc] of input.kernel)
      if (!input.desired.has(key)) retireVirtualServer(key, svc, input, out);
  }
  return out;
}

/** A virtual server nobody wants: deleted (real servers with it) unless in an excluded CIDR. */
function retireVirtualServer(
  key: string,
  svc: IpvsService | undefined,
  input: IpvsDiffInput,
  out: Batches,
): void {
  if (!svc || input.excluded(svc.server.address)) return;
  out.push("servicesGone", { op: "delete-service", key: svc.server });
  input.graceful.dropVirtualServer(key);
}

function sameServer(a: VirtualServer, b: VirtualServer): boolean {
  if (a.scheduler !== b.scheduler || a.timeout !== b.timeout || a.flags.length !== b.flags.length)
    return false;
  return a.flags.every((f, i) => f === b.flags[i]);
}

function diffVirtualServer(
  vs: DesiredVirtualServer,
  kernel: IpvsService | undefined,
  input: IpvsDiffInput,
  out: Batches,
): void {
  if (!kernel) {
    out.addNew(vs);
    return;
  }
  if (!sameServer(vs, kernel.server)) out.push("services", { op: "edit-service", server: vs });
  if (inStep(vs.reals, kernel.reals)) diffWeightsInStep(vs, kernel.reals, input, out);
  else diffReals(vs, kernel, input, out);
}

/** The common case: the kernel lists exactly the wanted real servers, in the same order. */
function inStep(want: RealServers, have: readonly RealServer[]): boolean {
  if (want.length !== have.length) return false;
  for (let i = 0; i < want.length; i++) {
    const h = have[i]!;
    if (want.port(i) !== h.port || want.address(i) !== h.address) return false;
  }
  return true;
}

function diffWeightsInStep(
  vs: DesiredVirtualServer,
  have: readonly RealServer[],
  input: IpvsDiffInput,
  out: Batches,
): void {
  // Pending entries of wanted real servers must leave the list even when the weight is right.
  const anyPending = input.graceful.hasAny(vs.key);
  for (let i = 0; i < have.length; i++) {
    if (anyPending || have[i]!.weight !== SERVING_WEIGHT) {
      const want = vs.reals.at(i);
      keepReal(vs, want, realId(want), have[i]!, input, out);
    }
  }
}

function diffReals(vs: DesiredVirtualServer, kernel: IpvsService, input: IpvsDiffInput, out: Batches): void {
  const have = new Map<string, RealServer>();
  for (const r of kernel.reals) have.set(joinHostPort(r.address, r.port), r);
  for (const want of vs.reals) {
    const id = realId(want);
    const current = have.get(id);
    if (!current) {
      // A real server that vanished while terminating simply comes back.
      input.graceful.remove(vs.key, id);
      out.push("realsUp", { op: "add-real", key: vs, real: want });
      continue;
    }
    have.delete(id);
    keepReal(vs, want, id, current, input, out);
  }
  for (const [id, real] of have) retireReal(vs, id, real, input, out);
}

/**
 * A wanted real server the kernel has. An endpoint that comes back while terminating is
 * restored at once (weight 1, off the pending list); otherwise, like upstream, a weight someone
 * else set is left alone except on the first sync.
 */
function keepReal(
  vs: DesiredVirtualServer,
  want: DesiredReal,
  id: string,
  have: RealServer,
  input: IpvsDiffInput,
  out: Batches,
): void {
  const terminating = input.graceful.has(vs.key, id);
  if (terminating) input.graceful.remove(vs.key, id);
  if (have.weight === SERVING_WEIGHT || !(terminating || input.resetWeights)) return;
  out.push("realsUp", { op: "edit-real", key: vs, real: want });
}

/** A real server the kernel has but nobody wants: delete it now, or drain it first. */
function retireReal(
  vs: DesiredVirtualServer,
  id: string,
  real: RealServer,
  input: IpvsDiffInput,
  out: Batches,
): void {
  const target = { address: real.address, port: real.port };
  if (drained(vs.protocol, real)) {
    input.graceful.remove(vs.key, id);
    out.push("realsDown", { op: "delete-real", key: vs, real: target });
    return;
  }
  if (!input.graceful.has(vs.key, id)) input.graceful.add(vs.key, { vs, ...target });
  // Re-sent while the weight is not 0 yet (a previous write may have failed).
  if (real.weight !== 0) out.push("realsDown", { op: "edit-real", key: vs, real: { ...target, weight: 0 } });
}
