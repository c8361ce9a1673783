// The IPVS half of a sync: desired virtual servers against one read of the kernel table, as one
// list of changes for a single `ipvsadm --restore`. Upstream's syncService / syncEndpoint /
// cleanLegacyService, decided in memory: virtual servers are added or edited in place (the VIP
// never goes down), real servers that went away are drained through graceful termination, and
// virtual servers nobody wants are deleted unless they sit in an excluded CIDR.

import type { IpvsChange, IpvsService, RealServer, VirtualServer } from "../../host/ipvs/types.ts";
import { joinHostPort } from "../../util/net/host-port.ts";
import type { VirtualServerClaims } from "./desired-state.ts";
import { drained, type GracefulTermination } from "./graceful-termination.ts";
import type { DesiredReal, DesiredVirtualServer } from "./virtual-servers.ts";

/** Weight of a serving real server (upstream never weighs endpoints differently). */
export const SERVING_WEIGHT = 1;

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
  readonly keys?: ReadonlySet<string>;
}

/** Changes in the order ipvsadm must run them: services exist before their real servers. */
interface Batches {
  readonly services: IpvsChange[];
  readonly realsUp: IpvsChange[];
  readonly realsDown: IpvsChange[];
  readonly servicesGone: IpvsChange[];
}

export function diffIpvs(input: IpvsDiffInput): IpvsChange[] {
  const out: Batches = { services: [], realsUp: [], realsDown: [], servicesGone: [] };
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
  return [...out.services, ...out.realsUp, ...out.realsDown, ...out.servicesGone];
}

/** A virtual server nobody wants: deleted (real servers with it) unless in an excluded CIDR. */
function retireVirtualServer(
  key: string,
  svc: IpvsService | undefined,
  input: IpvsDiffInput,
  out: Batches,
): void {
  if (!svc || input.excluded(svc.server.address)) return;
  out.servicesGone.push({ op: "delete-service", key: svc.server });
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
    out.services.push({ op: "add-service", server: vs.server });
    for (const r of vs.reals) out.realsUp.push(addReal(vs, r));
    return;
  }
  if (!sameServer(vs.server, kernel.server)) out.services.push({ op: "edit-service", server: vs.server });
  if (inStep(vs.reals, kernel.reals)) diffWeightsInStep(vs, kernel.reals, input, out);
  else diffReals(vs, kernel, input, out);
}

/** The common case: the kernel lists exactly the wanted real servers, in the same order. */
function inStep(want: readonly DesiredReal[], have: readonly RealServer[]): boolean {
  if (want.length !== have.length) return false;
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const h = have[i]!;
    if (w.port !== h.port || w.address !== h.address) return false;
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
    if (anyPending || have[i]!.weight !== SERVING_WEIGHT) keepReal(vs, vs.reals[i]!, have[i]!, input, out);
  }
}

function diffReals(vs: DesiredVirtualServer, kernel: IpvsService, input: IpvsDiffInput, out: Batches): void {
  const have = new Map<string, RealServer>();
  for (const r of kernel.reals) have.set(joinHostPort(r.address, r.port), r);
  for (const want of vs.reals) {
    const current = have.get(want.id);
    if (!current) {
      // A real server that vanished while terminating simply comes back.
      input.graceful.remove(vs.key, want.id);
      out.realsUp.push(addReal(vs, want));
      continue;
    }
    have.delete(want.id);
    keepReal(vs, want, current, input, out);
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
  have: RealServer,
  input: IpvsDiffInput,
  out: Batches,
): void {
  const terminating = input.graceful.has(vs.key, want.id);
  if (terminating) input.graceful.remove(vs.key, want.id);
  if (have.weight === SERVING_WEIGHT || !(terminating || input.resetWeights)) return;
  out.realsUp.push({ op: "edit-real", key: vs.server, real: { ...realOf(want), weight: SERVING_WEIGHT } });
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
  if (drained(vs.server.protocol, real)) {
    input.graceful.remove(vs.key, id);
    out.realsDown.push({ op: "delete-real", key: vs.server, real: target });
    return;
  }
  if (!input.graceful.has(vs.key, id)) input.graceful.add(vs.key, { vs: vs.server, ...target });
  // Re-sent while the weight is not 0 yet (a previous write may have failed).
  if (real.weight !== 0)
    out.realsDown.push({ op: "edit-real", key: vs.server, real: { ...target, weight: 0 } });
}

function realOf(r: DesiredReal): { address: string; port: number } {
  return { address: r.address, port: r.port };
}

function addReal(vs: DesiredVirtualServer, r: DesiredReal): IpvsChange {
  return { op: "add-real", key: vs.server, real: { ...realOf(r), weight: SERVING_WEIGHT } };
}
