// Graceful termination of real servers (upstream's GracefulTerminationManager, v1.31). A real
// server whose endpoint went away first gets weight 0 — no new connections, existing ones carry
// on — and is deleted once the kernel shows no active and no inactive connection on it. UDP and
// SCTP have no connection teardown to wait for: those are deleted at once (the kernel expires
// their entries on the next packet, net/ipv4/vs/expire_nodest_conn=1).
//
// Unlike upstream, which asks the kernel about one real server at a time, the periodic check
// reads the table once and deletes everything that drained in one batch.

import {
  type IpvsChange,
  type IpvsClient,
  type IpvsService,
  type VirtualServerKey,
  virtualServerKeyString,
} from "../../host/ipvs/types.ts";
import type { Logger } from "../../log/logger.ts";
import type { Clock, TimerHandle } from "../../util/clock.ts";
import { errText } from "../../util/err-text.ts";
import { joinHostPort } from "../../util/net/host-port.ts";

/** Upstream's rsCheckDeleteInterval. */
export const GRACEFUL_CHECK_INTERVAL_MS = 60_000;

export interface TerminatingReal {
  readonly vs: VirtualServerKey;
  readonly address: string;
  readonly port: number;
}

/** Whether removing a real server of this protocol waits for its connections. */
export function needsGracefulTermination(protocol: string): boolean {
  const p = protocol.toUpperCase();
  return p !== "UDP" && p !== "SCTP";
}

/** Whether a real server (as the kernel reports it) may be deleted now. */
export function drained(
  protocol: string,
  real: { activeConnections: number; inactiveConnections: number },
): boolean {
  return !needsGracefulTermination(protocol) || real.activeConnections + real.inactiveConnections === 0;
}

export interface GracefulTerminationOptions {
  readonly ipvs: IpvsClient;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly intervalMs?: number;
  /** Runs the periodic check so it never interleaves with a sync (both write the table). */
  readonly exclusive: (work: () => Promise<void>) => Promise<void>;
  /** Virtual servers of this family only (a dual-stack node runs two managers on one table). */
  readonly ownsAddress: (address: string) => boolean;
  /** Whether the last sync wants this real server again (it is then never deleted here). */
  readonly isWanted?: (vsKey: string, realId: string) => boolean;
}

export class GracefulTermination {
  /** vs key -> real id -> real. */
  private readonly pending = new Map<string, Map<string, TerminatingReal>>();
  private timer: TimerHandle | undefined;
  private stopped = false;
  private readonly intervalMs: number;

  constructor(private readonly opts: GracefulTerminationOptions) {
    this.intervalMs = opts.intervalMs ?? GRACEFUL_CHECK_INTERVAL_MS;
  }

  has(vsKey: string, id: string): boolean {
    return this.pending.get(vsKey)?.has(id) ?? false;
  }

  hasAny(vsKey: string): boolean {
    return this.pending.has(vsKey);
  }

  add(vsKey: string, real: TerminatingReal): void {
    let reals = this.pending.get(vsKey);
    if (!reals) {
      reals = new Map();
      this.pending.set(vsKey, reals);
    }
    reals.set(joinHostPort(real.address, real.port), real);
    this.schedule();
  }

  remove(vsKey: string, id: string): void {
    const reals = this.pending.get(vsKey);
    if (!reals?.delete(id)) return;
    if (reals.size === 0) this.pending.delete(vsKey);
  }

  /** Forgets a whole virtual server (it is being deleted, real servers with it). */
  dropVirtualServer(vsKey: string): void {
    this.pending.delete(vsKey);
  }

  /** Virtual servers with real servers waiting to drain, by key. */
  *pendingVirtualServers(): Generator<[string, VirtualServerKey]> {
    for (const [key, reals] of this.pending) {
      const first = reals.values().next();
      if (!first.done) yield [key, first.value.vs];
    }
  }

  /** Real servers waiting to drain, by virtual server key. */
  realsOf(vsKey: string): readonly TerminatingReal[] {
    const reals = this.pending.get(vsKey);
    return reals ? [...reals.values()] : [];
  }

  get size(): number {
    let n = 0;
    for (const reals of this.pending.values()) n += reals.size;
    return n;
  }

  /** Cancels the periodic check (the proxier is shutting down). */
  stop(): void {
    this.stopped = true;
    this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * Deletions for every pending real server that has drained, given a fresh read of the table;
   * entries whose virtual or real server is gone are simply forgotten.
   */
  sweep(table: ReadonlyMap<string, IpvsService>): IpvsChange[] {
    const out: IpvsChange[] = [];
    const wanted = this.opts.isWanted ?? (() => false);
    for (const [vsKey, reals] of this.pending) {
      const svc = table.get(vsKey);
      if (!svc) {
        this.pending.delete(vsKey);
        continue;
      }
      const kernel = new Map(svc.reals.map((r) => [joinHostPort(r.address, r.port), r]));
      for (const [id, real] of reals) {
        // Wanted again: the next sync restores its weight and takes it off the list.
        if (wanted(vsKey, id)) continue;
        const current = kernel.get(id);
        if (current && !drained(svc.server.protocol, current)) continue;
        reals.delete(id);
        if (current)
          out.push({ op: "delete-real", key: real.vs, real: { address: real.address, port: real.port } });
      }
      if (reals.size === 0) this.pending.delete(vsKey);
    }
    return out;
  }

  /** One periodic check: one table read, at most one batch of deletions. */
  async check(): Promise<number> {
    if (this.pending.size === 0) return 0;
    const table = indexTable(await this.opts.ipvs.read(), this.opts.ownsAddress);
    const deletions = this.sweep(table);
    if (deletions.length > 0) await this.opts.ipvs.apply(deletions);
    this.opts.logger.v(5).info("Graceful termination check", {
      deleted: deletions.length,
      pending: this.size,
    });
    return deletions.length;
  }

  private schedule(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = undefined;
      void this.opts
        .exclusive(() => this.check().then(() => undefined))
        .catch((err: unknown) => {
          this.opts.logger.error("Graceful termination check failed", {
            err: errText(err),
          });
        })
        .finally(() => {
          if (this.pending.size > 0) this.schedule();
        });
    }, this.intervalMs);
  }
}

/** The kernel table by virtual server key: one family's addresses (optionally only some). */
export function indexTable(
  services: readonly IpvsService[],
  ownsAddress: (address: string) => boolean,
  onlyAddresses?: ReadonlySet<string>,
): Map<string, IpvsService> {
  const out = new Map<string, IpvsService>();
  for (const svc of services) {
    if (onlyAddresses && !onlyAddresses.has(svc.server.address)) continue;
    if (!ownsAddress(svc.server.address)) continue;
    out.set(virtualServerKeyString(svc.server), svc);
  }
  return out;
}
