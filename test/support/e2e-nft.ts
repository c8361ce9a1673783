// nftables views for real-kernel tests: one `kube-proxy` table of the node namespace as nft
// lists it (JSON for chains, rules and map elements; text for failure messages and "does any
// rule still name X"), the namespace's table list, and the extra diagnostics an nftables-mode
// failure needs.

import { sha256Base32Prefix } from "../../src/util/sha256-base32.ts";
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

/**
 * How many endpoints a policy chain's rules pick from: its DNAT targets, or with ClientIP
 * affinity its gotos to "endpoint-" chains (which DNAT).
 */
export function endpointTargets(rules: readonly unknown[][] | undefined): number {
  const targets = new Set<string>();
  for (const expr of rules ?? []) {
    const text = JSON.stringify(expr);
    for (const m of text.matchAll(/"goto":\{"target":"(endpoint-[^"]+)"/g)) targets.add(m[1]!);
    for (const m of text.matchAll(/"dnat":\{[^}]*?"addr":"([^"]+)"[^}]*?"port":(\d+)/g))
      targets.add(`${m[1]}:${m[2]}`);
  }
  return targets.size;
}

/** The whole ruleset of the node namespace, for a failing test's message. */
export async function nftDiagnostics(topo: Topology): Promise<string> {
  const r = await topo.run("node", ["nft", "list", "ruleset"], { timeoutMs: 10_000 });
  return `--- nft list ruleset (node) ---\n${r.stdout}${r.stderr}`;
}

const POLICY_CHAIN = /^(?:service|local)-[A-Z2-7]{8}-(.+)$/;

/**
 * The per-service chains of a table, with each endpoint a policy chain DNATs to counted as the
 * endpoint chain it would have: since upstream 1.36 only ClientIP affinity makes endpoint
 * chains, so "which chains" and "which endpoints each port reaches" are compared as one, in the
 * names the shared e2e cases expect ("endpoint-HASH8-ns/name/proto/port__ip/port").
 */
export function serviceChainsWithEndpoints(v: NftTableView): Set<string> {
  const out = new Set([...v.chains.keys()].filter((c) => c.includes("/")));
  for (const [chain, rules] of v.chains) {
    const path = POLICY_CHAIN.exec(chain)?.[1];
    if (!path) continue;
    for (const expr of rules) {
      for (const m of JSON.stringify(expr).matchAll(/"dnat":\{[^}]*?"addr":"([^"]+)"[^}]*?"port":(\d+)/g)) {
        const base = `${path}__${m[1]!.replaceAll(":", ".")}/${m[2]}`;
        out.add(`endpoint-${sha256Base32Prefix(base, 8)}-${base}`);
      }
    }
  }
  return out;
}

/**
 * A table in a form two listings of the same table share: `nft --json list table`'s objects
 * without their handles, set and map elements sorted, objects sorted.
 */
export async function canonicalTable(topo: Topology, family: "ip" | "ip6" = "ip"): Promise<string[]> {
  const out = await topo.must("node", ["nft", "--json", "list", "table", family, "kube-proxy"], {
    timeoutMs: 10_000,
  });
  const items = (JSON.parse(out) as { nftables: Json[] }).nftables.filter((i) => !i.metainfo);
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v && typeof v === "object") {
      const o: Json = {};
      for (const [k, x] of Object.entries(v as Json)) if (k !== "handle") o[k] = strip(x);
      if (Array.isArray(o.elem)) o.elem = (o.elem as unknown[]).map((e) => JSON.stringify(e)).sort();
      return o;
    }
    return v;
  };
  return items.map((i) => JSON.stringify(strip(i))).sort();
}

/**
 * An upstream test's expected table (knftables' `add ...` lines, as in
 * test/modes/nftables/golden) as nft input for a real kernel: addresses rewritten by `addresses`
 * (exact strings, one pass, so a replacement is never replaced again), objects before the rules
 * and elements that name them, and the alpha localhost NodePort objects left out.
 */
export function upstreamTableInput(dump: string, addresses: Readonly<Record<string, string>>): string {
  const order = ["table", "chain", "set", "map", "rule", "element"];
  const keys = Object.keys(addresses).sort((a, b) => b.length - a.length);
  const escaped = keys.map((k) => k.replaceAll(".", "\\.").replaceAll("/", "\\/"));
  const pattern = new RegExp(`(?<![0-9.])(?:${escaped.join("|")})(?![0-9/])`, "g");
  const lines = dump
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#") && !l.includes("localhost-nodeport"))
    .map((l) => l.replace(pattern, (m) => addresses[m]!));
  const rank = (l: string) => order.indexOf(l.split(" ")[1]!);
  const sorted = lines
    .map((line, i) => ({ line, i }))
    .sort((a, b) => rank(a.line) - rank(b.line) || a.i - b.i);
  return `${sorted.map((x) => x.line).join("\n")}\n`;
}
