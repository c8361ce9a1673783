// How upstream's iptables proxier tests compare a restore input with their expected dump:
// tables by name; in each table KUBE-NODEPORTS first, KUBE-SERVICES next, then the other
// KUBE-* chains by name, then the rest by name; each chain's rules printed together in that
// chain order, keeping their relative order, except that the rules of KUBE-NODEPORTS and
// KUBE-SERVICES are stably ordered by the Service name their comment starts with (the "must
// be the last rule" jump in nat KUBE-SERVICES stays last). Written from the behaviour the
// expected dumps show, for our golden tests.

interface Chain {
  name: string;
  rules: string[];
  deleted: boolean;
}

const NODEPORTS = "KUBE-NODEPORTS";
const SERVICES = "KUBE-SERVICES";

/** The comment of a rule (quoted or one bare word), or undefined when it has none. */
export function ruleComment(rule: string): string | undefined {
  const m = /-m comment --comment (?:"((?:[^"\\]|\\.)*)"|(\S+))/.exec(rule);
  if (!m) return undefined;
  return m[1] ?? m[2];
}

function serviceNameOf(comment: string): string {
  const i = comment.search(/[ :]/);
  return i < 0 ? comment : comment.slice(0, i);
}

/** Whether rule a must come before rule b by their comments' Service names (no comment: no order). */
function byServiceName(a: string, b: string): number {
  const ca = ruleComment(a);
  const cb = ruleComment(b);
  if (ca === undefined || cb === undefined) return 0;
  const na = serviceNameOf(ca);
  const nb = serviceNameOf(cb);
  return na < nb ? -1 : na > nb ? 1 : 0;
}

function chainOrder(a: string, b: string): number {
  const rank = (n: string) => (n === NODEPORTS ? 0 : n === SERVICES ? 1 : n.startsWith("KUBE-") ? 2 : 3);
  const d = rank(a) - rank(b);
  if (d !== 0) return d;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A restore input (or an expected dump) sorted the way upstream's tests compare them. */
export function sortLikeUpstream(restore: string): string {
  const tables = new Map<string, Map<string, Chain>>();
  let current: Map<string, Chain> | undefined;
  const chain = (name: string) => {
    if (!current) throw new Error(`rule outside a table: ${name}`);
    let c = current.get(name);
    if (!c) {
      c = { name, rules: [], deleted: false };
      current.set(name, c);
    }
    return c;
  };
  for (const raw of restore.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line === "COMMIT") continue;
    if (line.startsWith("*")) {
      current = new Map();
      tables.set(line.slice(1), current);
    } else if (line.startsWith(":")) {
      chain(line.slice(1).split(" ")[0] ?? "");
    } else if (line.startsWith("-A ")) {
      chain(line.split(" ")[1] ?? "").rules.push(line);
    } else if (line.startsWith("-X ")) {
      chain(line.split(" ")[1] ?? "").deleted = true;
    } else {
      throw new Error(`unexpected restore line: ${line}`);
    }
  }
  const out: string[] = [];
  for (const name of [...tables.keys()].sort()) {
    const chains = [...(tables.get(name)?.values() ?? [])].sort((a, b) => chainOrder(a.name, b.name));
    for (const c of chains) {
      if (c.name === NODEPORTS) c.rules.sort(byServiceName);
      if (c.name === SERVICES) {
        const last = (r: string) => (ruleComment(r) ?? "").includes("must be the last rule");
        c.rules.sort((a, b) => Number(last(a)) - Number(last(b)) || byServiceName(a, b));
      }
    }
    out.push(`*${name}`);
    for (const c of chains) out.push(`:${c.name} - [0:0]`);
    for (const c of chains) out.push(...c.rules);
    for (const c of chains) if (c.deleted) out.push(`-X ${c.name}`);
    out.push("COMMIT");
  }
  return `${out.join("\n")}\n`;
}

/** Our masquerade mark is written 8 hex digits wide (as upstream's real proxier formats it);
 * upstream's test proxier is given the short spelling 0x4000. */
export function shortMarks(restore: string): string {
  return restore.replaceAll("0x00004000", "0x4000");
}
