// Cluster state for real-kernel tests: small Service / EndpointSlice / Node specs rendered into
// a --state file (multi-document YAML, as `kubectl get -o yaml` would print them), written
// atomically so a running kube-proxy-ts never reads half a file; plus upstream's per-service
// chain names (iptables and nftables spellings) and the chain set a given state needs.

import { createHash } from "node:crypto";
import { renameSync, writeFileSync } from "node:fs";
import { stringify } from "yaml";

export type Protocol = "TCP" | "UDP";

export interface PortSpec {
  /** Port name; "" for a single unnamed port. */
  readonly name: string;
  readonly port: number;
  readonly targetPort: number;
  readonly protocol?: Protocol;
  readonly nodePort?: number;
}

export interface EndpointSpec {
  readonly ip: string;
  /** Default: the node under test. */
  readonly node?: string;
  readonly ready?: boolean;
  readonly serving?: boolean;
  readonly terminating?: boolean;
}

export interface ServiceSpec {
  readonly name: string;
  readonly namespace?: string;
  readonly type?: "ClusterIP" | "NodePort" | "LoadBalancer";
  readonly clusterIP: string;
  /** Makes the Service dual-stack (PreferDualStack, IPv4 first) with this IPv6 ClusterIP. */
  readonly clusterIPv6?: string;
  readonly ports: readonly PortSpec[];
  /** Endpoints of one EndpointSlice; omit for a Service with no slice at all. */
  readonly endpoints?: readonly EndpointSpec[];
  readonly externalIPs?: readonly string[];
  /** LoadBalancer ingress IPs (status.loadBalancer.ingress). */
  readonly loadBalancerIPs?: readonly string[];
  readonly loadBalancerSourceRanges?: readonly string[];
  readonly externalTrafficPolicy?: "Cluster" | "Local";
  readonly internalTrafficPolicy?: "Cluster" | "Local";
  readonly healthCheckNodePort?: number;
  readonly sessionAffinity?: "None" | "ClientIP";
  readonly affinityTimeoutSeconds?: number;
  /** metadata.creationTimestamp (RFC 3339); the older Service wins where claims compete. */
  readonly createdAt?: string;
}

export interface NodeSpec {
  readonly name: string;
  readonly internalIP: string;
  readonly podCIDR: string;
  /** Labels besides kubernetes.io/hostname (a change of them makes nftables mode resync in full). */
  readonly labels?: Readonly<Record<string, string>>;
}

const ns = (s: ServiceSpec) => s.namespace ?? "default";

export function nodeObject(n: NodeSpec): object {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: n.name, labels: { "kubernetes.io/hostname": n.name, ...n.labels } },
    spec: { podCIDR: n.podCIDR, podCIDRs: [n.podCIDR] },
    status: {
      addresses: [
        { type: "InternalIP", address: n.internalIP },
        { type: "Hostname", address: n.name },
      ],
    },
  };
}

export function serviceObject(s: ServiceSpec): object {
  const type = s.type ?? "ClusterIP";
  const external = type !== "ClusterIP";
  const spec: Record<string, unknown> = {
    type,
    clusterIP: s.clusterIP,
    clusterIPs: s.clusterIPv6 ? [s.clusterIP, s.clusterIPv6] : [s.clusterIP],
    ipFamilies: s.clusterIPv6 ? ["IPv4", "IPv6"] : ["IPv4"],
    ipFamilyPolicy: s.clusterIPv6 ? "PreferDualStack" : "SingleStack",
    sessionAffinity: s.sessionAffinity ?? "None",
    internalTrafficPolicy: s.internalTrafficPolicy ?? "Cluster",
    ports: s.ports.map((p) => ({
      ...(p.name ? { name: p.name } : {}),
      port: p.port,
      targetPort: p.targetPort,
      protocol: p.protocol ?? "TCP",
      ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}),
    })),
  };
  if (s.sessionAffinity === "ClientIP") {
    spec.sessionAffinityConfig = { clientIP: { timeoutSeconds: s.affinityTimeoutSeconds ?? 10800 } };
  }
  if (external) spec.externalTrafficPolicy = s.externalTrafficPolicy ?? "Cluster";
  if (s.healthCheckNodePort !== undefined) spec.healthCheckNodePort = s.healthCheckNodePort;
  if (s.externalIPs?.length) spec.externalIPs = [...s.externalIPs];
  if (s.loadBalancerSourceRanges?.length) spec.loadBalancerSourceRanges = [...s.loadBalancerSourceRanges];
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: s.name, namespace: ns(s), ...(s.createdAt ? { creationTimestamp: s.createdAt } : {}) },
    spec,
    ...(s.loadBalancerIPs?.length
      ? { status: { loadBalancer: { ingress: s.loadBalancerIPs.map((ip) => ({ ip })) } } }
      : {}),
  };
}

