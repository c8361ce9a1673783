// What both proxiers tell the per-Service health check servers after a sync: the health check
// node ports and the local ready endpoint counts. A failure there never fails the sync.

import type { Logger } from "../log/logger.ts";
import type { SyncInput } from "./proxier.ts";

export interface ServiceHealthSink {
  syncServices(healthCheckNodePorts: ReadonlyMap<string, number>): void | Promise<void>;
  syncEndpoints(localReadyEndpoints: ReadonlyMap<string, number>): void | Promise<void>;
}

export async function reportServiceHealth(
  sink: ServiceHealthSink | undefined,
  input: SyncInput,
  log: Logger,
): Promise<void> {
  if (!sink) return;
  try {
    await sink.syncServices(input.services.healthCheckNodePorts());
    await sink.syncEndpoints(input.endpoints.localReadyEndpoints());
  } catch (err) {
    log.error("Error syncing healthcheck services", {
      err: err instanceof Error ? err.message : String(err),
    });
  }
}
