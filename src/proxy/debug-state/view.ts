// Builds the /debug/state answer from what the process already holds: the service and
// endpoints maps of the sync controller (as the last sync, or the one running, applied them),
// the trackers' pending changes and the sync history. Nothing here waits for a sync.

import { familyOf, type IPFamily } from "../../util/net/family.ts";
import type { EndpointInfo, ServiceKey, ServicePortInfo } from "../types.ts";
import type { SyncHistory } from "./history.ts";
import type { BackendChoice, DebugState, EndpointState, ServicePortState } from "./schema.ts";

/** The parts of the sync controller the answer reads. */
export interface SyncedView {
  readonly services: Iterable<[string, ServicePortInfo]>;
  readonly endpoints: { get(id: string): readonly EndpointInfo[] | undefined };
  readonly initialized: boolean;
  pendingChanges(): {
    readonly services: ReadonlySet<ServiceKey>;
    readonly endpoints: ReadonlySet<ServiceKey>;
  };
}

export interface DebugStateInputs {
  readonly nodeName: string;
  readonly mode: string;
  readonly families: readonly IPFamily[];
  /** The mode's backend choices (RunningMode.describe); none when the mode says nothing. */
  readonly backends: readonly BackendChoice[];
  readonly synced: SyncedView;
  readonly history: SyncHistory;
  /** Wall-clock milliseconds. */
  readonly now?: () => number;
}

function endpointState(e: EndpointInfo): EndpointState {
  return {
    ip: e.ip,
    port: e.port,
    ready: e.ready,
    serving: e.serving,
    terminating: e.terminating,
    local: e.isLocal,
    ...(e.nodeName ? { nodeName: e.nodeName } : {}),
    ...(e.zone ? { zone: e.zone } : {}),
  };
}

/** One service port as `family`'s proxier programs it; undefined when it has no cluster IP there. */
export function servicePortState(
  p: ServicePortInfo,
  family: IPFamily,
  endpoints: readonly EndpointInfo[],
): ServicePortState | undefined {
  const clusterIP = p.clusterIPs[family];
  if (!clusterIP) return undefined;
  const ofFamily = (ips: readonly string[]) => ips.filter((ip) => familyOf(ip) === family);
  return {
    name: p.id,
    namespace: p.name.namespace,
    service: p.name.name,
    protocol: p.protocol,
    type: p.serviceType,
    clusterIP,
    port: p.port,
    nodePort: p.nodePort,
    externalIPs: ofFamily(p.externalIPs),
    loadBalancerIPs: ofFamily(p.loadBalancerVIPs),
    internalTrafficPolicy: p.internalPolicyLocal ? "Local" : "Cluster",
    externalTrafficPolicy: p.externalPolicyLocal ? "Local" : "Cluster",
    sessionAffinity: { type: p.sessionAffinity.type, timeoutSeconds: p.sessionAffinity.timeoutSeconds },
    healthCheckNodePort: p.healthCheckNodePort,
    trafficDistribution: p.trafficDistribution,
    endpoints: endpoints.filter((e) => e.family === family).map(endpointState),
  };
}

const sortedKeys = (keys: ReadonlySet<string>): string[] => [...keys].sort();

export function debugState(i: DebugStateInputs): DebugState {
  const ports = [...i.synced.services].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const services: DebugState["services"] = {};
  for (const family of i.families) {
    const list: ServicePortState[] = [];
    for (const [id, p] of ports) {
      const state = servicePortState(p, family, i.synced.endpoints.get(id) ?? []);
      if (state) list.push(state);
    }
    services[family] = list;
  }
  const pending = i.synced.pendingChanges();
  return {
    apiVersion: "kube-proxy-ts/v1",
    kind: "DebugState",
    generatedAt: new Date((i.now ?? Date.now)()).toISOString(),
    nodeName: i.nodeName,
    mode: i.mode,
    backends: i.backends.map((b) => ({ component: b.component, chosen: b.chosen, reason: b.reason })),
    families: [...i.families],
    initialized: i.synced.initialized,
    syncInProgress: i.history.inProgress,
    pending: { services: sortedKeys(pending.services), endpoints: sortedKeys(pending.endpoints) },
    syncs: [...i.history.records()],
    services,
  };
}
