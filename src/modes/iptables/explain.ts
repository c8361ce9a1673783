// `explain` in iptables mode: reads the family's rules back with iptables-save (the backend the
// proxier would pick), walks a new connection through them with the packet tracer
// (src/host/iptables/trace.ts) and names why a refused path was refused from the rule, and its
// comment, that refused it.

import { detectBackend } from "../../host/iptables/backend.ts";
import { createIptablesClient } from "../../host/iptables/client.ts";
import { type FlowPath, IptablesTracer, withNatAndFilter } from "../../host/iptables/trace.ts";
import { familyOf } from "../../util/net/family.ts";
import {
  type Cause,
  type ExplainHost,
  type ExplainPacket,
  type Explanation,
  namedFlowPath,
  ruleComment,
  summarize,
} from "../explain.ts";

function causeOf(p: FlowPath): Cause {
  const rule = p.trail.at(-1) ?? "";
  const comment = ruleComment(rule) ?? "";
  if (comment.includes("has no local endpoints")) return "no-local-endpoints";
  if (comment.includes("has no endpoints")) return "no-endpoints";
  if (comment.includes("traffic not accepted by")) return "source-range";
  if (comment.includes("localnet")) return "localnet";
  if (/--ctstate INVALID\b/.test(rule)) return "invalid-state";
  return "other";
}

export async function explainIptables(host: ExplainHost, packet: ExplainPacket): Promise<Explanation> {
  const family = familyOf(packet.destination);
  const { backend } = await detectBackend(host.exec, host.log, host.backend);
  const client = createIptablesClient({ exec: host.exec, family, backend, logger: host.log });
  const rules = withNatAndFilter(await client.saveAll());
  const tracer = new IptablesTracer(rules, host.localIPs);
  const result = tracer.trace({
    source: packet.source,
    destination: packet.destination,
    port: packet.port,
    protocol: packet.protocol,
  });
  const save = family === "IPv4" ? "iptables-save" : "ip6tables-save";
  return summarize(
    "iptables",
    packet,
    `${save} (${backend} backend)`,
    result.paths.map((p) => namedFlowPath(p, causeOf)),
  );
}
