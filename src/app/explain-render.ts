// How `explain` prints its answer: text (the verdict and reason, the endpoints with their
// share, then each path hop by hop), JSON (the Explanation as it is), or a Graphviz graph (a
// tree: paths share the hops they start with, and each ends in a node with its verdict).

import type { ExplainPath, Explanation } from "../modes/explain.ts";
import { joinHostPort } from "../util/net/host-port.ts";

const percent = (p: number) => `${Math.round(p * 1000) / 10}%`;

function target(e: Explanation): string {
  const p = e.packet;
  return `${joinHostPort(p.destination, p.port)}/${p.protocol}`;
}

function pathHead(p: ExplainPath): string {
  const masq = p.masquerade ? ", masqueraded" : "";
  switch (p.verdict) {
    case "dnat":
      return `DNAT to ${p.endpoint}${masq}`;
    case "reject":
    case "drop":
      return `${p.verdict.toUpperCase()}${p.detail ? ` (${p.detail})` : ""}`;
    case "accept":
      return `ACCEPT${p.detail ? ` (${p.detail})` : ""}`;
    case "not-handled":
      return "not handled by kube-proxy's rules";
  }
}

/** `sourceNote`: how the source was chosen, when the user did not give --from. */
export function renderExplanationText(e: Explanation, sourceNote = ""): string {
  const out: string[] = [
    `explain ${target(e)} from ${e.packet.source}${sourceNote} in ${e.mode} mode (rules read with ${e.rulesFrom})`,
    `verdict: ${e.verdict}: ${e.reason}`,
  ];
  if (e.endpoints.length > 0) {
    out.push("endpoints:");
    for (const ep of e.endpoints)
      out.push(`  ${ep.endpoint}  ${percent(ep.probability)}${ep.masquerade ? "  masqueraded" : ""}`);
  }
  e.paths.forEach((p, i) => {
    out.push(`path ${i + 1} of ${e.paths.length} (${percent(p.probability)}): ${pathHead(p)}`);
    for (const hop of p.hops) out.push(`  ${hop}`);
  });
  return `${out.join("\n")}\n`;
}

export function renderExplanationJson(e: Explanation): string {
  return `${JSON.stringify(e, null, 2)}\n`;
}

const dotText = (s: string) => `"${s.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;

export function renderExplanationDot(e: Explanation): string {
  const out = ["digraph explain {", "  rankdir=TB;", "  node [shape=box, fontname=monospace];"];
  out.push(`  start [shape=oval, label=${dotText(`${target(e)} from ${e.packet.source} (${e.mode})`)}];`);
  const ids = new Map<string, string>();
  const edges = new Set<string>();
  // A node per hop and the hops before it: paths share their common start, then stay apart.
  const id = (hops: readonly string[], k: number) => {
    const key = hops.slice(0, k + 1).join("\n");
    let v = ids.get(key);
    if (!v) {
      v = `h${ids.size}`;
      ids.set(key, v);
      out.push(`  ${v} [label=${dotText(hops[k]!)}];`);
    }
    return v;
  };
  e.paths.forEach((p, i) => {
    let from = "start";
    for (let k = 0; k < p.hops.length; k++) {
      const to = id(p.hops, k);
      const edge = `  ${from} -> ${to};`;
      if (!edges.has(edge)) out.push(edge);
      edges.add(edge);
      from = to;
    }
    out.push(`  end${i} [shape=oval, label=${dotText(`${pathHead(p)} ${percent(p.probability)}`)}];`);
    out.push(`  ${from} -> end${i};`);
  });
  out.push("}");
  return `${out.join("\n")}\n`;
}
