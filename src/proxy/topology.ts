// Which endpoints a node may send a service port's traffic to, per traffic policy and topology
// hints. Mirrors upstream v1.37 CategorizeEndpoints: both proxiers build their chains / real servers from this,
// so a divergence here would change where packets go, not just how rules look.

import type { EffectiveFeatureGates } from "../config/feature-gates.ts";
import { type EndpointPolicyInputs, usesClusterEndpoints, usesLocalEndpoints } from "./service-port.ts";
import type { EndpointInfo, ServicePortInfo } from "./types.ts";

/** The node label whose value is compared with endpoints' zone hints. */
export const ZONE_LABEL = "topology.kubernetes.io/zone";

/** What endpoint selection needs besides the endpoints: this node's labels and the run's gates. */
export interface TopologyContext {
  /** This node's name, compared with endpoints' node hints (PreferSameNode). */
  readonly nodeName: string;
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

/** How a service port's cluster endpoints are narrowed for this node (upstream's topology modes). */
export type TopologyMode = "" | "PreferSameNode" | "PreferSameZone";

/**
 * Which hints can be trusted for this node (upstream 1.37 topologyModeFromHints). Only ready
 * endpoints count. Node hints win when every ready endpoint carries them and one is hinted for
 * this node; otherwise zone hints, when every ready endpoint carries them and one is hinted for
 * this node's zone. A partial set of hints means the EndpointSlice controller is mid-update or
 * gave up, and no hint for this node or zone would black-hole it: both mean "no topology".
 * The Service's topology annotation no longer matters: the hints are set only when asked for.
 */
export function topologyModeFromHints(
  endpoints: readonly EndpointInfo[],
  ctx: TopologyContext,
): TopologyMode {
  const zone = ctx.nodeLabels[ZONE_LABEL] ?? "";
  let allHaveNodeHints = true;
  let allHaveZoneHints = true;
  let hasForNode = false;
  let hasForZone = false;
  for (const ep of endpoints) {
    if (!ep.ready) continue;
    if (ep.nodeHints.size === 0) allHaveNodeHints = false;
    else if (ctx.nodeName !== "" && ep.nodeHints.has(ctx.nodeName)) hasForNode = true;
    if (ep.zoneHints.size === 0) allHaveZoneHints = false;
    else if (zone !== "" && ep.zoneHints.has(zone)) hasForZone = true;
  }
  if (allHaveNodeHints && hasForNode && ctx.featureGates.enabled("PreferSameTrafficDistribution"))
    return "PreferSameNode";
  if (allHaveZoneHints && hasForZone) return "PreferSameZone";
  return "";
}

/** Whether the topology mode lets this node use the endpoint. */
function availableForTopology(ep: EndpointInfo, mode: TopologyMode, ctx: TopologyContext): boolean {
  if (mode === "PreferSameNode") return ep.nodeHints.has(ctx.nodeName);
  if (mode === "PreferSameZone") return ep.zoneHints.has(ctx.nodeLabels[ZONE_LABEL] ?? "");
  return true;
}

function clusterEndpointsFor(
  endpoints: readonly EndpointInfo[],
  ctx: TopologyContext,
): { endpoints: EndpointInfo[]; useTopology: boolean } {
  const mode = topologyModeFromHints(endpoints, ctx);
  const ready = filterEndpoints(endpoints, (ep) => ep.ready && availableForTopology(ep, mode, ctx));
  if (ready.length > 0) return { endpoints: ready, useTopology: mode !== "" };
  // No ready endpoint anywhere (topology already fell back if our node and zone had none): keep
  // serving through terminating endpoints rather than dropping connections, without topology.
  return { endpoints: filterEndpoints(endpoints, isServingTerminating), useTopology: mode !== "" };
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
  const cluster = usesClusterEndpoints(svc) ? clusterEndpointsFor(endpoints, ctx) : undefined;
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
