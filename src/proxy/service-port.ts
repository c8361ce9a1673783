// Turns one Service object into its service ports: the unit both proxiers program. Follows
// upstream's newBaseServiceInfo, with both address families in one model.

import { DEFAULT_FEATURE_GATES, type EffectiveFeatureGates } from "../config/feature-gates.ts";
import type { ServiceObject, ServicePortSpec } from "../k8s/objects.ts";
import { shownValue, validServicePortName } from "../k8s/validation.ts";
import { DistinctStrings } from "../util/distinct-strings.ts";
import { flatString } from "../util/flat-string.ts";
import { isPortNumber } from "../util/net/host-port.ts";
import { parseProtocol } from "../util/net/protocol.ts";
import { Sha256Pieces } from "../util/sha256-base32.ts";
import { ITEMS_PER_STEP, runSteps, type Steps } from "../util/time-slice.ts";
import type { ProblemList } from "./problems.ts";
import {
  readClusterIPs,
  readIPList,
  readLoadBalancerVIPs,
  readSessionAffinity,
  readSourceRanges,
  readTopologyMode,
  vipsAllowedBySources,
} from "./service-fields.ts";
import { type ServiceWide, SharedServicePort } from "./shared-service-port.ts";
import {
  plainServicePort,
  type ServicePortInfo,
  type ServicePortName,
  servicePortNameString,
} from "./types.ts";

type ServiceType = ServicePortInfo["serviceType"];
type Spec = NonNullable<ServiceObject["spec"]>;

