// nftables views for real-kernel tests: one `kube-proxy` table of the node namespace as nft
// lists it (JSON for chains, rules and map elements; text for failure messages and "does any
// rule still name X"), the namespace's table list, and the extra diagnostics an nftables-mode
// failure needs.

import type { Topology } from "./netns.ts";

/** One element of a verdict map: its key (concatenation parts) and verdict ("goto chain"). */
export interface NftMapElement {
  readonly key: readonly (string | number)[];
  readonly verdict: string;
}

export interface NftTableView {
  readonly exists: boolean;
  /** Chain name -> its rules' expression lists (nft's JSON). */
  readonly chains: ReadonlyMap<string, readonly unknown[][]>;
  readonly maps: ReadonlyMap<string, readonly NftMapElement[]>;
  readonly sets: ReadonlySet<string>;
  /** `nft list table` output ("" when the table does not exist). */
  readonly text: string;
}

type Json = Record<string, unknown>;

function keyParts(key: unknown): (string | number)[] {
  const k = key as Json;
  if (k && typeof k === "object" && "elem" in k) return keyParts((k.elem as Json).val);
  if (k && typeof k === "object" && "concat" in k) return k.concat as (string | number)[];
  return [key as string | number];
}

function verdictText(v: unknown): string {
  const o = v as Json;
  for (const word of ["goto", "jump"]) {
    if (o && typeof o === "object" && word in o) return `${word} ${(o[word] as Json).target}`;
  }
  return JSON.stringify(v);
}

/** Parses `nft --json list table FAMILY NAME`. */
export function parseNftTableJson(json: string, text = ""): NftTableView {
  const items = (JSON.parse(json) as { nftables: Json[] }).nftables;
  const chains = new Map<string, unknown[][]>();
  const maps = new Map<string, NftMapElement[]>();
  const sets = new Set<string>();
  for (const item of items) {
    if (item.chain) chains.set((item.chain as Json).name as string, []);
  }
  for (const item of items) {
    if (item.rule) {
      const r = item.rule as Json;
      chains.get(r.chain as string)?.push(r.expr as unknown[]);
    } else if (item.map) {
      const m = item.map as Json;
      const elems = (m.elem as unknown[][] | undefined) ?? [];
      maps.set(
        m.name as string,
        elems.map(([key, value]) => ({ key: keyParts(key), verdict: verdictText(value) })),
      );
    } else if (item.set) {
      sets.add((item.set as Json).name as string);
    }
  }
  return { exists: true, chains, maps, sets, text };
}

const ABSENT: NftTableView = { exists: false, chains: new Map(), maps: new Map(), sets: new Set(), text: "" };

/** The node namespace's `FAMILY kube-proxy` table (exists: false when there is none). */
export async function nftTable(topo: Topology, family: "ip" | "ip6" = "ip"): Promise<NftTableView> {
  const json = await topo.run("node", ["nft", "--json", "list", "table", family, "kube-proxy"], {
    timeoutMs: 10_000,
  });
  if (json.code !== 0) {
    if (/No such file or directory/.test(json.stderr)) return ABSENT;
    throw new Error(`nft --json list table ${family} kube-proxy: exit ${json.code}: ${json.stderr}`);
  }
  const text = await topo.run("node", ["nft", "list", "table", family, "kube-proxy"], { timeoutMs: 10_000 });
  return parseNftTableJson(json.stdout, text.stdout);
}

/** `nft list tables` in the node namespace, e.g. ["table ip kube-proxy", "table ip nat"]. */
export async function nftTables(topo: Topology): Promise<string[]> {
  const out = await topo.must("node", ["nft", "list", "tables"], { timeoutMs: 10_000 });
  return out.split("\n").filter(Boolean).sort();
}

/** How many endpoint chains a policy chain's rules pick from (its gotos to "endpoint-" chains). */
export function endpointTargets(rules: readonly unknown[][] | undefined): number {
  const targets = new Set<string>();
  for (const expr of rules ?? []) {
    for (const m of JSON.stringify(expr).matchAll(/"goto":\{"target":"(endpoint-[^"]+)"/g))
      targets.add(m[1]!);
  }
  return targets.size;
}

/** The whole ruleset of the node namespace, for a failing test's message. */
export async function nftDiagnostics(topo: Topology): Promise<string> {
  const r = await topo.run("node", ["nft", "list", "ruleset"], { timeoutMs: 10_000 });
  return `--- nft list ruleset (node) ---\n${r.stdout}${r.stderr}`;
}
