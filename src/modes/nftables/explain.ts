// `explain` in nftables mode: reads the family's kube-proxy table back with `nft list table`,
// walks a new connection through it with the packet tracer (src/host/nft/trace.ts) and names
// why a refused path was refused, from the map entry or rule (and its comment) that refused it.

import { createNftClient } from "../../host/nft/client.ts";
import { parseNftListing } from "../../host/nft/listing.ts";
import { type PathEnd, tracePacket } from "../../host/nft/trace.ts";
import { familyOf, nftFamily } from "../../util/net/family.ts";
import {
  type Cause,
  type ExplainHost,
  type ExplainPacket,
  type Explanation,
  ruleComment,
  summarize,
  type TracedPath,
} from "../explain.ts";
import { NO_ENDPOINT_NODEPORTS_MAP, NO_ENDPOINT_SERVICES_MAP } from "./names.ts";

function causeOf(p: PathEnd): Cause {
  const noEndpoints = p.trail.some(
    (h) => h.startsWith(`@${NO_ENDPOINT_SERVICES_MAP}:`) || h.startsWith(`@${NO_ENDPOINT_NODEPORTS_MAP}:`),
  );
  // The proxier rejects when a Service has no endpoint at all, and drops when a Local policy
  // finds none on this node.
  if (noEndpoints) return p.verdict === "reject" ? "no-endpoints" : "no-local-endpoints";
  const last = p.trail.at(-1) ?? "";
  if (last.startsWith("firewall-")) return "source-range";
  const comment = ruleComment(last) ?? "";
  if (comment.includes("invalid ports of ClusterIPs")) return "invalid-cluster-port";
  if (comment.includes("unallocated ClusterIPs")) return "unallocated-cluster-ip";
  return "other";
}

function named(p: PathEnd): TracedPath {
  const base = {
    verdict: p.verdict,
    dnat: p.dnat,
    masq: p.masq,
    probability: p.probability,
    // nftables mode accepts nothing explicitly: a path it does not DNAT or refuse it left alone.
    decided: p.dnat !== undefined,
    hops: p.trail,
  };
  if (p.verdict === "accept") return base;
  const refusing = p.trail.findLast((h) => !h.startsWith("@")) ?? "";
  const element = p.trail.findLast((h) => h.startsWith("@"));
  // A verdict map's element refused it when the last rule was the lookup; else that rule did.
  const detail = ruleComment(refusing) ?? (refusing.includes(" vmap @") ? element : refusing);
  return { ...base, cause: causeOf(p), ...(detail ? { detail } : {}) };
}

export async function explainNftables(host: ExplainHost, packet: ExplainPacket): Promise<Explanation> {
  const family = nftFamily(familyOf(packet.destination));
  const client = createNftClient({ exec: host.exec, family, table: "kube-proxy", logger: host.log });
  const from = `nft list table ${family} kube-proxy`;
  const text = await client.listTable();
  const listed = text === undefined ? undefined : parseNftListing(text);
  if (!listed) {
    return summarize("nftables", packet, `${from} (no such table)`, [
      { verdict: "accept", dnat: undefined, masq: false, probability: 1, decided: false, hops: [] },
    ]);
  }
  const result = tracePacket(
    listed.table,
    { saddr: packet.source, daddr: packet.destination, protocol: packet.protocol, dport: packet.port },
    { family, localIPs: host.localIPs },
  );
  return summarize("nftables", packet, from, result.paths.map(named));
}
