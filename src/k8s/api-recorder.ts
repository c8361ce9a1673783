// Posts kube-proxy's Events (events.k8s.io/v1, as upstream's events.EventBroadcaster does):
// the "Starting" birth cry on the Node and warnings about bad Service fields. Events are
// advisory: a failure (no RBAC for events, API down) is logged at v(2) and never surfaces.

import { Buffer } from "node:buffer";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "../log/logger.ts";
import { eventsPath } from "./api-access.ts";
import { type ApiClient, apiErrorFrom, describeError, kubeApiClient } from "./api-client.ts";
import type { EventRecorder, KubeEvent } from "./events.ts";
import type { ObjectRef } from "./objects.ts";
import { dns1123Subdomain } from "./validation.ts";

export const REPORTING_CONTROLLER = "kube-proxy";
/** The API server rejects longer notes. */
const MAX_NOTE_BYTES = 1024;

export interface ApiRecorderOptions {
  /** Either a ready client or a kubeconfig to build one from. */
  client?: ApiClient;
  kubeConfig?: KubeConfig;
  nodeName: string;
  logger: Logger;
  clock?: () => Date;
  /** Events in flight beyond this are dropped (logged): a dead API must not grow memory. */
  maxPending?: number;
}

export interface ApiRecorder extends EventRecorder {
  /** The Normal "Starting" event on this Node; resolves true when the API server accepted it. */
  postBirthCry(nodeName: string): Promise<boolean>;
  /** Resolves when every event recorded so far has been posted or given up on. */
  flush(): Promise<void>;
}

const API_VERSIONS: Record<ObjectRef["kind"], string> = {
  Service: "v1",
  EndpointSlice: "discovery.k8s.io/v1",
  Node: "v1",
  ServiceCIDR: "networking.k8s.io/v1",
};

/** metav1.MicroTime's wire form: RFC 3339 with exactly six fractional digits. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

function truncateNote(note: string): string {
  const bytes = Buffer.from(note, "utf8");
  return bytes.length <= MAX_NOTE_BYTES
    ? note
    : bytes
        .subarray(0, MAX_NOTE_BYTES)
        .toString("utf8")
        .replace(/\uFFFD$/, "");
}

export function eventBody(e: KubeEvent, reportingInstance: string, now: Date): Record<string, unknown> {
  // Objects without a namespace (Nodes) have their events in "default", as client-go does.
  const namespace = e.ref.namespace || "default";
  const nanos = BigInt(now.getTime()) * 1_000_000n;
  const suffix = nanos.toString(16);
  // Events about an object whose own name is invalid (reported so) need a valid name of their own.
  const named = `${e.ref.name}.${suffix}`;
  const name = dns1123Subdomain(named) === undefined ? named : `${REPORTING_CONTROLLER}.${suffix}`;
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name, namespace },
    eventTime: microTime(now),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance,
    action: e.action,
    reason: e.reason,
    // Go's omitempty: an empty note is left out of the body.
    ...(e.message ? { note: truncateNote(e.message) } : {}),
    type: e.type,
    regarding: {
      kind: e.ref.kind,
      apiVersion: API_VERSIONS[e.ref.kind],
      name: e.ref.name,
      ...(e.ref.namespace ? { namespace: e.ref.namespace } : {}),
      ...(e.ref.uid ? { uid: e.ref.uid } : {}),
    },
  };
}

export function createApiRecorder(opts: ApiRecorderOptions): ApiRecorder {
  const client = opts.client ?? (opts.kubeConfig ? kubeApiClient(opts.kubeConfig) : undefined);
  if (!client) throw new Error("createApiRecorder needs a client or a kubeConfig");
  const clock = opts.clock ?? (() => new Date());
  const log = opts.logger.named("events");
  const maxPending = opts.maxPending ?? 100;
  // Upstream names the instance after the reporting controller and the host it runs on.
  const reportingInstance = `${REPORTING_CONTROLLER}-${opts.nodeName}`;
  const pending = new Set<Promise<boolean>>();

  const post = async (e: KubeEvent): Promise<boolean> => {
    const body = eventBody(e, reportingInstance, clock());
    const ns = (body.metadata as { namespace: string }).namespace;
    try {
      const res = await client.request({
        method: "POST",
        path: eventsPath(ns),
        body,
      });
      if (res.status >= 200 && res.status < 300) return true;
      const err = await apiErrorFrom(res, "post event");
      const why = res.status === 403 ? "Not permitted to post events" : "Could not post event";
      log.v(2).info(why, { reason: e.reason, object: e.ref.name, err: err.message });
    } catch (err) {
      log
        .v(2)
        .info("Could not post event", { reason: e.reason, object: e.ref.name, err: describeError(err) });
    }
    return false;
  };

  const enqueue = (e: KubeEvent): Promise<boolean> => {
    if (pending.size >= maxPending) {
      log.v(2).info("Dropping event: too many in flight", { reason: e.reason, object: e.ref.name });
      return Promise.resolve(false);
    }
    const p = post(e).catch(() => false);
    pending.add(p);
    void p.finally(() => pending.delete(p));
    return p;
  };

  return {
    record(e) {
      void enqueue(e);
    },
    postBirthCry(nodeName) {
      return enqueue({
        // Upstream's NodeRef uses the node name as the UID.
        ref: { kind: "Node", name: nodeName, uid: nodeName },
        type: "Normal",
        reason: "Starting",
        action: "StartKubeProxy",
        // Upstream's events.k8s.io recorder posts the birth cry with an empty note.
        message: "",
      });
    },
    async flush() {
      while (pending.size) await Promise.all([...pending]);
    },
  };
}
