// What both proxiers tell the per-Service health check servers after a sync: the health check
// node ports and the local ready endpoint counts. A failure there never fails the sync.

import type { Logger } from "../log/logger.ts";
import { errText } from "../util/err-text.ts";
import type { EndpointsMap } from "./endpoints-map.ts";
import type { SyncInput } from "./proxier.ts";
import { primaryFamily } from "./service-fields.ts";
import type { ServiceMap } from "./service-map.ts";
import type { ServiceKey } from "./types.ts";

export interface ServiceHealthSink {
  syncServices(healthCheckNodePorts: ReadonlyMap<string, number>): void | Promise<void>;
  syncEndpoints(localReadyEndpoints: ReadonlyMap<string, number>): void | Promise<void>;
}

/**
 * `unserved`: Services the sync left out of the kernel (ipvs mode's held-out ones). Their health
 * check answers "no local endpoints", so a load balancer sends their traffic to nodes that
 * carry it rather than to this one, where it would be dropped.
 */
export async function reportServiceHealth(
  sink: ServiceHealthSink | undefined,
  input: SyncInput,
  log: Logger,
  unserved?: ReadonlySet<ServiceKey>,
): Promise<void> {
  if (!sink) return;
  try {
    await sink.syncServices(input.services.healthCheckNodePorts());
    await sink.syncEndpoints(localEndpointCounts(input.services, input.endpoints, unserved));
  } catch (err) {
    log.error("Error syncing healthcheck services", {
      err: errText(err),
    });
  }
}

/**
 * Per Service, the local ready endpoints of its primary IP family. One server answers for both
 * families here (upstream runs one per family), so adding the families would count a dual-stack
 * pod twice.
 */
export function localEndpointCounts(
  services: ServiceMap,
  endpoints: EndpointsMap,
  unserved?: ReadonlySet<ServiceKey>,
): Map<ServiceKey, number> {
  const out = new Map<ServiceKey, number>();
  for (const [key, counts] of endpoints.localReadyEndpoints()) {
    if (unserved?.has(key)) continue;
    const port = services.portsOf(key)[0];
    const family = port ? primaryFamily(port.clusterIPs) : undefined;
    const count = family ? counts[family] : undefined;
    if (count) out.set(key, count);
  }
  return out;
}
