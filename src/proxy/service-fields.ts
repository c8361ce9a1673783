// Readers for the Service fields that feed a service port. Each takes the raw (unvalidated)
// wire value, keeps what parses, and files a problem for what does not: a bad entry costs
// that entry, never the rest of the Service. The readers of lists a user sizes (up to 100,000
// entries) are Steps, so a sync reading a huge Service can let the servers answer meanwhile.

import type { ServiceObject } from "../k8s/objects.ts";
import { DistinctStrings } from "../util/distinct-strings.ts";
import { canonicalCIDRLenient, canonicalIPLenient, parseIPLenient } from "../util/net/address.ts";
import { familyOf, type IPFamily } from "../util/net/family.ts";
import { ITEMS_PER_STEP, type Steps } from "../util/time-slice.ts";
import type { ProblemList } from "./problems.ts";

type Spec = NonNullable<ServiceObject["spec"]>;

/** Upstream's default ClientIP affinity timeout (3 hours), used when no config is given. */
export const DEFAULT_STICKY_SECONDS = 10800;
const MAX_STICKY_SECONDS = 86400;

function listOf(value: unknown, field: string, problems: ProblemList, ignored = "ignored"): unknown[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return value;
  problems.invalid(field, value, `not a list; ${ignored}`);
  return [];
}

export type ClusterIPs = Partial<Record<IPFamily, string>>;

/**
 * The Service's primary IP family: that of its first cluster IP (spec.ipFamilies[0]).
 * readClusterIPs fills the record in spec.clusterIPs order, and string keys keep insertion order.
 */
export function primaryFamily(clusterIPs: Readonly<ClusterIPs>): IPFamily | undefined {
  return (Object.keys(clusterIPs) as IPFamily[])[0];
}

/**
 * Cluster IPs by family, primary first (see primaryFamily). undefined: the primary cluster IP is
 * not an IP, so the whole Service is dropped (programming half a Service under a wrong address
 * would be worse than none).
 */
export function readClusterIPs(spec: Spec, problems: ProblemList): ClusterIPs | undefined {
  const list =
    Array.isArray(spec.clusterIPs) && spec.clusterIPs.length > 0 ? spec.clusterIPs : [spec.clusterIP];
  const field = list === spec.clusterIPs ? "spec.clusterIPs" : "spec.clusterIP";
  const out: ClusterIPs = {};
  for (const [i, raw] of list.entries()) {
    const path = field === "spec.clusterIP" ? field : `${field}[${i}]`;
    const parsed = parseIPLenient(raw);
    if (!parsed) {
      if (i === 0) {
        problems.invalid(path, raw, "cluster IP is not an IP address; Service skipped");
        return undefined;
      }
      problems.invalid(path, raw, "secondary cluster IP is not an IP address; ignored");
      continue;
    }
    if (out[parsed.family]) {
      problems.note(path, raw, `second ${parsed.family} cluster IP; ignored`);
      continue;
    }
    out[parsed.family] = parsed.ip;
  }
  return out;
}

/** A list of IPs (spec.externalIPs): bad entries dropped, duplicates folded. */
export function* readIPList(value: unknown, field: string, problems: ProblemList): Steps<string[]> {
  const list = listOf(value, field, problems);
  if (list.length === 0) return [];
  // Linear, and small: a Service may carry 100,000 entries.
  const out = new DistinctStrings(list.length);
  for (let i = 0; i < list.length; i++) {
    if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
    const ip = canonicalIPLenient(list[i]);
    if (ip === undefined) problems.invalid(`${field}[${i}]`, list[i], "not an IP address; ignored");
    else out.add(ip);
  }
  return out.values;
}

/**
 * Whether kube-proxy programs a LoadBalancer ingress IP (upstream's IsVIPMode): only ipMode VIP
 * or no ipMode. (The LoadBalancerIPMode gate that could switch this off went GA in 1.32 and is gone.)
 */
export function isVIPMode(ipMode: unknown): boolean {
  return ipMode === undefined || ipMode === null || ipMode === "VIP";
}

