// The API-server-backed ClusterSource: one reflector each for Services, EndpointSlices, this
// node's Node and ServiceCIDRs, wired to the ClusterEventHandler the way upstream's ServiceConfig,
// EndpointSliceConfig, NodeConfig and ServiceCIDRConfig wire their informers to the proxier.

import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "../log/logger.ts";
import type { BackoffOptions } from "../util/backoff.ts";
import { tokenBucket, unlimited } from "../util/token-bucket.ts";
import { API_PATHS } from "./api-access.ts";
import { type ApiClient, kubeApiClient } from "./api-client.ts";
import { endpointSliceIdentity } from "./cached-forms.ts";
import type { EndpointSliceObject, NodeObject, ServiceCIDRObject, ServiceObject } from "./objects.ts";
import { Reflector } from "./reflector.ts";
import { nodeFieldSelector, SERVICE_AND_SLICE_SELECTOR, SERVICE_FIELD_SELECTOR } from "./selectors.ts";
import type { ClusterEventHandler, ClusterSource } from "./source.ts";

export interface ApiSourceOptions {
  kubeConfig: KubeConfig;
  nodeName: string;
  logger: Logger;
  /** --kube-api-qps; unset or <= 0: no client-side limit. */
  qps?: number;
  /** --kube-api-burst. */
  burst?: number;
  /** Retry pacing for lists and watches (tests shorten it). */
  backoff?: BackoffOptions;
  /** Overrides the HTTP client built from kubeConfig (tests, or sharing one limiter). */
  client?: ApiClient;
  /** configSyncPeriod: every cached object is re-delivered this often; unset or <= 0: never. */
  resyncPeriodMs?: number;
}

export function createApiSource(opts: ApiSourceOptions): ClusterSource {
  const limiter = opts.qps && opts.qps > 0 ? tokenBucket(opts.qps, opts.burst ?? opts.qps) : unlimited;
  const client = opts.client ?? kubeApiClient(opts.kubeConfig, limiter);
  const log = opts.logger.named("informers");
  let reflectors: Reflector<object>[] = [];
  let resyncTimer: ReturnType<typeof setInterval> | undefined;

  return {
    async start(handler: ClusterEventHandler) {
      if (reflectors.length) throw new Error("the API source is already started");
      const common = { client, backoff: opts.backoff ?? {} };
      const services = new Reflector<ServiceObject>(
        {
          ...common,
          kind: "Service",
          apiVersion: "v1",
          path: API_PATHS.services,
          labelSelector: SERVICE_AND_SLICE_SELECTOR,
          fieldSelector: SERVICE_FIELD_SELECTOR,
          logger: log.named("services"),
        },
        {
          added: (s) => handler.onServiceChange(undefined, s),
          updated: (prev, cur) => handler.onServiceChange(prev, cur),
          deleted: (s) => handler.onServiceChange(s, undefined),
          synced: () => handler.onServicesSynced(),
        },
      );
      const slices = new Reflector<EndpointSliceObject>(
        {
          ...common,
          kind: "EndpointSlice",
          apiVersion: "discovery.k8s.io/v1",
          path: API_PATHS.endpointSlices,
          labelSelector: SERVICE_AND_SLICE_SELECTOR,
          logger: log.named("endpointslices"),
          // The proxy's EndpointSliceCache holds the endpoints; the informer only what a
          // deletion needs (the handler ignores an update's previous state).
          cached: endpointSliceIdentity,
        },
        {
          added: (s) => handler.onEndpointSliceChange(s, false),
          updated: (_prev, cur) => handler.onEndpointSliceChange(cur, false),
          deleted: (s) => handler.onEndpointSliceChange(s, true),
          synced: () => handler.onEndpointSlicesSynced(),
        },
      );
      const node = new Reflector<NodeObject>(
        {
          ...common,
          kind: "Node",
          apiVersion: "v1",
          path: API_PATHS.nodes,
          fieldSelector: nodeFieldSelector(opts.nodeName),
          logger: log.named("node"),
        },
        {
          added: (n) => handler.onNodeChange(n),
          updated: (_prev, cur) => handler.onNodeChange(cur),
          deleted: () => handler.onNodeChange(undefined),
          synced: () => {},
        },
      );
      const serviceCIDRs = new Reflector<ServiceCIDRObject>(
        {
          ...common,
          kind: "ServiceCIDR",
          apiVersion: "networking.k8s.io/v1",
          path: API_PATHS.serviceCIDRs,
          logger: log.named("servicecidrs"),
        },
        {
          added: (c) => handler.onServiceCIDRChange(c, false),
          updated: (_prev, cur) => handler.onServiceCIDRChange(cur, false),
          deleted: (c) => handler.onServiceCIDRChange(c, true),
          synced: () => {},
        },
      );
      reflectors = [services, slices, node, serviceCIDRs] as Reflector<object>[];
      const period = opts.resyncPeriodMs ?? 0;
      if (period > 0) {
        resyncTimer = setInterval(() => {
          for (const r of reflectors) r.resync();
        }, period);
        // The watches keep the process alive; the resync alone must not.
        (resyncTimer as { unref?: () => void }).unref?.();
      }
      // Upstream starts its informers without waiting for them; we wait only for the first
      // list attempts, so a caller's next step (the birth cry) follows a real first contact.
      await Promise.all(reflectors.map((r) => r.start()));
    },

    async stop() {
      if (resyncTimer) clearInterval(resyncTimer);
      const running = reflectors;
      await Promise.all(running.map((r) => r.stop()));
    },
  };
}
