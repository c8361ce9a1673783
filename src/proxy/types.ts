// The mode-independent view of the cluster that both proxiers consume. Mirrors upstream's
// ServicePort / Endpoint split, with one difference: a service port carries the addresses of
// both IP families, and each per-family proxier picks its own (see clusterIP(family)).

import type { IPFamily } from "../util/net/family.ts";
import type { Protocol } from "../util/net/protocol.ts";

/** Identity of one port of one Service: namespace/name:portName. */
export interface ServicePortName {
  readonly namespace: string;
  readonly name: string;
  /** The Service port's name; "" for an unnamed single port. */
  readonly port: string;
  readonly protocol: Protocol;
}

/** "ns/name:port" — upstream's ServicePortName.String() (no port suffix when unnamed). */
export function servicePortNameString(n: ServicePortName): string {
  return n.port ? `${n.namespace}/${n.name}:${n.port}` : `${n.namespace}/${n.name}`;
}

/**
 * The "ns/name" of a service port id (servicePortNameString): the text before its port name's
 * ":" (namespace and name are DNS labels, so the last ":" after the "/" is that one).
 */
export function serviceKeyOfPortId(id: string): string {
  const colon = id.lastIndexOf(":");
  return colon > id.indexOf("/") ? id.slice(0, colon) : id;
}

/** "ns/name" — the key of a Service in trackers and the EndpointSlice cache. */
export type ServiceKey = string;

export function serviceKey(namespace: string, name: string): ServiceKey {
  return `${namespace}/${name}`;
}

export interface ServicePortInfo {
  readonly name: ServicePortName;
  /** Key: ServicePortName string, unique per Service port. */
  readonly id: string;
  /** Cluster IPs by family (a dual-stack Service has both). */
  readonly clusterIPs: Readonly<Partial<Record<IPFamily, string>>>;
  readonly port: number;
  readonly protocol: Protocol;
  /** 0 when the Service has no NodePort for this port. */
  readonly nodePort: number;
  readonly externalIPs: readonly string[];
  /** LoadBalancer ingress IPs (ipMode Proxy excluded), both families. */
  readonly loadBalancerVIPs: readonly string[];
  /** Source CIDRs allowed to reach the LoadBalancer VIPs; empty: everyone. */
  readonly loadBalancerSourceRanges: readonly string[];
  readonly sessionAffinity: { readonly type: "None" | "ClientIP"; readonly timeoutSeconds: number };
  readonly externalPolicyLocal: boolean;
  readonly internalPolicyLocal: boolean;
  /** Non-zero for externalTrafficPolicy Local LoadBalancers with a health check port. */
  readonly healthCheckNodePort: number;
  /** Whether topology-aware routing was requested (hints annotation Auto, or trafficDistribution PreferClose). */
  readonly topologyMode: string;
  readonly trafficDistribution: string;
  readonly serviceType: "ClusterIP" | "NodePort" | "LoadBalancer";
  /** The Service's creationTimestamp (ms since the epoch): the older claim on an external IP wins. */
  readonly createdAtMs?: number;
}

export interface EndpointInfo {
  /** "ip:port" — unique within one service port. */
  readonly endpoint: string;
  readonly ip: string;
  readonly port: number;
  readonly family: IPFamily;
  readonly nodeName: string;
  readonly zone: string;
  /** True when the endpoint runs on this node. */
  readonly isLocal: boolean;
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  /** Zones this endpoint is hinted for (`hints.forZones`); empty set: no hints. */
  readonly zoneHints: ReadonlySet<string>;
  /** Nodes this endpoint is hinted for (`hints.forNodes`, PreferSameNode); empty set: no hints. */
  readonly nodeHints: ReadonlySet<string>;
}

/**
 * A plain object with every field of an endpoint. The model's endpoints read most fields through
 * a record their ports share, so spreading one copies nothing but that reference.
 */
export function plainEndpoint(e: EndpointInfo): EndpointInfo {
  return {
    endpoint: e.endpoint,
    ip: e.ip,
    port: e.port,
    family: e.family,
    nodeName: e.nodeName,
    zone: e.zone,
    isLocal: e.isLocal,
    ready: e.ready,
    serving: e.serving,
    terminating: e.terminating,
    zoneHints: e.zoneHints,
    nodeHints: e.nodeHints,
  };
}

/** The fields of a service port that are not the Service's: the rest are the same for all its ports. */
export type OwnServicePortField = "name" | "id" | "port" | "protocol" | "nodePort";

/**
 * A plain object with every field of a service port. The model's ports read the Service-wide
 * fields through a record all ports of their Service share, so spreading one would drop those.
 */
export function plainServicePort(p: ServicePortInfo): ServicePortInfo {
  // Every key listed: a field added to ServicePortInfo fails to compile here until copied.
  const all: { readonly [K in keyof ServicePortInfo]-?: ServicePortInfo[K] } = {
    name: p.name,
    id: p.id,
    clusterIPs: p.clusterIPs,
    port: p.port,
    protocol: p.protocol,
    nodePort: p.nodePort,
    externalIPs: p.externalIPs,
    loadBalancerVIPs: p.loadBalancerVIPs,
    loadBalancerSourceRanges: p.loadBalancerSourceRanges,
    sessionAffinity: p.sessionAffinity,
    externalPolicyLocal: p.externalPolicyLocal,
    internalPolicyLocal: p.internalPolicyLocal,
    healthCheckNodePort: p.healthCheckNodePort,
    topologyMode: p.topologyMode,
    trafficDistribution: p.trafficDistribution,
    serviceType: p.serviceType,
    createdAtMs: p.createdAtMs as number,
  };
  if (p.createdAtMs !== undefined) return all;
  const { createdAtMs: _c, ...rest } = all;
  return rest;
}

/** All service ports by id. */
export type ServicePortMap = ReadonlyMap<string, ServicePortInfo>;
/** All endpoints by service port id. */
export type EndpointsMap = ReadonlyMap<string, readonly EndpointInfo[]>;

/** The node's primary IP of each family it has (from its Node object, or loopback). */
export type NodeIPs = Partial<Record<IPFamily, string>>;
