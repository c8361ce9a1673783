// Dotted config paths ("ipvs.excludeCIDRs[1]") are the shared vocabulary of flags, errors and
// overrides; these helpers read and write plain objects through them.

export type PathSegment = string | number;

/** "a.b[2].c" -> ["a", "b", 2, "c"]. */
export function pathSegments(path: string): PathSegment[] {
  const out: PathSegment[] = [];
  for (const part of path.split(".")) {
    if (part === "") continue;
    const match = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!match) {
      out.push(part);
      continue;
    }
    if (match[1]) out.push(match[1]);
    for (const index of (match[2] ?? "").matchAll(/\[(\d+)\]/g)) out.push(Number(index[1]));
  }
  return out;
}

/** ["a", "b", 2] -> "a.b[2]". */
export function formatPath(segments: readonly PathSegment[]): string {
  let out = "";
  for (const seg of segments) {
    if (typeof seg === "number") out += `[${seg}]`;
    else out += out === "" ? seg : `.${seg}`;
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function getPath(root: unknown, path: string | readonly PathSegment[]): unknown {
  let node: unknown = root;
  for (const seg of typeof path === "string" ? pathSegments(path) : path) {
    if (typeof seg === "number") {
      if (!Array.isArray(node)) return undefined;
      node = node[seg];
    } else {
      if (!isRecord(node)) return undefined;
      node = node[seg];
    }
  }
  return node;
}

/** Sets a value at a path of object keys, creating intermediate objects as needed. */
export function setPath(root: Record<string, unknown>, path: string, value: unknown): void {
  const segs = pathSegments(path).map(String);
  let node = root;
  for (const seg of segs.slice(0, -1)) {
    const next = node[seg];
    if (isRecord(next)) node = next;
    else {
      const created: Record<string, unknown> = {};
      node[seg] = created;
      node = created;
    }
  }
  const last = segs[segs.length - 1];
  if (last !== undefined) node[last] = value;
}

/** Removes the value at a path (used to drop fields that failed to decode). */
export function deletePath(root: unknown, path: readonly PathSegment[]): void {
  const parent = getPath(root, path.slice(0, -1));
  const last = path[path.length - 1];
  if (last === undefined) return;
  if (Array.isArray(parent) && typeof last === "number") parent.splice(last, 1);
  else if (isRecord(parent)) delete parent[String(last)];
}

/** Deep merge of plain objects: `over` wins; arrays and scalars are replaced, not merged. */
export function mergeDeep(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === undefined) continue;
    const prev = out[key];
    out[key] = isRecord(prev) && isRecord(value) ? mergeDeep(prev, value) : value;
  }
  return out;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
  }
  if (isRecord(a) && isRecord(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}
