// Kubernetes Events kube-proxy posts (the "Starting" birth cry on the Node, warnings about bad
// Service fields). The API-backed recorder lives with the informers; tests use memoryRecorder.

import type { ObjectRef } from "./objects.ts";

export type EventType = "Normal" | "Warning";

export interface KubeEvent {
  readonly ref: ObjectRef;
  readonly type: EventType;
  readonly reason: string;
  readonly action: string;
  readonly message: string;
}

export interface EventRecorder {
  /** Fire and forget: never throws, never blocks a sync. */
  record(event: KubeEvent): void;
}

export const nullRecorder: EventRecorder = { record() {} };

export function memoryRecorder(): EventRecorder & { events: KubeEvent[] } {
  const events: KubeEvent[] = [];
  return { events, record: (e) => events.push(e) };
}
