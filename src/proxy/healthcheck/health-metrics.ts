// Upstream counts every /healthz and /livez answer by status code
// (kubeproxy_proxy_healthz_total{code}, kubeproxy_proxy_livez_total{code}). They live here,
// beside their only writer, and register into whatever registry the process exposes.

import { Counter, type Registry } from "prom-client";
import { alpha } from "../metrics/metrics.ts";

export interface HealthMetrics {
  healthzTotal: Counter<"code">;
  livezTotal: Counter<"code">;
}

function counter(registry: Registry, name: string, help: string): Counter<"code"> {
  // Reuse an existing registration so two servers sharing one registry do not collide.
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<"code">;
  return new Counter({ name, help, labelNames: ["code"], registers: [registry] });
}

export function createHealthMetrics(registry: Registry): HealthMetrics {
  return {
    healthzTotal: counter(
      registry,
      "kubeproxy_proxy_healthz_total",
      alpha("Cumulative proxy healthz HTTP status"),
    ),
    livezTotal: counter(registry, "kubeproxy_proxy_livez_total", alpha("Cumulative proxy livez HTTP status")),
  };
}
