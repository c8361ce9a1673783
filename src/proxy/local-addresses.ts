// The node's local addresses as the proxiers and the health check servers need them.

import type { Exec } from "../exec/types.ts";
import { createNetlinkClient } from "../host/netlink/client.ts";
import type { Logger } from "../log/logger.ts";

/**
 * Every local address, as `ip -o addr show` lists them (NodePort addresses, health check
 * listeners). A failing `ip` raises NetlinkError (command and stderr), never an empty list.
 */
export function localAddresses(exec: Exec, log: Logger): Promise<string[]> {
  return createNetlinkClient({ exec, logger: log, timeoutMs: 10_000 }).allAddresses();
}
