// A ClusterSource over a --state snapshot: delivers every object once, then reports both
// caches synced, exactly as informers do after their initial list.

import { nodeName } from "./node-info.ts";
import type { EndpointSliceObject, NodeObject, ServiceCIDRObject, ServiceObject } from "./objects.ts";
import type { ClusterEventHandler, ClusterSource } from "./source.ts";
import type { StateDocuments } from "./state-file.ts";
import { validNodeName } from "./validation.ts";

export function createSnapshotSource(docs: StateDocuments, nodeName: string): ClusterSource {
  let stopped = false;
  return {
    async start(handler: ClusterEventHandler) {
      if (stopped) return;
      // ServiceCIDRs first: the first sync then already knows which ClusterIPs are allocatable.
      for (const cidr of docs.serviceCIDRs) handler.onServiceCIDRChange(cidr as ServiceCIDRObject, false);
      for (const svc of docs.services) handler.onServiceChange(undefined, svc as ServiceObject);
      handler.onServicesSynced();
      for (const slice of docs.endpointSlices)
        handler.onEndpointSliceChange(slice as EndpointSliceObject, false);
      handler.onEndpointSlicesSynced();
      const node = docs.nodes.find((n) => n.metadata?.name === nodeName);
      if (node) handler.onNodeChange(node as NodeObject);
    },
    async stop() {
      stopped = true;
    },
  };
}

/**
 * The node a snapshot describes when no --hostname-override names one: its only Node, when that
 * has a name the API server would accept (anything else would flow on as this node's name).
 */
export function snapshotNodeName(docs: StateDocuments): string | undefined {
  const name: unknown = docs.nodes.length === 1 ? nodeName(docs.nodes[0]) : undefined;
  return validNodeName(name) === undefined ? (name as string) : undefined;
}
