// What `kube-proxy-ts explain` answers, whichever mode traced it: the ways a NEW connection can
// go through the rules as they are on the node (each with its chance, its hops and whether it
// is masqueraded), the endpoints it reaches, and one verdict with its reason. Each mode's
// explain.ts traces its own rules into paths; summarize() turns them into this answer.

import type { Exec } from "../exec/types.ts";
import type { BackendPreference } from "../host/iptables/backend.ts";
import type { FlowPath } from "../host/iptables/trace.ts";
import type { Logger } from "../log/logger.ts";

export type ExplainProtocol = "tcp" | "udp" | "sctp";

/** The first packet of a new connection. */
export interface ExplainPacket {
  readonly source: string;
  readonly destination: string;
  readonly port: number;
  readonly protocol: ExplainProtocol;
}

/** Where a mode reads its rules: the live node, or the simulated host a snapshot was synced on. */
export interface ExplainHost {
  readonly exec: Exec;
  readonly backend: BackendPreference;
  readonly log: Logger;
  /** The node's own addresses (loopback counts as local anyway). */
  readonly localIPs: readonly string[];
}

export type PathVerdict = "dnat" | "reject" | "drop" | "accept" | "not-handled";
export type Verdict = PathVerdict | "mixed";

/** Why a packet was refused, read from the rule (and its comment) that refused it. */
export type Cause =
  | "no-endpoints"
  | "no-local-endpoints"
  | "source-range"
  | "invalid-cluster-port"
  | "unallocated-cluster-ip"
  | "localnet"
  | "invalid-state"
  | "other";

export interface ExplainPath {
  readonly verdict: PathVerdict;
  /** "ip:port" ("[ip]:port") when the path DNATs. */
  readonly endpoint?: string;
  readonly probability: number;
  readonly masquerade: boolean;
  /** The rules (or map entries) the packet passed that acted on it, in order. */
  readonly hops: readonly string[];
  /** For a refused or accepted path: why, from the deciding rule. */
  readonly cause?: Cause;
  readonly detail?: string;
}

export interface ExplainEndpoint {
  readonly endpoint: string;
  readonly probability: number;
  readonly masquerade: boolean;
}

export interface Explanation {
  readonly mode: string;
  readonly packet: ExplainPacket;
  /** What was read: "iptables-save (nft backend)", "nft list table ip kube-proxy". */
  readonly rulesFrom: string;
  readonly verdict: Verdict;
  readonly reason: string;
  readonly cause?: Cause;
  readonly endpoints: readonly ExplainEndpoint[];
  readonly paths: readonly ExplainPath[];
}

/** A path as a mode's tracer reports it, before it is named. */
export interface TracedPath {
  readonly verdict: "accept" | "drop" | "reject";
  readonly dnat: string | undefined;
  readonly masq: boolean;
  readonly probability: number;
  /** Whether a rule accepted it explicitly (a DNAT counts). */
  readonly decided: boolean;
  readonly hops: readonly string[];
  readonly cause?: Cause;
  readonly detail?: string;
}

const percent = (p: number) => `${Math.round(p * 1000) / 10}%`;

