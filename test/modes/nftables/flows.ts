// Upstream's packet-flow rows as tests: each row, written as the research tables give it
// ("name | source | destination:port [PROTO] | output | masq [| local IP, ...]"), becomes one
// bun test that traces the packet through a table (tracer.ts) and compares output and masq.
// "-" for masq means false (upstream leaves the field unset); the optional last column names
// source addresses the row declares local (e.g. an LB IP the node SNATs to).

import { expect, test } from "bun:test";
import type { FakeNftTable } from "../../../src/host/nft/testing/fake.ts";
import { type L4Protocol, tracePacket } from "../../../src/host/nft/trace.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";

export interface Flow {
  readonly name: string;
  readonly src: string;
  readonly dst: string;
  readonly port: number;
  readonly protocol: L4Protocol;
  readonly output: string;
  readonly masq: boolean;
  readonly local: readonly string[];
}

/** Rows, one a line; blank lines and lines starting with "#" are skipped. */
export function flows(text: string): Flow[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map(parseFlow);
}

function parseFlow(line: string): Flow {
  const cols = line.split("|").map((c) => c.trim());
  if (cols.length < 5 || cols.length > 6) throw new Error(`flow row needs 5 or 6 columns: ${line}`);
  const [name, src, dest, output, masq, local] = cols as [string, string, string, string, string, string?];
  const m = /^(\[[^\]]+\]|[^\s:]+):(\d+)(?:\s+(TCP|UDP|SCTP))?$/.exec(dest);
  if (!m) throw new Error(`flow row has an unreadable destination "${dest}": ${line}`);
  if (!["true", "false", "-"].includes(masq)) throw new Error(`flow row has masq "${masq}": ${line}`);
  return {
    name,
    src,
    dst: m[1]!.replace(/^\[|\]$/g, ""),
    port: Number(m[2]),
    protocol: (m[3]?.toLowerCase() ?? "tcp") as L4Protocol,
    output: output === '""' ? "" : output,
    masq: masq === "true",
    local: local ? local.split(",").map((s) => s.trim()) : [],
  };
}

/** One test per row, each tracing through the table `table()` gives when it runs. */
export function traceFlows(
  table: () => FakeNftTable,
  family: IPFamily,
  nodeIPs: readonly string[],
  rows: readonly Flow[],
): void {
  for (const f of rows) {
    test(`${f.name}: ${f.src} -> ${f.dst}:${f.port}/${f.protocol}`, () => {
      const r = tracePacket(
        table(),
        { saddr: f.src, daddr: f.dst, protocol: f.protocol, dport: f.port },
        { family: family === "IPv4" ? "ip" : "ip6", localIPs: [...nodeIPs, ...f.local] },
      );
      const how = r.paths.map((p) => p.trail.join("\n    ")).join("\n  --\n    ");
      expect({ output: r.output, masq: r.masq, how }).toEqual({ output: f.output, masq: f.masq, how });
    });
  }
}