/** metadata.creationTimestamp as ms since the epoch; undefined when absent or unparsable. */
function readCreatedAt(svc: ServiceObject): number | undefined {
  const t = svc.metadata?.creationTimestamp;
  const ms = t instanceof Date ? t.getTime() : typeof t === "string" ? Date.parse(t) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

/** Upstream proxies nothing for headless, IP-less and ExternalName Services. */
export function isProxiable(svc: ServiceObject): boolean {
  const ip = svc.spec?.clusterIP;
  return ip !== undefined && ip !== null && ip !== "" && ip !== "None" && svc.spec?.type !== "ExternalName";
}

function readServiceType(spec: Spec, problems: ProblemList): ServiceType {
  const t = spec.type;
  if (t === undefined || t === null || t === "" || t === "ClusterIP") return "ClusterIP";
  if (t === "NodePort" || t === "LoadBalancer") return t;
  problems.invalid("spec.type", t, "unknown Service type; treated as ClusterIP");
  return "ClusterIP";
}

function readHealthCheckNodePort(svc: ServiceObject, needed: boolean, problems: ProblemList): number {
  if (!needed) return 0;
  const port = svc.spec?.healthCheckNodePort;
  if (port === undefined || port === null || port === 0) {
    problems.note("spec.healthCheckNodePort", port, "LoadBalancer with externalTrafficPolicy Local has none");
    return 0;
  }
  if (isPortNumber(port)) return port;
  problems.invalid("spec.healthCheckNodePort", port, "not a port number; no health check served");
  return 0;
}

function* readServiceWide(
  svc: ServiceObject,
  namespace: string,
  service: string,
  spec: Spec,
  problems: ProblemList,
  gates: EffectiveFeatureGates,
): Steps<ServiceWide | undefined> {
  const clusterIPs = readClusterIPs(spec, problems);
  if (!clusterIPs) return undefined;
  const serviceType = readServiceType(spec, problems);
  // AllowServiceExternalIPs (1.36, GA, on): off, kube-proxy programs no externalIP at all.
  const externalIPs = gates.enabled("AllowServiceExternalIPs")
    ? yield* readIPList(spec.externalIPs, "spec.externalIPs", problems)
    : [];
  const sources = yield* readSourceRanges(spec, problems);
  // Ranges given but none of a VIP's family must not turn into "open to everyone": drop the VIP.
  const lbVIPs = yield* vipsAllowedBySources(yield* readLoadBalancerVIPs(svc, problems), sources, problems);
  const externallyReachable = serviceType !== "ClusterIP" || externalIPs.length > 0;
  const externalPolicyLocal = externallyReachable && spec.externalTrafficPolicy === "Local";
  const needsHealthCheck = serviceType === "LoadBalancer" && externalPolicyLocal;
  const createdAtMs = readCreatedAt(svc);
  return {
    namespace,
    service,
    clusterIPs,
    externalIPs,
    loadBalancerVIPs: lbVIPs,
    loadBalancerSourceRanges: sources.ranges,
    sessionAffinity: readSessionAffinity(spec, problems),
    externalPolicyLocal,
    internalPolicyLocal: spec.internalTrafficPolicy === "Local",
    healthCheckNodePort: readHealthCheckNodePort(svc, needsHealthCheck, problems),
    topologyMode: readTopologyMode(svc),
    trafficDistribution: typeof spec.trafficDistribution === "string" ? spec.trafficDistribution : "",
    serviceType,
    ...(createdAtMs !== undefined ? { createdAtMs } : {}),
  };
}

interface PortFields {
  readonly name: string;
  readonly port: number;
  readonly protocol: ServicePortName["protocol"];
  readonly nodePort: number;
}

// A bad port number, protocol or nodePort drops the port entry: a half-valid port could
// expose traffic somewhere the Service never asked for. The field's path is made only for a
// problem (a Service may have 100,000 ports).
function readPort(raw: ServicePortSpec, i: number, problems: ProblemList): PortFields | undefined {
  const path = () => `spec.ports[${i}]`;
  if (typeof raw !== "object" || raw === null) {
    problems.invalid(path(), raw, "not a port object; port skipped");
    return undefined;
  }
  const name = raw.name ?? "";
  if (typeof name !== "string") return problems.invalid(`${path()}.name`, name, "not a string; port skipped");
  // The name goes into keys, chain names and comments: only what the API server would accept.
  const bad = validServicePortName(name);
  if (bad) return problems.invalid(`${path()}.name`, shownValue(name), `${bad}; port skipped`);
  if (!isPortNumber(raw.port))
    return problems.invalid(`${path()}.port`, raw.port, "not a port number; port skipped");
  const protocol = parseProtocol(raw.protocol);
  if (!protocol)
    return problems.invalid(`${path()}.protocol`, raw.protocol, "unknown protocol; port skipped");
  const nodePort = raw.nodePort ?? 0;
  if (nodePort !== 0 && !isPortNumber(nodePort)) {
    return problems.invalid(`${path()}.nodePort`, nodePort, "not a port number; port skipped");
  }
  return { name, port: raw.port, protocol, nodePort };
}

function portInfo(p: PortFields, wide: ServiceWide): ServicePortInfo {
  const name: ServicePortName = {
    namespace: wide.namespace,
    name: wide.service,
    port: p.name,
    protocol: p.protocol,
  };
  return new SharedServicePort(
    wide,
    p.name,
    flatString(servicePortNameString(name)),
    p.port,
    p.protocol,
    p.nodePort,
  );
}

/**
 * The service ports of `svc`; empty when it is not proxied or unusable. `ns`/`name` are the
 * tracker's key for it. Problems are filed in `problems`; nothing here throws on bad input.
 * `gates` decides which LoadBalancer IPs count (LoadBalancerIPMode).
 */
export function servicePorts(
  svc: ServiceObject,
  ns: string,
  name: string,
  problems: ProblemList,
  gates: EffectiveFeatureGates = DEFAULT_FEATURE_GATES,
): ServicePortInfo[] {
  return runSteps(readServicePorts(svc, ns, name, problems, gates));
}

/** servicePorts in steps: a pause may come between any two ports or list entries. */
export function* readServicePorts(
  svc: ServiceObject,
  ns: string,
  name: string,
  problems: ProblemList,
  gates: EffectiveFeatureGates = DEFAULT_FEATURE_GATES,
): Steps<ServicePortInfo[]> {
  const spec = svc.spec;
  if (!spec || !isProxiable(svc)) return [];
  const wide = yield* readServiceWide(svc, ns, name, spec, problems, gates);
  if (!wide) return [];
  const out: ServicePortInfo[] = [];
  const rawPorts = Array.isArray(spec.ports) ? spec.ports : [];
  const seen = new DistinctStrings(rawPorts.length);
  if (spec.ports != null && !Array.isArray(spec.ports))
    problems.invalid("spec.ports", spec.ports, "not a list; no ports");
  for (let i = 0; i < rawPorts.length; i++) {
    if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
    const fields = readPort(rawPorts[i]!, i, problems);
    if (!fields) continue;
    const info = portInfo(fields, wide);
    if (!seen.add(info.id)) {
      problems.invalid(`spec.ports[${i}].name`, fields.name, "duplicate port name; port skipped");
      continue;
    }
    out.push(info);
  }
  return out;
}

/** Ports whose own fields are hashed as one piece of text (tens of KB; a step each). */
const PORTS_PER_HASHED_PIECE = 512;

/**
 * A short digest that differs when any field of any port differs. The Service-wide fields are
 * shared by every port (they read one ServiceWide), so they are serialised once: per port only
 * its own fields, which keeps the cost linear in the Service's size, not ports × lists. Hashed
 * piece by piece: the text of 100,000 ports is never made whole.
 */
export function servicePortsFingerprint(ports: readonly ServicePortInfo[]): string {
  return runSteps(fingerprintPorts(ports));
}

/** servicePortsFingerprint in steps: one hashed piece each. */
export function* fingerprintPorts(ports: readonly ServicePortInfo[]): Steps<string> {
  const first = ports[0];
  if (!first) return "";
  const { name: _n, id: _i, port: _p, protocol: _r, nodePort: _np, ...wide } = plainServicePort(first);
  const hash = new Sha256Pieces().update(JSON.stringify(wide));
  // Each piece is a JSON array: pieces one after another still read one way only.
  for (let from = 0; from < ports.length; from += PORTS_PER_HASHED_PIECE) {
    const own: (string | number)[] = [];
    const to = Math.min(ports.length, from + PORTS_PER_HASHED_PIECE);
    for (let i = from; i < to; i++) {
      const p = ports[i]!;
      own.push(p.id, p.port, p.protocol, p.nodePort);
    }
    hash.update(JSON.stringify(own));
    yield;
  }
  return hash.base32Prefix(48);
}

/** What upstream's UsesClusterEndpoints / UsesLocalEndpoints read: policies, and whether this
 * family's view of the port is reachable from outside (FamilyServicePort.isExternal). */
export type EndpointPolicyInputs = Pick<ServicePortInfo, "internalPolicyLocal" | "externalPolicyLocal"> & {
  readonly isExternal: boolean;
};

/** Upstream's UsesClusterEndpoints: cluster-wide endpoints are needed for this port. */
export function usesClusterEndpoints(info: EndpointPolicyInputs): boolean {
  return !info.internalPolicyLocal || info.isExternal;
}

/** Upstream's UsesLocalEndpoints: node-local endpoints are needed for this port. */
export function usesLocalEndpoints(info: EndpointPolicyInputs): boolean {
  return info.internalPolicyLocal || (info.externalPolicyLocal && info.isExternal);
}
