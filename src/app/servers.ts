// The healthz and metrics listeners of a real run. Upstream either exits on a bind failure
// (--bind-address-hard-fail) or logs it and keeps retrying; we do the same.

import type { Registry } from "prom-client";
import type { EffectiveFeatureGates } from "../config/feature-gates.ts";
import type { ProxyConfig } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import type { ModeName } from "../modes/registry.ts";
import { kubeProxyConfigz } from "../proxy/healthcheck/configz.ts";
import { createHealthMetrics } from "../proxy/healthcheck/health-metrics.ts";
import { startHealthzServer } from "../proxy/healthcheck/healthz-server.ts";
import { type MetricsServerOptions, startMetricsServer } from "../proxy/healthcheck/metrics-server.ts";
import type { ProxierHealth } from "../proxy/healthcheck/proxier-health.ts";
import { createSliMetrics } from "../proxy/healthcheck/slis.ts";
import { Flagz } from "../proxy/healthcheck/zpages.ts";
import { errText } from "../util/err-text.ts";
import { UPSTREAM_COMPAT, versionInfo } from "../version.ts";

const RETRY_MS = 5_000;

export interface Servers {
  close(): Promise<void>;
}

interface Running {
  close(): Promise<void>;
}

/** Starts `start` now; on failure either rejects (hard fail) or retries every 5 s until closed. */
async function keepTrying(
  what: string,
  start: () => Promise<Running>,
  hardFail: boolean,
  log: Logger,
): Promise<() => Promise<void>> {
  let running: Running | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  const attempt = async (first: boolean): Promise<void> => {
    try {
      running = await start();
    } catch (err) {
      if (first && hardFail) throw err;
      log.error(`Failed to start ${what}; retrying`, {
        err: errText(err),
      });
      if (!closed) timer = setTimeout(() => void attempt(false), RETRY_MS);
    }
  };
  await attempt(true);
  return async () => {
    closed = true;
    if (timer) clearTimeout(timer);
    await running?.close();
  };
}

/** What the z-pages show besides the configuration: the gates and the command line's flags. */
export interface ZpageInputs {
  readonly featureGates: EffectiveFeatureGates;
  readonly flagValues: Readonly<Record<string, string>>;
  /** /debug/drift on the metrics server, when the mode can compare. */
  readonly drift?: () => Promise<object>;
}

export async function startServers(
  config: ProxyConfig,
  mode: ModeName,
  health: ProxierHealth,
  registry: Registry,
  log: Logger,
  zpages?: ZpageInputs,
  debugState?: MetricsServerOptions["debugState"],
): Promise<Servers> {
  const closers: (() => Promise<void>)[] = [];
  const hard = config.bindAddressHardFail;
  if (config.healthzBindAddress) {
    const metrics = createHealthMetrics(registry);
    const bindAddress = config.healthzBindAddress;
    closers.push(
      await keepTrying(
        "healthz server",
        () => startHealthzServer({ bindAddress, health, logger: log, metrics }),
        hard,
        log,
      ),
    );
  }
  if (config.metricsBindAddress) {
    const bindAddress = config.metricsBindAddress;
    // Created once, so the check history survives a retried bind.
    const slis = createSliMetrics();
    const flagz = zpages?.featureGates.enabled("ComponentFlagz") ? new Flagz(zpages.flagValues) : undefined;
    const version = versionInfo();
    const statusz = zpages?.featureGates.enabled("ComponentStatusz")
      ? () => ({
          startTimeMs: performance.timeOrigin,
          nowMs: Date.now(),
          runtime: version.runtime,
          binaryVersion: version.version,
          emulationVersion: UPSTREAM_COMPAT.replace(/^v/, ""),
        })
      : undefined;
    closers.push(
      await keepTrying(
        "metrics server",
        () =>
          startMetricsServer({
            bindAddress,
            registry,
            proxyMode: mode,
            configz: () => kubeProxyConfigz(config),
            profiling: config.enableProfiling,
            logger: log,
            slis,
            ...(flagz ? { flagz } : {}),
            ...(statusz ? { statusz } : {}),
            ...(debugState ? { debugState } : {}),
            ...(zpages?.drift ? { drift: zpages.drift } : {}),
          }),
        hard,
        log,
      ),
    );
  }
  return {
    async close() {
      await Promise.all(closers.map((c) => c()));
    },
  };
}
