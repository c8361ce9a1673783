// The SLI metrics of the metrics server's /healthz (component-base metrics/prometheus/slis):
// kubernetes_healthcheck{name,type} (1 when the check last passed, 0 when it failed) and
// kubernetes_healthchecks_total{name,type,status}. Upstream keeps them in their own registry,
// served only on /metrics/slis (not on /metrics), and clears it on DELETE /metrics/slis.

import { Counter, Gauge } from "prom-client";
import { KubeRegistry } from "../metrics/registry.ts";

export interface SliMetrics {
  readonly registry: KubeRegistry;
  /** One run of check `name` behind endpoint `type` ("healthz"). */
  observe(name: string, type: string, ok: boolean): void;
  /** DELETE /metrics/slis: forget every series. */
  reset(): void;
}

export function createSliMetrics(): SliMetrics {
  const registry = new KubeRegistry();
  const last = new Gauge({
    name: "kubernetes_healthcheck",
    help: "[BETA] This metric records the result of a single healthcheck.",
    labelNames: ["name", "type"] as const,
    registers: [registry],
  });
  const total = new Counter({
    name: "kubernetes_healthchecks_total",
    help: "[BETA] This metric records the results of all healthcheck.",
    labelNames: ["name", "type", "status"] as const,
    registers: [registry],
  });
  return {
    registry,
    observe(name, type, ok) {
      last.set({ name, type }, ok ? 1 : 0);
      total.inc({ name, type, status: ok ? "success" : "error" });
    },
    reset: () => registry.resetMetrics(),
  };
}
