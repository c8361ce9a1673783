// Tracker entry points run inside informer callbacks: an exception there would stop the watch
// (or the process). Unexpected faults are logged and the call reports "no change" instead.

import type { ObjectMeta } from "../k8s/objects.ts";
import type { Logger } from "../log/logger.ts";

export function guarded<T>(logger: Logger, what: string, fallback: T, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    logger.error(`Unexpected error in ${what}; change ignored`, {
      err: err instanceof Error ? err : String(err),
    });
    return fallback;
  }
}

export interface ObjectName {
  readonly namespace: string;
  readonly name: string;
}

/** namespace/name of an object; a missing namespace is "default", as kubectl would apply it. */
export function objectName(meta: ObjectMeta | undefined): ObjectName | undefined {
  const name = meta?.name;
  if (typeof name !== "string" || name === "") return undefined;
  const ns = meta?.namespace;
  return { namespace: typeof ns === "string" && ns !== "" ? ns : "default", name };
}
