// The wire shapes kube-proxy reads, as plain JSON objects (camelCase, exactly what the API
// server and `kubectl get -o yaml` print). Every field is optional and unvalidated here: the
// trackers validate at this edge and skip what is bad, so one broken object never stops a sync.

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
}

export interface ServicePortSpec {
  name?: string;
  protocol?: string;
  port?: number;
  targetPort?: number | string;
  nodePort?: number;
  appProtocol?: string;
}

export interface ServiceObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: {
    type?: string;
    clusterIP?: string;
    clusterIPs?: string[];
    ipFamilies?: string[];
    ipFamilyPolicy?: string;
    ports?: ServicePortSpec[];
    externalIPs?: string[];
    externalName?: string;
    loadBalancerIP?: string;
    loadBalancerSourceRanges?: string[];
    sessionAffinity?: string;
    sessionAffinityConfig?: { clientIP?: { timeoutSeconds?: number } };
    externalTrafficPolicy?: string;
    internalTrafficPolicy?: string;
    healthCheckNodePort?: number;
    trafficDistribution?: string;
    selector?: Record<string, string>;
  };
  status?: {
    loadBalancer?: { ingress?: { ip?: string; hostname?: string; ipMode?: string }[] };
  };
}

export interface EndpointSliceObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  addressType?: string;
  ports?: { name?: string; port?: number; protocol?: string; appProtocol?: string }[] | null;
  endpoints?: {
    addresses?: string[];
    conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
    hostname?: string;
    nodeName?: string;
    zone?: string;
    hints?: { forZones?: { name?: string }[]; forNodes?: { name?: string }[] };
  }[];
}

export interface NodeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: {
    podCIDR?: string;
    podCIDRs?: string[];
    unschedulable?: boolean;
    taints?: { key?: string; effect?: string }[];
  };
  status?: { addresses?: { type?: string; address?: string }[] };
}

/** networking.k8s.io/v1 ServiceCIDR: one or two CIDRs ClusterIPs are allocated from. */
export interface ServiceCIDRObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: { cidrs?: string[] };
  status?: { conditions?: { type?: string; status?: string; reason?: string }[] };
}

/** Enough of an object to name it in logs and events. */
export interface ObjectRef {
  kind: "Service" | "EndpointSlice" | "Node" | "ServiceCIDR";
  namespace?: string;
  name: string;
  uid?: string;
}
