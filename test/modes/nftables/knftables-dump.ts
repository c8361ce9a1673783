// Upstream's nftables tests compare the table its fake nft holds, printed as `add ...` lines
// (one per table, chain, rule, set, map and element), after sorting both sides the same way.
// This module gives our transactions the same shape: it applies our nft input to a small model
// of one table and prints it in that form, sorts such dumps as upstream's helpers do, and
// rewrites our endpoint choice into upstream's form so that the two compare (see
// `asUpstreamEndpointChoice`).

interface Model {
  table: string | undefined;
  chains: Map<string, { line: string; rules: string[] }>;
  sets: Map<string, { line: string; elements: Map<string, string> }>;
}

/** `verb kind family table name ...` -> its words; element keys end at " comment " or " : ". */
function words(line: string): string[] {
  return line.split(" ");
}

function elementKey(line: string): string {
  const body = line.slice(line.indexOf("{ ") + 2, line.lastIndexOf(" }"));
  const end = [" comment ", " : "].map((m) => body.indexOf(m)).filter((i) => i >= 0);
  return end.length === 0 ? body : body.slice(0, Math.min(...end));
}

/** Applies nft input lines (as NftTransaction renders them) to the model, in order. */
function apply(m: Model, input: string): void {
  for (const line of input.split("\n")) {
    if (line === "") continue;
    const [verb, kind, , , name = ""] = words(line);
    switch (kind) {
      case "table":
        if (verb === "add") m.table ??= line;
        else if (verb === "delete") {
          m.table = undefined;
          m.chains.clear();
          m.sets.clear();
        }
        break;
      case "chain": {
        const c = m.chains.get(name);
        if (verb === "add" && !c) m.chains.set(name, { line, rules: [] });
        else if (verb === "flush" && c) c.rules = [];
        else if (verb === "delete") m.chains.delete(name);
        break;
      }
      case "rule":
        m.chains.get(name)?.rules.push(line);
        break;
      case "set":
      case "map": {
        const s = m.sets.get(name);
        if (verb === "add" && !s) m.sets.set(name, { line, elements: new Map() });
        else if (verb === "flush" && s) s.elements.clear();
        else if (verb === "delete") m.sets.delete(name);
        break;
      }
      case "element": {
        const s = m.sets.get(name);
        if (!s) break;
        if (verb === "add") s.elements.set(elementKey(line), line);
        else if (verb === "delete") s.elements.delete(elementKey(line));
        break;
      }
    }
  }
}

/** The table the given transactions leave, one `add` line per object and element. */
export function knftablesDump(transactions: readonly string[]): string[] {
  const m: Model = { table: undefined, chains: new Map(), sets: new Map() };
  for (const tx of transactions) apply(m, tx);
  const out: string[] = m.table ? [m.table] : [];
  for (const c of m.chains.values()) out.push(c.line);
  for (const c of m.chains.values()) out.push(...c.rules);
  for (const s of m.sets.values()) out.push(s.line, ...s.elements.values());
  return out;
}

const RANK: Readonly<Record<string, number>> = {
  table: 10,
  chain: 9,
  rule: 8,
  set: 7,
  map: 6,
  element: 5,
};

/**
 * Upstream's order for comparing dumps: comment and blank lines dropped; by object type (table,
 * chain, rule, set, map, element), then object name; rules of one chain keep their order,
 * everything else by its whole text.
 */
export function sortLikeUpstream(lines: readonly string[]): string[] {
  const kept = lines.filter((l) => l !== "" && !l.startsWith("#"));
  const indexed = kept.map((line, i) => ({ line, i, w: words(line) }));
  indexed.sort((a, b) => {
    const ra = RANK[a.w[1] ?? ""] ?? 0;
    const rb = RANK[b.w[1] ?? ""] ?? 0;
    if (ra !== rb) return rb - ra;
    const na = a.w[4] ?? "";
    const nb = b.w[4] ?? "";
    if (na !== nb) return na < nb ? -1 : 1;
    if (a.w[1] === "rule") return a.i - b.i;
    return a.line < b.line ? -1 : a.line > b.line ? 1 : 0;
  });
  return indexed.map((x) => x.line);
}

