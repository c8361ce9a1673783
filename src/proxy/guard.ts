// Tracker entry points run inside informer callbacks: an exception there would stop the watch
// (or the process). Unexpected faults are logged and the call reports "no change" instead.
// Objects are also named here: a name or namespace the API server would refuse is never used
// as a key (keys are "ns/name", so a '/' in either would let one object stand for another).

import type { ObjectMeta, ObjectRef } from "../k8s/objects.ts";
import { dns1123Subdomain, shownValue, type Validator, validNamespace } from "../k8s/validation.ts";
import type { Logger } from "../log/logger.ts";
import { ProblemList, type ProblemReporter } from "./problems.ts";

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

/** Why an object cannot be named: the field at fault, its value and the rule it breaks. */
export interface NameProblem {
  readonly field: "metadata.name" | "metadata.namespace";
  readonly value: unknown;
  readonly reason: string;
}

function metaFields(meta: unknown): { name: unknown; namespace: unknown } {
  if (typeof meta !== "object" || meta === null) return { name: undefined, namespace: undefined };
  const m = meta as { name?: unknown; namespace?: unknown };
  return { name: m.name, namespace: m.namespace };
}

/**
 * namespace/name of an object, checked as the API server would: `nameRule` for the name (the
 * kind's rule; a DNS-1123 subdomain, the loosest, when not given) and a DNS-1123 label for the
 * namespace. A missing or empty namespace is "default", as kubectl would apply it.
 */
export function checkObjectName(
  meta: ObjectMeta | undefined | unknown,
  nameRule: Validator = dns1123Subdomain,
): ObjectName | NameProblem {
  const { name, namespace } = metaFields(meta);
  if (name === undefined || name === null || name === "")
    return { field: "metadata.name", value: name, reason: "is required" };
  const nameProblem = nameRule(name);
  if (nameProblem) return { field: "metadata.name", value: name, reason: nameProblem };
  if (namespace === undefined || namespace === null || namespace === "")
    return { namespace: "default", name: name as string };
  const nsProblem = validNamespace(namespace);
  if (nsProblem) return { field: "metadata.namespace", value: namespace, reason: nsProblem };
  return { namespace: namespace as string, name: name as string };
}

/** metadata.uid when it is a string (events carry it); anything else is left out. */
export function uidOf(meta: unknown): string | undefined {
  if (typeof meta !== "object" || meta === null) return undefined;
  const uid = (meta as { uid?: unknown }).uid;
  return typeof uid === "string" ? uid : undefined;
}

export function isNameProblem(r: ObjectName | NameProblem): r is NameProblem {
  return "reason" in r;
}

/** namespace/name of an object; undefined when it has none or an invalid one (see checkObjectName). */
export function objectName(
  meta: ObjectMeta | undefined | unknown,
  nameRule?: Validator,
): ObjectName | undefined {
  const r = checkObjectName(meta, nameRule);
  return isNameProblem(r) ? undefined : r;
}

/**
 * objectName for trackers: an object it refuses is reported through `reporter` (a log line
 * naming the field and value; a Warning event too when the name alone is bad, since the event
 * can still go to the object's namespace) and undefined is returned, so the caller skips it.
 * `removed`: the object was deleted, so what was told about it is forgotten instead.
 */
export function reportedObjectName(
  kind: ObjectRef["kind"],
  meta: ObjectMeta | undefined | unknown,
  nameRule: Validator,
  reporter: ProblemReporter,
  removed: boolean,
): ObjectName | undefined {
  const r = checkObjectName(meta, nameRule);
  if (!isNameProblem(r)) return r;
  const raw = metaFields(meta);
  const shownName =
    typeof raw.name === "string" && raw.name !== "" ? String(shownValue(raw.name)) : "<unnamed>";
  const shownNs = typeof raw.namespace === "string" ? String(shownValue(raw.namespace)) : "";
  // Never a valid object's "ns/name" key: the prefix keeps the two kinds of key apart.
  const key = `invalid-name:${JSON.stringify([shownNs, shownName])}`;
  if (removed) {
    reporter.forget(key);
    return undefined;
  }
  const nsAbsent = raw.namespace === undefined || raw.namespace === null || raw.namespace === "";
  const nsUsable = r.field === "metadata.name" && (nsAbsent || validNamespace(raw.namespace) === undefined);
  // A namespaced object without a namespace lives in "default" (as checkObjectName reads it).
  const namespace = shownNs || (kind === "Service" || kind === "EndpointSlice" ? "default" : "");
  const problems = new ProblemList({ kind, name: shownName, ...(namespace ? { namespace } : {}) });
  const detail = `${r.reason}; ${kind} ignored`;
  const value = shownValue(r.value);
  // An event needs a name to hang on and a namespace to live in; without them, the log only.
  if (nsUsable && raw.name !== undefined && raw.name !== null && raw.name !== "")
    problems.invalid(r.field, value, detail);
  else problems.note(r.field, value, detail);
  reporter.report(key, problems);
  return undefined;
}
