// Which endpoints a node may send a service port's traffic to, per traffic policy. Mirrors
// upstream v1.31 CategorizeEndpoints: both proxiers build their chains / real servers from this,
// so a divergence here would change where packets go, not just how rules look.

import type { EffectiveFeatureGates } from "../config/feature-gates.ts";
import { type EndpointPolicyInputs, usesClusterEndpoints, usesLocalEndpoints } from "./service-port.ts";
import type { EndpointInfo, ServicePortInfo } from "./types.ts";

/** The node label whose value is compared with endpoints' zone hints. */
export const ZONE_LABEL = "topology.kubernetes.io/zone";

/** What endpoint selection needs besides the endpoints: this node's labels and the run's gates. */
export interface TopologyContext {
  readonly nodeLabels: Readonly<Record<string, string>>;
  readonly featureGates: EffectiveFeatureGates;
}

export interface CategorizedEndpoints {
  /** Endpoints for Cluster-policy traffic; undefined when the port never uses Cluster policy. */
  clusterEndpoints: EndpointInfo[] | undefined;
  /** Endpoints for Local-policy traffic; undefined when the port never uses Local policy. */
  localEndpoints: EndpointInfo[] | undefined;
  /** Union of the two lists: everything this node may forward to (stale-conntrack decisions). */
  allReachableEndpoints: EndpointInfo[];
  /** Whether usable endpoints exist anywhere in the cluster (REJECT vs DROP), even if none here. */
  hasAnyEndpoints: boolean;
}

export function isServingTerminating(ep: EndpointInfo): boolean {
  return ep.serving && ep.terminating;
}

export function filterEndpoints(
  endpoints: readonly EndpointInfo[],
  keep: (ep: EndpointInfo) => boolean,
): EndpointInfo[] {
  return endpoints.filter(keep);
}

/** Annotation values that turn topology-aware routing off (or never asked for it). */
const TOPOLOGY_MODE_OFF: ReadonlySet<string> = new Set(["", "disabled", "Disabled"]);

/**
 * Zone hints are honoured only when they can be trusted for this node: the node has a zone,
 * every ready endpoint carries hints (a partial set means the EndpointSlice controller is
 * mid-update or gave up), and at least one endpoint is hinted for our zone (otherwise
 * filtering would black-hole the zone). The feature gates decide first, as in v1.31: with both
 * TopologyAwareHints and ServiceTrafficDistribution off, hints are ignored; with
 * ServiceTrafficDistribution on, hints alone decide (they are how a trafficDistribution of
 * PreferClose reaches the node); with only TopologyAwareHints on, the Service must also carry
 * the topology-mode annotation (any value but "", "disabled" or "Disabled").
 */
export function canUseTopology(
  endpoints: readonly EndpointInfo[],
  svc: Pick<ServicePortInfo, "topologyMode">,
  ctx: TopologyContext,
): boolean {
  const gates = ctx.featureGates;
  const distribution = gates.enabled("ServiceTrafficDistribution");
  if (!distribution && !gates.enabled("TopologyAwareHints")) return false;
  if (!distribution && TOPOLOGY_MODE_OFF.has(svc.topologyMode)) return false;
  const zone = ctx.nodeLabels[ZONE_LABEL] ?? "";
  let hasEndpointForZone = false;
  for (const ep of endpoints) {
    if (!ep.ready) continue;
    if (ep.zoneHints.size === 0) return false;
    if (zone === "") return false;
    if (ep.zoneHints.has(zone)) hasEndpointForZone = true;
  }
  return hasEndpointForZone;
}

function clusterEndpointsFor(
  endpoints: readonly EndpointInfo[],
  svc: ServicePortInfo,
  ctx: TopologyContext,
): { endpoints: EndpointInfo[]; useTopology: boolean } {
  const useTopology = canUseTopology(endpoints, svc, ctx);
  const zone = ctx.nodeLabels[ZONE_LABEL] ?? "";
  const ready = filterEndpoints(endpoints, (ep) => ep.ready && (!useTopology || ep.zoneHints.has(zone)));
  if (ready.length > 0) return { endpoints: ready, useTopology };
  // No ready endpoint anywhere (topology already fell back if our zone had none): keep serving
  // through terminating endpoints rather than dropping connections. Topology is not applied.
  return { endpoints: filterEndpoints(endpoints, isServingTerminating), useTopology };
}

function localEndpointsFor(endpoints: readonly EndpointInfo[]): {
  endpoints: EndpointInfo[];
  usesTerminating: boolean;
  anyUsable: boolean;
} {
  const anyUsable = endpoints.some((ep) => ep.ready || isServingTerminating(ep));
  const ready = filterEndpoints(endpoints, (ep) => ep.isLocal && ep.ready);
  if (ready.length > 0) return { endpoints: ready, usesTerminating: false, anyUsable };
  const terminating = filterEndpoints(endpoints, (ep) => ep.isLocal && isServingTerminating(ep));
  return { endpoints: terminating, usesTerminating: terminating.length > 0, anyUsable };
}

/** Cluster list first, then local endpoints not already in it; keyed by "ip:port". */
function union(a: readonly EndpointInfo[], b: readonly EndpointInfo[]): EndpointInfo[] {
  const seen = new Set(a.map((ep) => ep.endpoint));
  return [...a, ...b.filter((ep) => !seen.has(ep.endpoint))];
}

export function categorizeEndpoints(
  endpoints: readonly EndpointInfo[],
  svc: ServicePortInfo & EndpointPolicyInputs,
  ctx: TopologyContext,
): CategorizedEndpoints {
  const cluster = usesClusterEndpoints(svc) ? clusterEndpointsFor(endpoints, svc, ctx) : undefined;
  const clusterEndpoints = cluster?.endpoints;
  // Any ready endpoint in the cluster guarantees a non-empty cluster list.
  const clusterHasAny = (clusterEndpoints?.length ?? 0) > 0;

  if (!usesLocalEndpoints(svc)) {
    return {
      clusterEndpoints,
      localEndpoints: undefined,
      allReachableEndpoints: clusterEndpoints ?? [],
      hasAnyEndpoints: clusterHasAny,
    };
  }

  const local = localEndpointsFor(endpoints);
  const hasAnyEndpoints = clusterHasAny || local.anyUsable;
  let allReachableEndpoints: EndpointInfo[];
  if (!cluster) {
    allReachableEndpoints = local.endpoints;
  } else if (!cluster.useTopology && !local.usesTerminating) {
    // Unfiltered ready cluster endpoints already include every ready local endpoint.
    allReachableEndpoints = cluster.endpoints;
  } else {
    // Topology may have dropped local endpoints from the cluster list, and terminating local
    // endpoints are never in it: merge.
    allReachableEndpoints = union(cluster.endpoints, local.endpoints);
  }
  return { clusterEndpoints, localEndpoints: local.endpoints, allReachableEndpoints, hasAnyEndpoints };
}