export function sliceObject(s: ServiceSpec, nodeName: string): object | undefined {
  if (!s.endpoints) return undefined;
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${s.name}-e2e`,
      namespace: ns(s),
      labels: {
        "kubernetes.io/service-name": s.name,
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
      },
    },
    addressType: "IPv4",
    ports: s.ports.map((p) => ({ name: p.name, port: p.targetPort, protocol: p.protocol ?? "TCP" })),
    endpoints: s.endpoints.map((e) => ({
      addresses: [e.ip],
      conditions: {
        ready: e.ready ?? true,
        serving: e.serving ?? e.ready ?? true,
        terminating: e.terminating ?? false,
      },
      nodeName: e.node ?? nodeName,
    })),
  };
}

/** The --state file text: the Node, then each Service followed by its EndpointSlice. */
export function renderState(node: NodeSpec, services: readonly ServiceSpec[]): string {
  const docs: object[] = [nodeObject(node)];
  for (const s of services) {
    docs.push(serviceObject(s));
    const slice = sliceObject(s, node.name);
    if (slice) docs.push(slice);
  }
  return docs.map((d) => stringify(d)).join("---\n");
}

/** Writes via a temporary file and rename, so a reader sees the old or the new file, never half. */
export function writeStateFile(path: string, text: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

// --- upstream chain names -------------------------------------------------------------------

const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

function base32(buf: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = "";
  for (const b of buf) {
    value = ((value << 8) | b) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  return out;
}

function hashPrefix(s: string, chars: number): string {
  return base32(createHash("sha256").update(s).digest()).slice(0, chars);
}

const hash16 = (s: string) => hashPrefix(s, 16);

/** "ns/name:port" (or "ns/name" for an unnamed port), as upstream's ServicePortName.String(). */
export function servicePortName(s: ServiceSpec, p: PortSpec): string {
  return `${ns(s)}/${s.name}${p.name ? `:${p.name}` : ""}`;
}

export type ChainKind = "SVC" | "SVL" | "EXT" | "FW";

/** How a mode names the chains of one service port and of one of its endpoints. */
export interface ChainNamer {
  service(kind: ChainKind, s: ServiceSpec, p: PortSpec): string;
  /** `endpoint` is "ip:targetPort". */
  endpoint(s: ServiceSpec, p: PortSpec, ip: string): string;
}

/** KUBE-SVC-/SVL-/EXT-/FW- + first 16 chars of base32(sha256(servicePortName + protocol)). */
export function serviceChain(kind: ChainKind, spn: string, protocol: Protocol = "TCP"): string {
  return `KUBE-${kind}-${hash16(spn + protocol.toLowerCase())}`;
}

/** KUBE-SEP- + hash of servicePortName + protocol + "ip:port". */
export function endpointChain(spn: string, protocol: Protocol, endpoint: string): string {
  return `KUBE-SEP-${hash16(spn + protocol.toLowerCase() + endpoint)}`;
}

/** iptables mode: KUBE-SVC-HASH16 and friends. */
export const IPTABLES_CHAINS: ChainNamer = {
  service: (kind, s, p) => serviceChain(kind, servicePortName(s, p), p.protocol ?? "TCP"),
  endpoint: (s, p, ip) => endpointChain(servicePortName(s, p), p.protocol ?? "TCP", `${ip}:${p.targetPort}`),
};

const NFT_PREFIX: Readonly<Record<ChainKind, string>> = {
  SVC: "service-",
  SVL: "local-",
  EXT: "external-",
  FW: "firewall-",
};

/** "ns/name/protocol/portName": the path nftables mode's chain names end with. */
function nftPortPath(s: ServiceSpec, p: PortSpec): string {
  return `${ns(s)}/${s.name}/${(p.protocol ?? "TCP").toLowerCase()}/${p.name}`;
}

const nftBase = (path: string) => `${hashPrefix(path, 8)}-${path}`;

/** nftables mode: "service-HASH8-ns/name/tcp/http", "endpoint-HASH8-ns/name/tcp/http__ip/port". */
export const NFTABLES_CHAINS: ChainNamer = {
  service: (kind, s, p) => NFT_PREFIX[kind] + nftBase(nftPortPath(s, p)),
  endpoint: (s, p, ip) => `endpoint-${nftBase(`${nftPortPath(s, p)}__${ip}/${p.targetPort}`)}`,
};

/**
 * The per-service chains upstream v1.31 keeps for `services` on node `nodeName` (named by
 * `namer`, iptables mode's names unless told). Handles what the e2e states use: ready endpoints
 * only (no terminating fallback), no topology hints.
 */
export function expectedServiceChains(
  services: readonly ServiceSpec[],
  nodeName: string,
  namer: ChainNamer = IPTABLES_CHAINS,
): Set<string> {
  const out = new Set<string>();
  for (const s of services) {
    const eps = (s.endpoints ?? []).filter((e) => e.ready ?? true);
    const local = eps.filter((e) => (e.node ?? nodeName) === nodeName);
    const externallyAccessible =
      (s.type ?? "ClusterIP") !== "ClusterIP" ||
      (s.externalIPs?.length ?? 0) > 0 ||
      (s.loadBalancerIPs?.length ?? 0) > 0;
    const extLocal = externallyAccessible && s.type !== "ClusterIP" && s.externalTrafficPolicy === "Local";
    const intLocal = s.internalTrafficPolicy === "Local";
    const usesCluster = !intLocal || (externallyAccessible && !extLocal);
    const usesLocal = intLocal || extLocal;
    const clusterEps = usesCluster ? eps : [];
    const localEps = usesLocal ? local : [];
    const externalEps = extLocal ? local : eps;
    for (const p of s.ports) {
      if (clusterEps.length > 0) out.add(namer.service("SVC", s, p));
      if (localEps.length > 0) out.add(namer.service("SVL", s, p));
      if (externallyAccessible && externalEps.length > 0) {
        out.add(namer.service("EXT", s, p));
        if ((s.loadBalancerIPs?.length ?? 0) > 0 && (s.loadBalancerSourceRanges?.length ?? 0) > 0) {
          out.add(namer.service("FW", s, p));
        }
      }
      for (const e of new Set([...clusterEps, ...localEps])) out.add(namer.endpoint(s, p, e.ip));
    }
  }
  return out;
}

const SERVICE_CHAIN_RE = /^:(KUBE-(?:SVC|SVL|EXT|FW|SEP)-[A-Z2-7]{16}) /;

/** The per-service chains (KUBE-SVC/SVL/EXT/FW/SEP-*) declared in an iptables-save of nat. */
export function serviceChainsIn(save: string): Set<string> {
  const out = new Set<string>();
  for (const line of save.split("\n")) {
    const m = SERVICE_CHAIN_RE.exec(line);
    if (m?.[1]) out.add(m[1]);
  }
  return out;
}
