// What a proxier (iptables, ipvs, or the dry-run planner) is given on every sync: the whole
// current view plus what changed since the last sync, so it can choose a full or partial sync.

import type { NodeInfo } from "../k8s/node-info.ts";
import type { SyncNote } from "./debug-state/history.ts";
import type { EndpointsMap, EndpointsUpdateResult } from "./endpoints-map.ts";
import type { ServiceMap, ServiceUpdateResult } from "./service-map.ts";

export interface SyncInput {
  readonly services: ServiceMap;
  readonly endpoints: EndpointsMap;
  readonly serviceUpdate: ServiceUpdateResult;
  readonly endpointsUpdate: EndpointsUpdateResult;
  /** This node as last seen; undefined until its Node object arrives (or in a snapshot without it). */
  readonly node: NodeInfo | undefined;
  readonly nodeName: string;
  /**
   * The CIDRs of every ServiceCIDR, canonical and sorted; empty before any arrived. nftables mode
   * drops traffic to ClusterIPs inside them that no Service holds.
   */
  readonly serviceCIDRs: readonly string[];
  /** Where each family's proxier notes whether it synced in full and what it wrote (/debug/state). */
  readonly note?: SyncNote;
}

export interface Proxier {
  /** Programs the kernel. Rejecting keeps the previous kernel state; the runner retries with backoff. */
  sync(input: SyncInput): Promise<void>;
  /**
   * The part of the first full sync that needs no cluster state (e.g. jump rules from the
   * built-in chains), started while the informers list so the first sync does not wait for it.
   * Never rejects: a failure is logged and the first sync does the work again.
   */
  prepare?(): Promise<void>;
}

/** Upstream's FullSyncPeriod: every proxier rewrites everything at least this often. */
export const FULL_SYNC_PERIOD_MS = 60 * 60 * 1000;
