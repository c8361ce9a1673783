// The proxier health server (healthzBindAddress, default 0.0.0.0:10256): /healthz for load
// balancers (proxier health and node eligibility), /livez for the kubelet (proxier health only).

import type { Logger } from "../../log/logger.ts";
import type { HealthMetrics } from "./health-metrics.ts";
import { boundAddress, closeServer, notFound, reply, serveOn } from "./http.ts";
import type { HealthResponse, ProxierHealth } from "./proxier-health.ts";

export interface HealthzServerOptions {
  /** "ip:port" as configured; an unspecified IP listens on every address of both families. */
  bindAddress: string;
  health: ProxierHealth;
  logger: Logger;
  /** Status-code counters; omitted, nothing is counted. */
  metrics?: HealthMetrics;
}

export interface RunningServer {
  /** The "ip:port" actually bound (shows the real port when 0 was asked for). */
  readonly address: string;
  close(): Promise<void>;
}

/** Starts listening; rejects with BindError when the address cannot be bound. */
export async function startHealthzServer(opts: HealthzServerOptions): Promise<RunningServer> {
  const { health, metrics } = opts;
  const answer = (res: Parameters<typeof reply>[0], r: HealthResponse) =>
    reply(res, r.status, "application/json", r.body);

  const server = await serveOn(
    opts.bindAddress,
    `failed to start proxier healthz on ${opts.bindAddress}`,
    (_req, res, path) => {
      if (path === "/healthz") {
        const r = health.healthzResponse();
        metrics?.healthzTotal.inc({ code: String(r.status) });
        return answer(res, r);
      }
      if (path === "/livez") {
        const r = health.livezResponse();
        metrics?.livezTotal.inc({ code: String(r.status) });
        return answer(res, r);
      }
      notFound(res);
    },
  );

  const address = boundAddress(server);
  opts.logger.v(3).info("Starting healthz HTTP server", { address });
  return { address, close: () => closeServer(server) };
}
