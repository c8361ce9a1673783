// A cluster source feeds object changes to kube-proxy: the API server's informers in a real
// run, a --state snapshot in tests and --dry-run. Both drive the same handler, so everything
// downstream behaves the same whichever feeds it.

import type { EndpointSliceObject, NodeObject, ServiceCIDRObject, ServiceObject } from "./objects.ts";

export interface ClusterEventHandler {
  /** previous undefined: added; current undefined: deleted. */
  onServiceChange(previous: ServiceObject | undefined, current: ServiceObject | undefined): void;
  /** removed: the slice was deleted (slice holds its last known state). */
  onEndpointSliceChange(slice: EndpointSliceObject, removed: boolean): void;
  /** This node's Node object; undefined when it was deleted. */
  onNodeChange(node: NodeObject | undefined): void;
  /** removed: the ServiceCIDR was deleted (cidr holds its last known state). */
  onServiceCIDRChange(cidr: ServiceCIDRObject, removed: boolean): void;
  /** Every Service in the initial list has been delivered (upstream's servicesSynced). */
  onServicesSynced(): void;
  /** Every EndpointSlice in the initial list has been delivered (endpointSlicesSynced). */
  onEndpointSlicesSynced(): void;
}

export interface ClusterSource {
  /** Starts delivering; resolves once the watches are established (not necessarily synced). */
  start(handler: ClusterEventHandler): Promise<void>;
  /** Stops every watch; no handler call happens after this resolves. */
  stop(): Promise<void>;
}
