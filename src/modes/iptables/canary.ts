// Detects that someone flushed the iptables tables (firewalld reload, an admin's `iptables -F`)
// the way upstream's iptables Monitor does: an empty KUBE-PROXY-CANARY chain in mangle, nat and
// filter. When the mangle copy disappears the tables were flushed, and only a full sync puts the
// jump rules from the built-in chains back.

import type { IptablesClient, Table } from "../../host/iptables/types.ts";
import type { Logger } from "../../log/logger.ts";
import { KUBE_PROXY_CANARY } from "../../proxy/netfilter/chains.ts";
import type { Clock, TimerHandle } from "../../util/clock.ts";

/** mangle first: nothing of ours lives there, so only a flush removes its canary. */
export const CANARY_TABLES: readonly Table[] = ["mangle", "nat", "filter"];

export type CanaryState = "created" | "present" | "flushed";

/**
 * One check. Canaries not yet set up are created ("created"); a missing mangle canary means a
 * flush ("flushed", canaries re-created for the next check); otherwise "present".
 */
export async function checkCanaryChains(
  ipt: IptablesClient,
  installed: boolean,
  logger: Logger,
): Promise<CanaryState> {
  if (installed && (await ipt.chainExists(CANARY_TABLES[0]!, KUBE_PROXY_CANARY))) return "present";
  if (installed) {
    logger.v(2).info("IPTables canary deleted", { table: CANARY_TABLES[0]!, chain: KUBE_PROXY_CANARY });
    for (const table of CANARY_TABLES.slice(1)) {
      // Upstream waits for the other copies to vanish too; a survivor means a partial flush.
      if (await ipt.chainExists(table, KUBE_PROXY_CANARY)) {
        logger.info("Inconsistent iptables state detected", { table });
        break;
      }
    }
  }
  for (const table of CANARY_TABLES) await ipt.ensureChain(table, KUBE_PROXY_CANARY);
  return installed ? "flushed" : "created";
}

export interface CanaryMonitorOptions {
  readonly intervalMs: number;
  readonly clock: Clock;
  /** Runs one check; resolves true when the tables were flushed. */
  readonly check: () => Promise<boolean>;
  /** Called after a flush was seen (e.g. to queue a sync). */
  readonly onFlush: () => void;
  readonly logger: Logger;
}

/** Polls the canaries every interval (upstream uses the sync period). */
export class CanaryMonitor {
  private timer: TimerHandle | undefined;
  private stopped = true;

  constructor(private readonly opts: CanaryMonitorOptions) {}

  start(): void {
    this.stopped = false;
    void this.tick();
  }

  stop(): void {
    this.stopped = true;
    this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async tick(): Promise<void> {
    try {
      if (await this.opts.check()) this.opts.onFlush();
    } catch (err) {
      this.opts.logger.error("Could not check iptables canary", {
        err: err instanceof Error ? err : String(err),
      });
    }
    if (!this.stopped) this.timer = this.opts.clock.setTimeout(() => void this.tick(), this.opts.intervalMs);
  }
}
