// client-go's two core request metrics as upstream's /metrics carries them (component-base
// metrics/prometheus/restclient): rest_client_requests_total{code,method,host} for every attempt,
// "<error>" as the code when no response arrived, and rest_client_request_duration_seconds
// {verb,host} for every request except watches. Fed by the API client's observer hook.

import { Counter, Histogram, type Registry } from "prom-client";
import type { ApiRequestObserver } from "../../k8s/api-client.ts";
import { beta } from "./metrics.ts";

/** Upstream's latency buckets, 5 ms to 60 s. */
const LATENCY_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

export function createRestClientMetrics(registry: Registry): ApiRequestObserver {
  const requests = new Counter({
    name: "rest_client_requests_total",
    help: beta("Number of HTTP requests, partitioned by status code, method, and host."),
    labelNames: ["code", "method", "host"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "rest_client_request_duration_seconds",
    help: beta("Request latency in seconds. Broken down by verb, and host."),
    labelNames: ["verb", "host"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  return {
    result(status, method, host) {
      requests.inc({ code: status === undefined ? "<error>" : String(status), method, host });
    },
    latency(verb, host, seconds) {
      duration.observe({ verb, host }, seconds);
    },
  };
}
