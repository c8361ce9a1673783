// The answer of GET /debug/state on the metrics server: what this node last synced, the last
// syncs, what is pending, and which backend the mode writes with. One zod schema is the
// documented contract (README, "Live state: /debug/state"); tests parse answers with it.

import { z } from "zod";

const family = z.enum(["IPv4", "IPv6"]);

/** One endpoint of a service port, as the proxier sees it. */
export const endpointStateSchema = z.object({
  ip: z.string(),
  port: z.number().int(),
  ready: z.boolean(),
  serving: z.boolean(),
  terminating: z.boolean(),
  /** On this node (its nodeName is this node's name). */
  local: z.boolean(),
  nodeName: z.string().optional(),
  zone: z.string().optional(),
});

/** One service port in one IP family. */
export const servicePortStateSchema = z.object({
  /** Upstream's service port name: "ns/name:port" ("ns/name" for an unnamed port). */
  name: z.string(),
  namespace: z.string(),
  service: z.string(),
  protocol: z.enum(["TCP", "UDP", "SCTP"]),
  type: z.enum(["ClusterIP", "NodePort", "LoadBalancer"]),
  clusterIP: z.string(),
  port: z.number().int(),
  /** 0: none. */
  nodePort: z.number().int(),
  externalIPs: z.array(z.string()),
  loadBalancerIPs: z.array(z.string()),
  internalTrafficPolicy: z.enum(["Cluster", "Local"]),
  externalTrafficPolicy: z.enum(["Cluster", "Local"]),
  sessionAffinity: z.object({ type: z.enum(["None", "ClientIP"]), timeoutSeconds: z.number() }),
  /** 0: none. */
  healthCheckNodePort: z.number().int(),
  trafficDistribution: z.string(),
  endpoints: z.array(endpointStateSchema),
});

/** What one family's proxier did in one sync. */
export const familySyncSchema = z.object({
  family,
  fullSync: z.boolean(),
  /** What the mode wrote, where it counts it (iptables: restore lines; nftables: operations). */
  written: z.object({ count: z.number().int(), unit: z.string() }).optional(),
});

export const syncRecordSchema = z.object({
  /** 1 for the first sync of this process. */
  number: z.number().int(),
  /** "full" when any family synced in full; "unknown" when no family said (the sync failed first). */
  kind: z.enum(["full", "partial", "unknown"]),
  /** Wall-clock start, RFC 3339. */
  start: z.string(),
  durationMs: z.number(),
  result: z.enum(["ok", "failed"]),
  error: z.string().optional(),
  /** Services and Services with endpoint changes that this sync applied. */
  changedServices: z.number().int(),
  changedEndpoints: z.number().int(),
  families: z.array(familySyncSchema),
});

/** One decision about how the mode writes to the kernel, and why. */
export const backendChoiceSchema = z.object({
  /** What the choice is about, e.g. "iptables", "ipvs writes", "nftables writes". */
  component: z.string(),
  chosen: z.string(),
  reason: z.string(),
});

export const debugStateSchema = z.object({
  apiVersion: z.literal("kube-proxy-ts/v1"),
  kind: z.literal("DebugState"),
  /** When this answer was made, RFC 3339. */
  generatedAt: z.string(),
  nodeName: z.string(),
  mode: z.string(),
  backends: z.array(backendChoiceSchema),
  families: z.array(family),
  /** Both initial lists are in (no sync runs before). */
  initialized: z.boolean(),
  /** The sync running while this answer was made, if any (its start, RFC 3339). */
  syncInProgress: z.object({ number: z.number().int(), start: z.string() }).nullable(),
  /** Services ("ns/name") with changes not synced yet. */
  pending: z.object({ services: z.array(z.string()), endpoints: z.array(z.string()) }),
  /** The last syncs, newest first. */
  syncs: z.array(syncRecordSchema),
  /** The service ports of the last sync (or of the one in progress), per IP family this node proxies. */
  services: z
    .object({ IPv4: z.array(servicePortStateSchema), IPv6: z.array(servicePortStateSchema) })
    .partial(),
});

export type EndpointState = z.infer<typeof endpointStateSchema>;
export type ServicePortState = z.infer<typeof servicePortStateSchema>;
export type FamilySync = z.infer<typeof familySyncSchema>;
export type SyncRecord = z.infer<typeof syncRecordSchema>;
export type BackendChoice = z.infer<typeof backendChoiceSchema>;
export type DebugState = z.infer<typeof debugStateSchema>;
