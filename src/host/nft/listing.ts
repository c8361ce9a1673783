// `nft list table FAMILY NAME` text, both ways: read into the table model the simulator holds
// (so the packet tracer, trace.ts, can walk a live node's table), and written from that model
// (so the simulator answers `list table` in the same shape). Only what a listing holds is
// read: the table's comment, sets and maps with their elements, chains with their base-chain
// line and rules; counters, handles and element timeouts are left out.

import type { SimulatedNftChain, SimulatedNftMap, SimulatedNftSet, SimulatedNftTable } from "./simulator.ts";

/** Priority names nft prints for the netfilter hooks kube-proxy uses (ip/ip6/inet). */
export const NAMED_PRIORITIES: Readonly<Record<string, number>> = {
  raw: -300,
  mangle: -150,
  dstnat: -100,
  filter: 0,
  security: 50,
  srcnat: 100,
};

export class NftListingError extends Error {
  constructor(line: number, text: string, why: string) {
    super(`nft listing line ${line}: ${why}: ${text.trim()}`);
    this.name = "NftListingError";
  }
}

/** Splits on `sep` outside double quotes. */
function splitOutsideQuotes(text: string, sep: string): string[] {
  const out: string[] = [];
  let cur = "";
  let quoted = false;
  for (const c of text) {
    if (c === '"') quoted = !quoted;
    if (c === sep && !quoted) {
      out.push(cur);
      cur = "";
    } else cur += c;
  }
  out.push(cur);
  return out;
}

/** A priority as listed: a number, a name, or "name + N" / "name - N". */
export function parsePriority(text: string): number | undefined {
  const t = text.trim();
  if (/^-?\d+$/.test(t)) return Number(t);
  const m = /^([a-z]+)(?:\s*([+-])\s*(\d+))?$/.exec(t);
  const base = m ? NAMED_PRIORITIES[m[1]!] : undefined;
  if (!m || base === undefined) return undefined;
  return m[2] === undefined ? base : base + (m[2] === "-" ? -1 : 1) * Number(m[3]);
}

/** An element's key without what a listing adds after it (timeout, expires, counter, comment). */
function elementKey(text: string): string {
  const words = text.trim().split(/\s+/);
  const stop = words.findIndex((w) => ["timeout", "expires", "counter", "comment"].includes(w));
  return (stop < 0 ? words : words.slice(0, stop)).join(" ");
}

function unquote(text: string): string {
  const t = text.trim();
  return t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1) : t;
}

