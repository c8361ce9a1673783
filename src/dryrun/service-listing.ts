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

export function renderServiceListing(ports: readonly ListedServicePort[]): string[] {
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
