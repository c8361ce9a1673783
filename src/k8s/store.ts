// The informer's cache: the last known state of every object, keyed namespace/name. It turns a
// watch event or a whole relist into add/update/delete transitions, so a relist after an outage
// deletes only what is really gone instead of dropping and re-adding everything.

import { shownText } from "./validation.ts";

export interface KubeObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/**
 * "namespace/name", or "name" for cluster-scoped objects. Names and namespaces are untrusted
 * here (the trackers refuse bad ones later): any that would make the short form ambiguous (a
 * '/', a non-string, a leading '[') get a JSON key instead, which no short form can equal, so
 * one object can never replace another in the cache.
 */
export function objectKey(o: KubeObject): string {
  const meta: unknown = o?.metadata;
  const m = typeof meta === "object" && meta !== null ? (meta as Record<string, unknown>) : {};
  const ns = m.namespace ?? "";
  const name = m.name ?? "";
  const plain = (v: unknown) => typeof v === "string" && !v.includes("/") && !v.startsWith("[");
  if (plain(ns) && plain(name)) return ns ? `${ns}/${name}` : (name as string);
  // Strings whole (distinct names keep distinct keys); other types only as their shown text.
  const part = (v: unknown) => (typeof v === "string" ? JSON.stringify(v) : `<${shownText(v)}>`);
  return `[${part(ns)},${part(name)}]`;
}

export type Applied<T> =
  | { change: "added" }
  | { change: "updated"; previous: T }
  /** Same resourceVersion as the cached copy: nothing to tell anyone. */
  | { change: "unchanged" };

export interface ReplaceResult<T> {
  added: T[];
  updated: { previous: T; current: T }[];
  deleted: T[];
}

function sameVersion(a: KubeObject, b: KubeObject): boolean {
  const rv = a.metadata?.resourceVersion;
  return rv !== undefined && rv !== "" && rv === b.metadata?.resourceVersion;
}

export class ObjectStore<T extends KubeObject> {
  private readonly items = new Map<string, T>();

  /**
   * `kept` is what the cache keeps of each object (the whole object unless told): what get(),
   * values(), an update's `previous` and the deletions of a replace() hand back.
   */
  constructor(private readonly kept: (obj: T) => T = (obj) => obj) {}

  get size(): number {
    return this.items.size;
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  values(): T[] {
    return [...this.items.values()];
  }

  apply(obj: T): Applied<T> {
    const key = objectKey(obj);
    const previous = this.items.get(key);
    if (previous && sameVersion(previous, obj)) return { change: "unchanged" };
    this.items.set(key, this.kept(obj));
    return previous ? { change: "updated", previous } : { change: "added" };
  }

  /** Forgets an object; returns the cached copy, or undefined if it was not known. */
  remove(obj: KubeObject): T | undefined {
    const key = objectKey(obj);
    const previous = this.items.get(key);
    this.items.delete(key);
    return previous;
  }

  /**
   * Forgets every object whose key is not in `seen` (the keys of a fresh list applied one by
   * one) and returns them, in their last known state.
   */
  removeUnseen(seen: ReadonlySet<string>): T[] {
    const gone: T[] = [];
    for (const [key, obj] of this.items) {
      if (seen.has(key)) continue;
      this.items.delete(key);
      gone.push(obj);
    }
    return gone;
  }

  /** Makes the cache equal to a fresh list; deletions carry the last known state. */
  replace(list: readonly T[]): ReplaceResult<T> {
    const result: ReplaceResult<T> = { added: [], updated: [], deleted: [] };
    const seen = new Set<string>();
    for (const obj of list) {
      seen.add(objectKey(obj));
      const r = this.apply(obj);
      if (r.change === "added") result.added.push(obj);
      else if (r.change === "updated") result.updated.push({ previous: r.previous, current: obj });
    }
    for (const [key, obj] of this.items) {
      if (seen.has(key)) continue;
      this.items.delete(key);
      result.deleted.push(obj);
    }
    return result;
  }
}