/** "0x00004000" and "0x4000" are one mark: ours is printed 8 digits wide, upstream's test says 0x4000. */
export function canonicalMarks(line: string): string {
  return line.replace(/\b0x([0-9a-f]+)\b/g, (_, hex: string) => `0x${Number.parseInt(hex, 16).toString(16)}`);
}

const NUMGEN = /^numgen random mod (\d+) 0 (.*)$/;
const DNAT = /^meta l4proto (\w+) dnat to (?:\[([^\]]+)\]|([^:]+)):(\d+)$/;

/**
 * Rewrites our endpoint choice into upstream's, rule for rule. We pick endpoint i of n with
 * `numgen random mod n-i 0 <action>` (the last one unconditionally), n rules; upstream writes
 * one rule: `meta l4proto P dnat ip addr . port to numgen random mod n map { i : addr . port ,
 * ... }` without affinity, `numgen random mod n vmap { i : goto endpoint-... , ... }` with it
 * (also for one endpoint). Both pick each endpoint with probability 1/n; ours loads in linear
 * time (see port-rules.ts). A run that is not exactly that shape is left alone, so a wrong
 * probability or order still shows as a difference.
 */
export function asUpstreamEndpointChoice(rules: readonly string[], ipX: "ip" | "ip6"): string[] {
  const out: string[] = [];
  for (let i = 0; i < rules.length; ) {
    const run = choiceRun(rules, i);
    if (!run) {
      out.push(rules[i]!);
      i++;
      continue;
    }
    out.push(run.rule);
    i += run.length;
  }
  return out;

  function choiceRun(all: readonly string[], at: number): { rule: string; length: number } | undefined {
    const first = NUMGEN.exec(all[at]!);
    const n = first ? Number(first[1]) : 1;
    const actions: string[] = [];
    for (let k = 0; k < n; k++) {
      const r = all[at + k];
      if (r === undefined) return undefined;
      if (k === n - 1) actions.push(r);
      else {
        const m = NUMGEN.exec(r);
        if (!m || Number(m[1]) !== n - k) return undefined;
        actions.push(m[2]!);
      }
    }
    if (actions.every((a) => a.startsWith("goto endpoint-"))) {
      const entries = actions.map((a, k) => `${k} : ${a}`).join(" , ");
      return { rule: `numgen random mod ${n} vmap { ${entries} }`, length: n };
    }
    if (n < 2) return undefined;
    const dnats = actions.map((a) => DNAT.exec(a));
    if (dnats.some((d) => !d) || new Set(dnats.map((d) => d![1])).size !== 1) return undefined;
    const entries = dnats.map((d, k) => `${k} : ${d![2] ?? d![3]} . ${d![4]}`).join(" , ");
    return {
      rule: `meta l4proto ${dnats[0]![1]} dnat ${ipX} addr . port to numgen random mod ${n} map { ${entries} }`,
      length: n,
    };
  }
}

/** Our dump's rule lines with the endpoint choice in upstream's form (see asUpstreamEndpointChoice). */
export function withUpstreamEndpointChoice(dump: readonly string[]): string[] {
  const byChain = new Map<string, string[]>();
  const prefixes = new Map<string, string>();
  for (const line of dump) {
    const w = words(line);
    if (w[1] !== "rule") continue;
    const prefix = w.slice(0, 5).join(" ");
    prefixes.set(w[4]!, prefix);
    const rules = byChain.get(w[4]!) ?? [];
    rules.push(line.slice(prefix.length + 1));
    byChain.set(w[4]!, rules);
  }
  const out = dump.filter((l) => words(l)[1] !== "rule");
  for (const [chain, rules] of byChain) {
    const prefix = prefixes.get(chain)!;
    const ipX = prefix.split(" ")[2] === "ip6" ? "ip6" : "ip";
    for (const r of asUpstreamEndpointChoice(rules, ipX)) out.push(`${prefix} ${r}`);
  }
  return out;
}
