// kube-proxy's HTTP faces: proxier health (/healthz, /livez), metrics (/metrics, /configz, ...)
// and the per-Service health check ports.

export { CONFIGZ_GROUP, goJSON, kubeProxyConfigz } from "./configz.ts";
export { formatRFC3339Nano, GO_ZERO_TIME } from "./go-time.ts";
export { createHealthMetrics, type HealthMetrics } from "./health-metrics.ts";
export { type HealthzServerOptions, type RunningServer, startHealthzServer } from "./healthz-server.ts";
export { BindError } from "./http.ts";
export { type MetricsServerOptions, startMetricsServer } from "./metrics-server.ts";
export {
  type HealthResponse,
  type HealthState,
  type NodeEligibilityInput,
  ProxierHealth,
  type ProxierHealthChecker,
  type ProxierHealthOptions,
  TO_BE_DELETED_TAINT,
} from "./proxier-health.ts";
export {
  type ServiceHealthListener,
  ServiceHealthServer,
  type ServiceHealthServerOptions,
} from "./service-health.ts";
