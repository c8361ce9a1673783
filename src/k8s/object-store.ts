// Remembers the current objects a source delivered, so --dump-state can write the same view
// kube-proxy synced from. It wraps a handler and forwards every call unchanged.

import { stringify } from "yaml";
import type { HostState } from "../host/host-state/schema.ts";
import type { EndpointSliceObject, NodeObject, ServiceCIDRObject, ServiceObject } from "./objects.ts";
import type { ClusterEventHandler } from "./source.ts";
import { type KubeObject, objectKey } from "./store.ts";

export interface ObjectStore {
  readonly services: ReadonlyMap<string, ServiceObject>;
  readonly endpointSlices: ReadonlyMap<string, EndpointSliceObject>;
  readonly serviceCIDRs: ReadonlyMap<string, ServiceCIDRObject>;
  readonly node: NodeObject | undefined;
}

const keyOf = (o: KubeObject): string => objectKey(o);

/**
 * `endpointSlices: false` leaves slices out (/debug/state rebuilds them from the proxy's parsed
 * copies; keeping every whole slice would double what a large cluster costs in memory).
 */
export function recordingHandler(
  inner: ClusterEventHandler,
  opts: { readonly endpointSlices?: boolean } = {},
): {
  handler: ClusterEventHandler;
  store: ObjectStore;
} {
  const services = new Map<string, ServiceObject>();
  const endpointSlices = new Map<string, EndpointSliceObject>();
  const serviceCIDRs = new Map<string, ServiceCIDRObject>();
  const keepSlices = opts.endpointSlices ?? true;
  const store = { services, endpointSlices, serviceCIDRs, node: undefined as NodeObject | undefined };
  const handler: ClusterEventHandler = {
    onServiceChange(previous, current) {
      if (current) services.set(keyOf(current), current);
      else if (previous) services.delete(keyOf(previous));
      inner.onServiceChange(previous, current);
    },
    onEndpointSliceChange(slice, removed) {
      if (keepSlices && removed) endpointSlices.delete(keyOf(slice));
      else if (keepSlices) endpointSlices.set(keyOf(slice), slice);
      inner.onEndpointSliceChange(slice, removed);
    },
    onNodeChange(node) {
      store.node = node;
      inner.onNodeChange(node);
    },
    onServiceCIDRChange(cidr, removed) {
      if (removed) serviceCIDRs.delete(keyOf(cidr));
      else serviceCIDRs.set(keyOf(cidr), cidr);
      inner.onServiceCIDRChange(cidr, removed);
    },
    onServicesSynced: () => inner.onServicesSynced(),
    onEndpointSlicesSynced: () => inner.onEndpointSlicesSynced(),
  };
  return { handler, store };
}

function withKind<T extends object>(obj: T, apiVersion: string, kind: string): T {
  return { apiVersion, kind, ...obj };
}

/** How --dump-state writes the snapshot: by the file's extension, ".json" for JSON. */
export type StateFileFormat = "yaml" | "json";

export function stateFileFormatFor(path: string): StateFileFormat {
  return path.toLowerCase().endsWith(".json") ? "json" : "yaml";
}

/**
 * The --state format: objects sorted by key, then the HostState. YAML is one document per object
 * (easy to read in a bug report); JSON is one `v1 List` holding them all, which writes and reads
 * in a fraction of the time at 10,000 Services.
 */
export function renderStateFile(
  store: ObjectStore,
  hostState?: HostState,
  format: StateFileFormat = "yaml",
): string {
  const sorted = <T>(m: ReadonlyMap<string, T>) =>
    [...m].sort(([a], [b]) => a.localeCompare(b)).map(([, v]) => v);
  const docs: object[] = [];
  if (store.node) docs.push(withKind(store.node, "v1", "Node"));
  for (const c of sorted(store.serviceCIDRs)) docs.push(withKind(c, "networking.k8s.io/v1", "ServiceCIDR"));
  for (const s of sorted(store.services)) docs.push(withKind(s, "v1", "Service"));
  for (const s of sorted(store.endpointSlices))
    docs.push(withKind(s, "discovery.k8s.io/v1", "EndpointSlice"));
  if (hostState) docs.push(hostState);
  if (format === "json")
    return `${JSON.stringify({ apiVersion: "v1", kind: "List", items: docs }, null, 1)}\n`;
  // Round-trip through JSON: informer objects may carry Date instances and class prototypes.
  return docs.map((d) => stringify(JSON.parse(JSON.stringify(d)), { lineWidth: 0 })).join("---\n");
}
