// Every API server resource kube-proxy-ts touches and the RBAC verbs that takes, in one place.
// The informers, the node-IP lookup and the event recorder take their paths from here, and
// test/deploy checks the ClusterRole in deploy/ against this list and against the requests the
// real binary makes, so the shipped permissions stay exactly what the code needs.

export type ApiVerb = "get" | "list" | "watch" | "create";

export interface ApiAccess {
  /** RBAC apiGroup: "" for the core group. */
  readonly apiGroup: string;
  readonly resource: string;
  /** Sorted, so comparisons with a ClusterRole rule are plain. */
  readonly verbs: readonly ApiVerb[];
  /** Why the binary needs it (for people reading the ClusterRole). */
  readonly why: string;
}

/** Collection paths (cluster-wide; the events path is per namespace, see eventsPath). */
export const API_PATHS = {
  services: "/api/v1/services",
  endpointSlices: "/apis/discovery.k8s.io/v1/endpointslices",
  nodes: "/api/v1/nodes",
  serviceCIDRs: "/apis/networking.k8s.io/v1/servicecidrs",
} as const;

/** events.k8s.io/v1 Events are created in the namespace of the object they are about. */
export function eventsPath(namespace: string): string {
  return `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`;
}

/** One Node by name (the node-IP lookup before the informers start). */
export function nodePath(name: string): string {
  return `${API_PATHS.nodes}/${encodeURIComponent(name)}`;
}

export const API_ACCESS: readonly ApiAccess[] = [
  {
    apiGroup: "",
    resource: "services",
    verbs: ["list", "watch"],
    why: "Service informer (src/k8s/informers.ts)",
  },
  {
    apiGroup: "discovery.k8s.io",
    resource: "endpointslices",
    verbs: ["list", "watch"],
    why: "EndpointSlice informer (src/k8s/informers.ts)",
  },
  {
    apiGroup: "",
    resource: "nodes",
    // get: node IPs at startup (src/app/node-ips.ts); list/watch: this node's informer, narrowed
    // by a metadata.name field selector, which RBAC cannot express, so it covers all nodes.
    verbs: ["get", "list", "watch"],
    why: "node IPs at startup and this node's informer",
  },
  {
    apiGroup: "networking.k8s.io",
    resource: "servicecidrs",
    verbs: ["list", "watch"],
    why: "ServiceCIDR informer: nftables mode drops traffic to unallocated ClusterIPs (src/k8s/informers.ts)",
  },
  {
    apiGroup: "events.k8s.io",
    resource: "events",
    // Only POSTs: every event gets a fresh name, so nothing is patched or updated.
    verbs: ["create"],
    why: "the Starting event and Service warnings (src/k8s/api-recorder.ts)",
  },
];
