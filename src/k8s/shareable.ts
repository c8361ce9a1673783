// Copies of API objects fit to hand out (the /debug/state snapshot): the fields kube-proxy reads
// and nothing else. Metadata keeps identity, labels and the annotations kube-proxy reads; no
// managedFields, no kubectl last-applied copy, no other annotation (they may hold anything).

import type { NodeObject, ObjectMeta, ServiceCIDRObject, ServiceObject } from "./objects.ts";

/** The annotations kube-proxy reads (topology on Services, trigger time on EndpointSlices). */
export const READ_ANNOTATIONS: ReadonlySet<string> = new Set([
  "service.kubernetes.io/topology-aware-hints",
  "service.kubernetes.io/topology-mode",
  "endpoints.kubernetes.io/last-change-trigger-time",
]);

const META_FIELDS = [
  "name",
  "namespace",
  "uid",
  "resourceVersion",
  "creationTimestamp",
  "deletionTimestamp",
] as const;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The metadata kept: identity, timestamps, labels, and only the annotations kube-proxy reads. */
export function shareableMetadata(meta: unknown): ObjectMeta {
  if (!isRecord(meta)) return {};
  const out: Record<string, unknown> = {};
  for (const f of META_FIELDS) if (meta[f] !== undefined) out[f] = meta[f];
  if (isRecord(meta.labels)) out.labels = { ...meta.labels };
  if (isRecord(meta.annotations)) {
    const kept = Object.entries(meta.annotations).filter(([k]) => READ_ANNOTATIONS.has(k));
    if (kept.length > 0) out.annotations = Object.fromEntries(kept);
  }
  return out as ObjectMeta;
}

export function shareableService(s: ServiceObject): ServiceObject {
  return {
    metadata: shareableMetadata(s.metadata),
    ...(s.spec !== undefined ? { spec: s.spec } : {}),
    ...(s.status !== undefined ? { status: s.status } : {}),
  };
}

/** A Node: its spec (podCIDRs, taints) and, of its status, only the addresses. */
export function shareableNode(n: NodeObject): NodeObject {
  const status: unknown = (n as { status?: unknown }).status;
  const addresses = isRecord(status) ? status.addresses : undefined;
  return {
    metadata: shareableMetadata(n.metadata),
    ...(n.spec !== undefined ? { spec: n.spec } : {}),
    ...(addresses !== undefined ? { status: { addresses } } : {}),
  } as NodeObject;
}

export function shareableServiceCIDR(c: ServiceCIDRObject): ServiceCIDRObject {
  const o = c as { spec?: unknown; status?: unknown };
  return {
    metadata: shareableMetadata(c.metadata),
    ...(o.spec !== undefined ? { spec: o.spec } : {}),
    ...(o.status !== undefined ? { status: o.status } : {}),
  } as ServiceCIDRObject;
}