/** The answer: paths named, endpoints merged (affinity can reach one twice), one verdict. */
export function summarize(
  mode: string,
  packet: ExplainPacket,
  rulesFrom: string,
  traced: readonly TracedPath[],
): Explanation {
  const paths: ExplainPath[] = traced.map((t) => ({
    verdict:
      t.dnat !== undefined
        ? "dnat"
        : t.verdict === "accept"
          ? t.decided
            ? "accept"
            : "not-handled"
          : t.verdict,
    ...(t.dnat !== undefined ? { endpoint: t.dnat } : {}),
    probability: t.probability,
    masquerade: t.masq,
    hops: t.hops,
    ...(t.cause ? { cause: t.cause } : {}),
    ...(t.detail ? { detail: t.detail } : {}),
  }));
  const byEndpoint = new Map<string, { probability: number; masquerade: boolean }>();
  for (const p of paths) {
    if (p.endpoint === undefined) continue;
    const e = byEndpoint.get(p.endpoint) ?? { probability: 0, masquerade: false };
    byEndpoint.set(p.endpoint, {
      probability: e.probability + p.probability,
      masquerade: e.masquerade || p.masquerade,
    });
  }
  const endpoints = [...byEndpoint].map(([endpoint, e]) => ({ endpoint, ...e }));
  const kinds = new Set(paths.map((p) => p.verdict));
  const verdict: Verdict = kinds.size === 1 ? [...kinds][0]! : "mixed";
  const first = paths.find((p) => p.verdict === verdict) ?? paths[0];
  const cause = first?.cause;
  const reason = reasonOf(verdict, endpoints, first);
  return {
    mode,
    packet,
    rulesFrom,
    verdict,
    reason,
    ...(cause && verdict !== "dnat" ? { cause } : {}),
    endpoints,
    paths,
  };
}

const CAUSE_TEXT: Readonly<Record<Cause, string>> = {
  "no-endpoints": "the Service has no endpoints",
  "no-local-endpoints":
    "externalTrafficPolicy/internalTrafficPolicy is Local and this node has no local endpoint",
  "source-range": "the source address is not in the Service's loadBalancerSourceRanges",
  "invalid-cluster-port": "the ClusterIP exists but no Service port is this port/protocol",
  "unallocated-cluster-ip": "no Service has this ClusterIP",
  localnet: "a connection to 127.0.0.0/8 from outside the node",
  "invalid-state": "conntrack state INVALID",
  other: "a kube-proxy rule refused it",
};

function reasonOf(
  verdict: Verdict,
  endpoints: readonly ExplainEndpoint[],
  p: ExplainPath | undefined,
): string {
  const detail = p?.detail ? ` (${p.detail})` : "";
  switch (verdict) {
    case "dnat": {
      const masq = endpoints.every((e) => e.masquerade)
        ? ", masqueraded"
        : endpoints.some((e) => e.masquerade)
          ? ", masqueraded on some paths"
          : "";
      const list = endpoints.map((e) => `${e.endpoint} ${percent(e.probability)}`).join(", ");
      return `load-balanced to ${endpoints.length} endpoint${endpoints.length === 1 ? "" : "s"} (${list})${masq}`;
    }
    case "reject":
    case "drop":
      return `${verdict === "reject" ? "rejected" : "dropped"}: ${CAUSE_TEXT[p?.cause ?? "other"]}${detail}`;
    case "accept":
      return `accepted by a kube-proxy rule${detail}`;
    case "not-handled":
      return "not handled by kube-proxy: no kube-proxy rule matches this destination (not a Service address and port)";
    case "mixed":
      return "the paths end differently (see each path)";
  }
}

/**
 * An iptables tracer's path as explain names it (iptables and ipvs mode): a path a rule ended
 * explicitly, without a DNAT, gets its deciding rule's comment as detail, and a cause when it
 * was refused.
 */
export function namedFlowPath(p: FlowPath, causeOf: (p: FlowPath) => Cause): TracedPath {
  const base = {
    verdict: p.verdict,
    dnat: p.dnat,
    masq: p.masq,
    probability: p.probability,
    decided: p.decided,
    hops: p.trail,
  };
  const last = p.trail.at(-1);
  if (last === undefined || p.dnat !== undefined || !p.decided) return base;
  const detail = ruleComment(last) ?? last;
  return p.verdict === "accept" ? { ...base, detail } : { ...base, cause: causeOf(p), detail };
}

/** The text after --comment in an iptables rule, or after comment in an nft rule. */
export function ruleComment(rule: string): string | undefined {
  const m =
    /--comment (?:"((?:[^"\\]|\\.)*)"|(\S+))/.exec(rule) ?? /(?:^|\s)comment "((?:[^"\\]|\\.)*)"/.exec(rule);
  return m ? (m[1] ?? m[2]) : undefined;
}
