// Label and field selector matching for the fake API server: the subset of apimachinery's
// grammar kube-proxy and its tests send (exists, !exists, =, ==, !=, in, notin, comma-AND).

type Labels = Readonly<Record<string, string>>;
type Predicate = (labels: Labels) => boolean;

/** Splits on commas that are not inside an `in (...)` value list. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of selector) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      terms.push(current);
      current = "";
    } else current += ch;
  }
  terms.push(current);
  return terms.map((t) => t.trim()).filter((t) => t !== "");
}

function parseTerm(term: string): Predicate {
  const set = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
  if (set) {
    const [, key, op, list] = set as unknown as [string, string, string, string];
    const values = new Set(list.split(",").map((v) => v.trim()));
    return op === "in"
      ? (l) => key in l && values.has(l[key] ?? "")
      : (l) => !(key in l) || !values.has(l[key] ?? "");
  }
  const cmp = /^([^!=\s]+)\s*(!=|==|=)\s*(.*)$/.exec(term);
  if (cmp) {
    const [, key, op, value] = cmp as unknown as [string, string, string, string];
    return op === "!=" ? (l) => l[key] !== value : (l) => l[key] === value;
  }
  if (term.startsWith("!")) {
    const key = term.slice(1).trim();
    return (l) => !(key in l);
  }
  return (l) => term in l;
}

export function parseLabelSelector(selector: string | null | undefined): Predicate {
  const preds = splitTerms(selector ?? "").map(parseTerm);
  return (labels) => preds.every((p) => p(labels));
}

function fieldValue(obj: unknown, path: string): string {
  let cur: unknown = obj;
  for (const part of path.split(".")) {
    if (cur === null || typeof cur !== "object") return "";
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur === undefined || cur === null ? "" : String(cur);
}

/** Field selectors: `path=value`, `path==value`, `path!=value`, comma-AND. */
export function parseFieldSelector(selector: string | null | undefined): (obj: unknown) => boolean {
  const preds = splitTerms(selector ?? "").map((term) => {
    const m = /^([^!=]+)(!=|==|=)(.*)$/.exec(term);
    if (!m) throw new Error(`invalid field selector term ${JSON.stringify(term)}`);
    const [, path, op, value] = m as unknown as [string, string, string, string];
    return op === "!="
      ? (o: unknown) => fieldValue(o, path.trim()) !== value
      : (o: unknown) => fieldValue(o, path.trim()) === value;
  });
  return (obj) => preds.every((p) => p(obj));
}
