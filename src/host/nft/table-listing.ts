// Reads `nft --json list table FAMILY NAME` into what a comparison needs: each chain's number of
// rules, and each set's or map's elements as nft's text spells them ("10.0.0.1 . tcp . 80",
// value "goto service-x"). Rules are counted, not read: nft prints them in its own normal form,
// which is not the text they were written in.

import { z } from "zod";

export interface ListedContainer {
  readonly kind: "set" | "map";
  /** Key text -> value text ("" for a set's element). */
  readonly elements: Map<string, string>;
}

export interface ListedTable {
  /** Chain name -> rules it holds. */
  readonly chains: Map<string, number>;
  readonly containers: Map<string, ListedContainer>;
}

const entrySchema = z.record(z.string(), z.unknown());
const documentSchema = z.object({ nftables: z.array(entrySchema) });

const objectSchema = z.looseObject({ table: z.string().optional(), name: z.string().optional() });
const ruleSchema = z.looseObject({ table: z.string().optional(), chain: z.string() });
const containerSchema = z.looseObject({
  table: z.string().optional(),
  name: z.string(),
  elem: z.array(z.unknown()).optional(),
});

const VERDICTS = ["accept", "drop", "continue", "return"] as const;

/** One expression of an element as nft's text prints it. */
export function nftJsonText(v: unknown): string {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return v.map(nftJsonText).join(", ");
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (Array.isArray(o.concat)) return o.concat.map(nftJsonText).join(" . ");
    for (const verb of ["goto", "jump"] as const) {
      const t = o[verb] as { target?: unknown } | undefined;
      if (t && typeof t.target === "string") return `${verb} ${t.target}`;
    }
    for (const verdict of VERDICTS) if (verdict in o) return verdict;
    const prefix = o.prefix as { addr?: unknown; len?: unknown } | undefined;
    if (prefix) return `${nftJsonText(prefix.addr)}/${nftJsonText(prefix.len)}`;
    if (Array.isArray(o.range)) return o.range.map(nftJsonText).join("-");
    const elem = o.elem as { val?: unknown } | undefined;
    if (elem && "val" in elem) return nftJsonText(elem.val);
  }
  return JSON.stringify(v);
}

/** The listing of `table` from nft's JSON (other tables' entries, if any, are skipped). */
export function parseNftTableListing(json: string, table: string): ListedTable {
  const doc = documentSchema.parse(JSON.parse(json));
  const chains = new Map<string, number>();
  const containers = new Map<string, ListedContainer>();
  for (const entry of doc.nftables) {
    if ("chain" in entry) {
      const c = objectSchema.parse(entry.chain);
      if (c.table === table && c.name !== undefined && !chains.has(c.name)) chains.set(c.name, 0);
    } else if ("rule" in entry) {
      const r = ruleSchema.parse(entry.rule);
      if (r.table === table) chains.set(r.chain, (chains.get(r.chain) ?? 0) + 1);
    } else if ("set" in entry || "map" in entry) {
      const kind = "set" in entry ? "set" : "map";
      const c = containerSchema.parse(entry[kind]);
      if (c.table !== table) continue;
      const elements = new Map<string, string>();
      for (const e of c.elem ?? []) {
        // A map's element is [key, value]; a set's is its key.
        if (kind === "map" && Array.isArray(e) && e.length === 2)
          elements.set(nftJsonText(e[0]), nftJsonText(e[1]));
        else elements.set(nftJsonText(e), "");
      }
      containers.set(c.name, { kind, elements });
    }
  }
  return { chains, containers };
}
