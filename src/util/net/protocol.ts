// The one transport protocol type, as the Kubernetes API spells it, and its rendering for the
// tools that want it in lower case (iptables -p, ipset entries, conntrack -p).

export type Protocol = "TCP" | "UDP" | "SCTP";

export type LowerProtocol = "tcp" | "udp" | "sctp";

const PROTOCOLS: ReadonlySet<string> = new Set(["TCP", "UDP", "SCTP"]);

export function isProtocol(value: unknown): value is Protocol {
  return typeof value === "string" && PROTOCOLS.has(value);
}

/** A protocol read leniently, as the API server does: missing means TCP. */
export function parseProtocol(value: unknown): Protocol | undefined {
  if (value === undefined || value === null) return "TCP";
  return isProtocol(value) ? value : undefined;
}

const LOWER: Readonly<Record<Protocol, LowerProtocol>> = { TCP: "tcp", UDP: "udp", SCTP: "sctp" };

/** The one lower-case string of each protocol (per-port caches keep it: no copy per port). */
export function lowerProtocol(protocol: Protocol): LowerProtocol {
  return LOWER[protocol] ?? (protocol.toLowerCase() as LowerProtocol);
}
