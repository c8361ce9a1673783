// Everything a real run serves on /metrics, in one registry, as upstream's legacy registry holds
// it: the kubeproxy_* families for the mode, the process collector, kubernetes_build_info, the
// REST client's request metrics, the proxier health counters and kubernetes_feature_enabled. iptables mode adds its nfacct
// counters when it finds nfacct usable (see modes/iptables/build.ts). Nothing Go-runtime or Node-runtime
// specific (go_*, nodejs_*) is exposed.

import { DEFAULT_FEATURE_GATES, type EffectiveFeatureGates } from "../config/feature-gates.ts";
import type { ApiRequestObserver } from "../k8s/api-client.ts";
import type { ModeName } from "../modes/registry.ts";
import { createHealthMetrics, type HealthMetrics } from "../proxy/healthcheck/health-metrics.ts";
import { registerBuildInfo } from "../proxy/metrics/build-info.ts";
import { registerFeatureEnabled } from "../proxy/metrics/feature-enabled.ts";
import { createMetrics, type Metrics } from "../proxy/metrics/metrics.ts";
import {
  type ProcessCollectorOptions,
  registerProcessCollector,
} from "../proxy/metrics/process-collector.ts";
import { KubeRegistry } from "../proxy/metrics/registry.ts";
import { createRestClientMetrics } from "../proxy/metrics/rest-client.ts";
import { type VersionInfo, versionInfo } from "../version.ts";

export interface RunMetrics {
  readonly metrics: Metrics;
  /** Hook for the API client (rest_client_*). */
  readonly restClient: ApiRequestObserver;
  readonly health: HealthMetrics;
}

export interface RunMetricsOptions {
  readonly mode: ModeName;
  readonly version?: VersionInfo;
  readonly process?: ProcessCollectorOptions;
  /** The run's gates, for kubernetes_feature_enabled; every default when absent. */
  readonly featureGates?: EffectiveFeatureGates;
}

export function createRunMetrics(o: RunMetricsOptions): RunMetrics {
  const registry = new KubeRegistry();
  const metrics = createMetrics(registry, o.mode);
  registerProcessCollector(registry, o.process);
  registerBuildInfo(registry, o.version ?? versionInfo());
  registerFeatureEnabled(registry, o.featureGates ?? DEFAULT_FEATURE_GATES);
  return {
    metrics,
    restClient: createRestClientMetrics(registry),
    health: createHealthMetrics(registry),
  };
}