/** LoadBalancer ingress IPs that kube-proxy must program (see isVIPMode). */
export function* readLoadBalancerVIPs(svc: ServiceObject, problems: ProblemList): Steps<string[]> {
  const field = "status.loadBalancer.ingress";
  const ingress = listOf(svc.status?.loadBalancer?.ingress, field, problems);
  if (ingress.length === 0) return [];
  const out = new DistinctStrings(ingress.length);
  for (let i = 0; i < ingress.length; i++) {
    if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
    const ing = ingress[i];
    if (typeof ing !== "object" || ing === null) continue;
    const { ip, ipMode } = ing as { ip?: unknown; ipMode?: unknown };
    // hostname-only ingress and proxy-mode load balancers need no VIP rules on the node.
    if (ip === undefined || ip === "" || !isVIPMode(ipMode)) continue;
    const parsed = canonicalIPLenient(ip);
    if (parsed === undefined) problems.invalid(`${field}[${i}].ip`, ip, "not an IP address; ignored");
    else out.add(parsed);
  }
  return out.values;
}

export interface SourceRanges {
  readonly ranges: string[];
  /** Ranges were given (or the field was not a list): a family with none of them stays closed. */
  readonly given: boolean;
}

export function* readSourceRanges(spec: Spec, problems: ProblemList): Steps<SourceRanges> {
  const field = "spec.loadBalancerSourceRanges";
  const value = spec.loadBalancerSourceRanges;
  const raw = listOf(value, field, problems, "LoadBalancer IPs closed");
  const given = raw.length > 0 || (value !== undefined && value !== null && !Array.isArray(value));
  if (raw.length === 0) return { ranges: [], given };
  const ranges = new DistinctStrings(raw.length);
  for (let i = 0; i < raw.length; i++) {
    if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
    const cidr = canonicalCIDRLenient(raw[i]);
    if (cidr === undefined) problems.invalid(`${field}[${i}]`, raw[i], "not a CIDR; ignored");
    else ranges.add(cidr);
  }
  return { ranges: ranges.values, given };
}

/**
 * The LoadBalancer IPs that may be programmed under `sources`: with ranges given, an IP whose
 * family has none of them is dropped (closed), never opened to everyone.
 */
export function* vipsAllowedBySources(
  vips: readonly string[],
  sources: SourceRanges,
  problems: ProblemList,
): Steps<string[]> {
  if (!sources.given || vips.length === 0) return [...vips];
  const families = new Set<IPFamily>();
  for (let i = 0; i < sources.ranges.length && families.size < 2; i++) {
    if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
    families.add(familyOf(sources.ranges[i]!));
  }
  const kept: string[] = [];
  const closed = new Set<IPFamily>();
  for (let i = 0; i < vips.length; i++) {
    if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
    const ip = vips[i]!;
    const family = familyOf(ip);
    if (families.has(family)) kept.push(ip);
    else closed.add(family);
  }
  for (const family of closed) {
    problems.invalid(
      "spec.loadBalancerSourceRanges",
      sources.ranges.slice(0, 5),
      `no usable ${family} range; ${family} LoadBalancer IPs closed`,
    );
  }
  return kept;
}

export interface Affinity {
  readonly type: "None" | "ClientIP";
  readonly timeoutSeconds: number;
}

export function readSessionAffinity(spec: Spec, problems: ProblemList): Affinity {
  const type = spec.sessionAffinity;
  if (type === undefined || type === null || type === "" || type === "None") {
    return { type: "None", timeoutSeconds: 0 };
  }
  if (type !== "ClientIP") {
    problems.invalid("spec.sessionAffinity", type, "unknown session affinity; using None");
    return { type: "None", timeoutSeconds: 0 };
  }
  const timeout = spec.sessionAffinityConfig?.clientIP?.timeoutSeconds;
  if (timeout === undefined || timeout === null) return { type, timeoutSeconds: DEFAULT_STICKY_SECONDS };
  if (!Number.isInteger(timeout) || timeout < 1 || timeout > MAX_STICKY_SECONDS) {
    const field = "spec.sessionAffinityConfig.clientIP.timeoutSeconds";
    problems.invalid(
      field,
      timeout,
      `not an integer in 1..${MAX_STICKY_SECONDS}; using ${DEFAULT_STICKY_SECONDS}`,
    );
    return { type, timeoutSeconds: DEFAULT_STICKY_SECONDS };
  }
  return { type, timeoutSeconds: timeout };
}

/** The value upstream reads for topology-aware routing; the deprecated annotation wins. */
export function readTopologyMode(svc: ServiceObject): string {
  const annotations = svc.metadata?.annotations ?? {};
  const hints = annotations["service.kubernetes.io/topology-aware-hints"];
  if (typeof hints === "string") return hints;
  const mode = annotations["service.kubernetes.io/topology-mode"];
  return typeof mode === "string" ? mode : "";
}