/** Reads the first `table FAMILY NAME { ... }` of a listing; undefined when there is none. */
export function parseNftListing(
  text: string,
): { family: string; name: string; table: SimulatedNftTable } | undefined {
  const lines = text.split("\n").map((l) => l.replace(/\s+# handle \d+\s*$/, ""));
  let i = 0;
  while (i < lines.length && !/^\s*table\s/.test(lines[i]!)) i++;
  if (i >= lines.length) return undefined;
  const head = /^\s*table\s+(\S+)\s+(\S+)\s*\{\s*$/.exec(lines[i]!);
  if (!head) throw new NftListingError(i + 1, lines[i]!, "expected `table FAMILY NAME {`");
  const table: SimulatedNftTable = { chains: new Map(), sets: new Map(), maps: new Map() };
  i++;
  for (; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    if (line === "}") return { family: head[1]!, name: head[2]!, table };
    const block = /^(set|map|chain|flowtable|counter|quota|ct|limit)\s+(.+?)\s*\{$/.exec(line);
    if (line.startsWith("comment ")) table.comment = unquote(line.slice("comment ".length));
    else if (line.startsWith("flags ")) continue;
    else if (!block) throw new NftListingError(i + 1, line, "unexpected line in a table");
    else {
      const end = blockEnd(lines, i);
      const body = lines.slice(i + 1, end).map((l) => l.trim());
      if (block[1] === "chain") table.chains.set(block[2]!, readChain(body, i + 2));
      else if (block[1] === "set") table.sets.set(block[2]!, readSet(body, i + 2));
      else if (block[1] === "map") table.maps.set(block[2]!, readMap(body, i + 2));
      i = end;
    }
  }
  throw new NftListingError(i, "", "the table does not end");
}

/** The line of the `}` that closes the block opened on line `start` (braces in elements nest). */
function blockEnd(lines: readonly string[], start: number): number {
  let depth = 0;
  for (let j = start; j < lines.length; j++) {
    let quoted = false;
    for (const c of lines[j]!) {
      if (c === '"') quoted = !quoted;
      else if (!quoted && c === "{") depth++;
      else if (!quoted && c === "}") depth--;
    }
    if (depth === 0) return j;
  }
  throw new NftListingError(start + 1, lines[start]!, "the block does not end");
}

function readChain(body: readonly string[], firstLine: number): SimulatedNftChain {
  const chain: SimulatedNftChain = { rules: [] };
  body.forEach((line, k) => {
    if (line === "") return;
    const base = /^type\s+(\S+)\s+hook\s+(\S+)(?:\s+device\s+\S+)?\s+priority\s+([^;]+);/.exec(line);
    if (base) {
      const priority = parsePriority(base[3]!);
      if (priority === undefined) throw new NftListingError(firstLine + k, line, "unknown priority");
      chain.base = { type: base[1]!, hook: base[2]!, priority };
    } else if (/^comment\s+"[^"]*"$/.test(line)) chain.comment = unquote(line.slice("comment ".length));
    else chain.rules.push(line.replace(/\s+counter packets \d+ bytes \d+/, ""));
  });
  return chain;
}

/** The text of an `elements = { ... }` that may span lines, from `k` on; and the line after. */
function elementsText(body: readonly string[], k: number): { text: string; next: number } {
  let text = body[k]!.replace(/^elements\s*=\s*\{/, "");
  let j = k;
  while (!text.trimEnd().endsWith("}")) {
    j++;
    if (j >= body.length) throw new NftListingError(k, body[k]!, "elements do not end");
    text += ` ${body[j]}`;
  }
  return { text: text.trimEnd().slice(0, -1), next: j + 1 };
}

function readSpec(
  body: readonly string[],
  firstLine: number,
  onElements: (entries: string[]) => void,
): { type: string; flags: string[]; comment?: string; timeoutSeconds?: number } {
  let type: string | undefined;
  let flags: string[] = [];
  let comment: string | undefined;
  let timeoutSeconds: number | undefined;
  for (let k = 0; k < body.length; ) {
    const line = body[k]!;
    if (line.startsWith("elements")) {
      const { text, next } = elementsText(body, k);
      onElements(
        splitOutsideQuotes(text, ",")
          .map((e) => e.trim())
          .filter(Boolean),
      );
      k = next;
      continue;
    }
    if (line.startsWith("type ")) type = line.slice(5).trim();
    else if (line.startsWith("flags ")) flags = line.slice(6).trim().split(",");
    else if (line.startsWith("comment ")) comment = unquote(line.slice(8));
    else if (line.startsWith("timeout ")) timeoutSeconds = durationSeconds(line.slice(8).trim());
    else if (line !== "" && !/^(size|gc-interval|policy|auto-merge|counter)\b/.test(line))
      throw new NftListingError(firstLine + k, line, "unexpected line in a set or map");
    k++;
  }
  if (type === undefined) throw new NftListingError(firstLine, "", "a set or map without a type");
  return {
    type,
    flags,
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
    ...(comment !== undefined ? { comment } : {}),
  };
}

const UNIT_SECONDS: Readonly<Record<string, number>> = { d: 86400, h: 3600, m: 60, s: 1, ms: 0.001 };

/** nft's durations: "3h", "1d2h", "10800s". */
function durationSeconds(text: string): number | undefined {
  let total = 0;
  const rest = text.replace(/(\d+)(ms|d|h|m|s)/g, (_, n: string, unit: string) => {
    total += Number(n) * UNIT_SECONDS[unit]!;
    return "";
  });
  return rest === "" && text !== "" ? total : undefined;
}

function readSet(body: readonly string[], firstLine: number): SimulatedNftSet {
  const elements = new Map<string, undefined>();
  const spec = readSpec(body, firstLine, (entries) => {
    for (const e of entries) elements.set(elementKey(e), undefined);
  });
  return { ...spec, elements };
}

function readMap(body: readonly string[], firstLine: number): SimulatedNftMap {
  const elements = new Map<string, string>();
  const spec = readSpec(body, firstLine, (entries) => {
    for (const e of entries) {
      const parts = splitOutsideQuotes(e, ":");
      // IPv6 keys hold colons too: the value is what follows the last " : ".
      const at = e.lastIndexOf(" : ");
      if (at < 0 || parts.length < 2)
        throw new NftListingError(firstLine, e, "a map element without a value");
      elements.set(elementKey(e.slice(0, at)), e.slice(at + 3).trim());
    }
  });
  return { type: spec.type, ...(spec.comment !== undefined ? { comment: spec.comment } : {}), elements };
}

const quote = (s: string) => `"${s}"`;

/** A table as `nft list table` prints it (priorities as numbers, one element a line). */
export function renderNftListing(family: string, name: string, t: SimulatedNftTable): string {
  const out: string[] = [`table ${family} ${name} {`];
  if (t.comment !== undefined) out.push(`\tcomment ${quote(t.comment)}`);
  const elements = (keys: string[]) => {
    if (keys.length > 0) out.push(`\t\telements = { ${keys.join(",\n\t\t\t     ")} }`);
  };
  for (const [n, s] of t.sets) {
    out.push(`\tset ${n} {`, `\t\ttype ${s.type}`);
    if (s.flags.length) out.push(`\t\tflags ${s.flags.join(",")}`);
    if (s.timeoutSeconds !== undefined) out.push(`\t\ttimeout ${s.timeoutSeconds}s`);
    if (s.comment !== undefined) out.push(`\t\tcomment ${quote(s.comment)}`);
    elements([...s.elements.keys()]);
    out.push("\t}", "");
  }
  for (const [n, m] of t.maps) {
    out.push(`\tmap ${n} {`, `\t\ttype ${m.type}`);
    if (m.comment !== undefined) out.push(`\t\tcomment ${quote(m.comment)}`);
    elements([...m.elements].map(([k, v]) => `${k} : ${v}`));
    out.push("\t}", "");
  }
  for (const [n, c] of t.chains) {
    out.push(`\tchain ${n} {`);
    if (c.base)
      out.push(`\t\ttype ${c.base.type} hook ${c.base.hook} priority ${c.base.priority}; policy accept;`);
    if (c.comment !== undefined) out.push(`\t\tcomment ${quote(c.comment)}`);
    for (const r of c.rules) out.push(`\t\t${r}`);
    out.push("\t}", "");
  }
  if (out.at(-1) === "") out.pop();
  out.push("}");
  return `${out.join("\n")}\n`;
}
