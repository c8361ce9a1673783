// The service ports a sync would program, with the endpoints chosen for each: the part of the
// --dry-run plan that is the same for every mode.

import type { EndpointInfo, ServicePortInfo } from "../proxy/types.ts";

export interface ListedEndpoint {
  readonly endpoint: string;
  readonly node: string;
  readonly local: boolean;
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
}

export interface ListedServicePort {
  readonly name: string;
  readonly type: string;
  readonly protocol: string;
  readonly port: number;
  readonly clusterIPs: string[];
  readonly nodePort?: number;
  readonly externalIPs?: string[];
  readonly loadBalancerIPs?: string[];
  readonly loadBalancerSourceRanges?: string[];
  readonly sessionAffinity?: { timeoutSeconds: number };
  readonly externalTrafficPolicy: "Cluster" | "Local";
  readonly internalTrafficPolicy: "Cluster" | "Local";
  readonly healthCheckNodePort?: number;
  readonly endpoints: ListedEndpoint[];
}

function listEndpoint(e: EndpointInfo): ListedEndpoint {
  return {
    endpoint: e.endpoint,
    node: e.nodeName,
    local: e.isLocal,
    ready: e.ready,
    serving: e.serving,
    terminating: e.terminating,
  };
}

export function listServicePort(svc: ServicePortInfo, endpoints: readonly EndpointInfo[]): ListedServicePort {
  const nonEmpty = (xs: readonly string[]) => (xs.length > 0 ? [...xs] : undefined);
  const optional = {
    nodePort: svc.nodePort || undefined,
    externalIPs: nonEmpty(svc.externalIPs),
    loadBalancerIPs: nonEmpty(svc.loadBalancerVIPs),
    loadBalancerSourceRanges: nonEmpty(svc.loadBalancerSourceRanges),
    sessionAffinity:
      svc.sessionAffinity.type === "ClientIP"
        ? { timeoutSeconds: svc.sessionAffinity.timeoutSeconds }
        : undefined,
    healthCheckNodePort: svc.healthCheckNodePort || undefined,
  };
  return {
    name: svc.id,
    type: svc.serviceType,
    protocol: svc.protocol,
    port: svc.port,
    clusterIPs: Object.values(svc.clusterIPs).filter((ip): ip is string => Boolean(ip)),
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
    externalTrafficPolicy: svc.externalPolicyLocal ? "Local" : "Cluster",
    internalTrafficPolicy: svc.internalPolicyLocal ? "Local" : "Cluster",
    endpoints: endpoints.map(listEndpoint),
  };
}

/** Service ports as a report lists them: an array, or a ServiceListing. */
export type ServicePortList = readonly ListedServicePort[] | ServiceListing;

/**
 * The service ports a sync saw, in id order, each listed with its endpoints only when it is
 * read: a listing held whole would be a second model of the cluster (a million endpoint
 * entries for a Service of 100 ports x 10,000 endpoints). The ports and their endpoint lists
 * are the sync's own (the maps replace them on change, never edit them).
 */
export class ServiceListing implements Iterable<ListedServicePort> {
  private readonly ports: ServicePortInfo[] = [];
  private readonly endpoints: (readonly EndpointInfo[])[] = [];

  constructor(
    services: Iterable<ServicePortInfo>,
    endpointsOf: (id: string) => readonly EndpointInfo[] | undefined,
  ) {
    const sorted = [...services].sort((a, b) => a.id.localeCompare(b.id));
    for (const svc of sorted) {
      this.ports.push(svc);
      this.endpoints.push(endpointsOf(svc.id) ?? []);
    }
  }

  get length(): number {
    return this.ports.length;
  }

  *[Symbol.iterator](): Iterator<ListedServicePort> {
    for (let i = 0; i < this.ports.length; i++) yield listServicePort(this.ports[i]!, this.endpoints[i]!);
  }

  /** As JSON, the array it lists (made whole: for small reports and tests). */
  toJSON(): ListedServicePort[] {
    return [...this];
  }
}

export function renderServiceListing(ports: ServicePortList): string[] {
  const out = [`Service ports (${ports.length}):`];
  for (const p of ports) {
    const addrs = [...p.clusterIPs, ...(p.externalIPs ?? []), ...(p.loadBalancerIPs ?? [])].join(",");
    const extras = [
      p.nodePort ? `nodePort ${p.nodePort}` : "",
      p.sessionAffinity ? `affinity ClientIP ${p.sessionAffinity.timeoutSeconds}s` : "",
      p.externalTrafficPolicy === "Local" ? "ETP Local" : "",
      p.internalTrafficPolicy === "Local" ? "ITP Local" : "",
      p.loadBalancerSourceRanges ? `sources ${p.loadBalancerSourceRanges.join(",")}` : "",
    ].filter(Boolean);
    out.push(
      `  ${p.name} ${p.type} ${p.protocol} ${addrs}:${p.port}${extras.length ? ` (${extras.join(", ")})` : ""}`,
    );
    if (p.endpoints.length === 0) out.push("    (no endpoints: traffic is rejected)");
    for (const e of p.endpoints) {
      const state = e.ready ? "ready" : e.serving && e.terminating ? "terminating, serving" : "not ready";
      out.push(`    -> ${e.endpoint} on ${e.node || "?"}${e.local ? " (local)" : ""} ${state}`);
    }
  }
  return out;
}
