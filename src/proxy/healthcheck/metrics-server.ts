// The metrics server (metricsBindAddress, default 127.0.0.1:10249) with upstream's routes:
// /metrics, /metrics/slis (the /healthz check results; DELETE resets them), /healthz (the
// apiserver-style ping check), /proxyMode, /configz, /flagz and /statusz (each while its
// ComponentFlagz / ComponentStatusz gate is on), /debug/drift (ours: the kernel against what
// the proxy wrote, see src/proxy/drift.ts), and the profiling routes when
// enableProfiling is set. Go's pprof cannot exist here, so those answer 501 and
// say why rather than serving something that only looks like a profile. Ours besides upstream's:
// /debug/state (see src/proxy/debug-state), when the run provides it.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Registry } from "prom-client";
import type { ProxyMode } from "../../config/types.ts";
import type { Logger } from "../../log/logger.ts";
import { CONFIGZ_GROUP, goJSON } from "./configz.ts";
import type { RunningServer } from "./healthz-server.ts";
import { boundAddress, closeServer, notFound, reply, serveOn } from "./http.ts";
import { createSliMetrics, type SliMetrics } from "./slis.ts";
import { type Flagz, type StatuszInput, statuszResponse, type ZpageResponse } from "./zpages.ts";

export interface MetricsServerOptions {
  bindAddress: string;
  registry: Registry;
  proxyMode: ProxyMode;
  /** The effective configuration as /configz shows it (see kubeProxyConfigz). */
  configz: () => object;
  /** enableProfiling: answer the /debug routes (501) instead of 404. */
  profiling: boolean;
  logger: Logger;
  /** Where /healthz records its check results (/metrics/slis); one per process. */
  slis?: SliMetrics;
  /** /flagz, when ComponentFlagz is on. */
  flagz?: Flagz;
  /** /statusz, when ComponentStatusz is on: the page's facts, read per request (the paths are filled in here). */
  statusz?: () => Omit<StatuszInput, "paths">;
  /** /debug/state: the answer to one request's query (made from memory; never waits for a sync). */
  debugState?: (query: URLSearchParams) => Promise<DebugAnswer>;
  /** /debug/drift: compares the kernel with what the proxy wrote (src/proxy/drift.ts). */
  drift?: () => Promise<object>;
}

/** An answer of /debug/state. */
export interface DebugAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

/** The paths this server answers, as /statusz lists them (itself excluded, as upstream). */
function servedPaths(opts: MetricsServerOptions): string[] {
  const paths = ["/healthz", "/metrics/slis", "/proxyMode", "/metrics", "/configz"];
  if (opts.profiling) paths.push("/debug/pprof");
  if (opts.flagz) paths.push("/flagz");
  // /debug/state is ours, not upstream's: left out, so the page lists what upstream's lists.
  return paths;
}

function zpage(res: ServerResponse, r: ZpageResponse): void {
  const { "Content-Type": type = "text/plain; charset=utf-8", ...rest } = r.headers;
  reply(res, r.status, type, r.body, rest);
}

const TEXT = "text/plain; charset=utf-8";

const PROFILING_UNAVAILABLE =
  "kube-proxy-ts cannot serve Go pprof profiles or debug flags: this is not a Go process. " +
  "enableProfiling is accepted for compatibility only; profile the runtime with its own tools instead.\n";

/** The only check upstream installs on this mux is "ping", which always passes. */
function healthz(req: IncomingMessage, res: ServerResponse, slis: SliMetrics): void {
  const query = new URL(req.url ?? "/", "http://localhost").searchParams;
  const excluded = new Set(query.getAll("exclude"));
  // Each run of a check (not an excluded one) is an SLI sample, as upstream's handler records.
  if (!excluded.has("ping")) slis.observe("ping", "healthz", true);
  if (!query.has("verbose")) {
    reply(res, 200, TEXT, "ok");
    return;
  }
  let out = excluded.delete("ping") ? "[+]ping excluded: ok\n" : "[+]ping ok\n";
  if (excluded.size > 0) {
    const names = [...excluded]
      .sort()
      .map((n) => JSON.stringify(n))
      .join(",");
    out += `warn: some health checks cannot be excluded: no matches for ${names}\n`;
  }
  reply(res, 200, TEXT, `${out}healthz check passed\n`);
}

/** The drift report as JSON; a check that failed (the kernel could not be read) answers 500. */
async function driftPage(res: ServerResponse, drift: () => Promise<object>): Promise<void> {
  let report: object;
  try {
    report = await drift();
  } catch (err) {
    return reply(res, 500, TEXT, `drift check failed: ${err instanceof Error ? err.message : String(err)}\n`);
  }
  reply(res, 200, "application/json", `${JSON.stringify(report, null, 2)}\n`);
}

function isProfilingPath(path: string): boolean {
  return path === "/debug/pprof" || path.startsWith("/debug/pprof/") || path.startsWith("/debug/flags");
}

/** Starts listening; rejects with BindError when the address cannot be bound. */
export async function startMetricsServer(opts: MetricsServerOptions): Promise<RunningServer> {
  const slis = opts.slis ?? createSliMetrics();
  const server = await serveOn(opts.bindAddress, "starting metrics server failed", async (req, res, path) => {
    switch (path) {
      case "/metrics":
        return reply(res, 200, opts.registry.contentType, await opts.registry.metrics());
      case "/metrics/slis":
        if (req.method === "DELETE") {
          slis.reset();
          return reply(res, 200, TEXT, "metrics reset\n");
        }
        return reply(res, 200, slis.registry.contentType, await slis.registry.metrics());
      case "/healthz":
        return healthz(req, res, slis);
      case "/healthz/ping":
        return reply(res, 200, TEXT, "ok");
      case "/proxyMode":
        return reply(res, 200, TEXT, opts.proxyMode);
      case "/configz":
        return reply(res, 200, "application/json", goJSON({ [CONFIGZ_GROUP]: opts.configz() }));
      case "/flagz":
        if (opts.flagz) return zpage(res, opts.flagz.response(req.headers.accept));
        break;
      case "/debug/state":
        if (opts.debugState) {
          if (req.method !== "GET" && req.method !== "HEAD") return reply(res, 405, TEXT, "GET only\n");
          const query = new URL(req.url ?? "/", "http://localhost").searchParams;
          const answer = await opts.debugState(query);
          return reply(res, answer.status, answer.contentType, answer.body);
        }
        break;
      case "/debug/drift":
        if (opts.drift) return driftPage(res, opts.drift);
        break;
      case "/statusz":
        if (opts.statusz)
          return zpage(
            res,
            statuszResponse(req.headers.accept, { ...opts.statusz(), paths: servedPaths(opts) }),
          );
        break;
    }
    if (opts.profiling && isProfilingPath(path)) return reply(res, 501, TEXT, PROFILING_UNAVAILABLE);
    notFound(res);
  });

  const address = boundAddress(server);
  opts.logger.v(3).info("Starting metrics HTTP server", { address });
  return { address, close: () => closeServer(server) };
}
