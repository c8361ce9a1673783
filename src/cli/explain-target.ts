// The target of `kube-proxy-ts explain`: "IP:port[/proto]" ("[IPv6]:port[/proto]"), protocol
// tcp (the default), udp or sctp; and the --from source address. Errors name the value given.

import { parseIPStrict } from "../util/net/address.ts";

export type ExplainProtocol = "tcp" | "udp" | "sctp";

export interface ExplainTarget {
  readonly destination: string;
  readonly port: number;
  readonly protocol: ExplainProtocol;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const PROTOCOLS: readonly string[] = ["tcp", "udp", "sctp"];
const FORM = "expected IP:port[/tcp|udp|sctp], with an IPv6 address in brackets ([2001:db8::1]:80/tcp)";

export function parseExplainTarget(text: string): Parsed<ExplainTarget> {
  const bad = (why: string): Parsed<ExplainTarget> => ({
    ok: false,
    error: `${JSON.stringify(text)}: ${why}`,
  });
  const slash = text.lastIndexOf("/");
  const hostPort = slash < 0 ? text : text.slice(0, slash);
  const proto = slash < 0 ? "tcp" : text.slice(slash + 1).toLowerCase();
  if (!PROTOCOLS.includes(proto)) return bad(`unknown protocol ${JSON.stringify(proto)} (tcp, udp or sctp)`);
  let host: string;
  let port: string;
  if (hostPort.startsWith("[")) {
    const m = /^\[([^\][]+)\]:([^:\][]*)$/.exec(hostPort);
    if (!m) return bad(FORM);
    [host, port] = [m[1]!, m[2]!];
    if (parseIPStrict(host)?.family !== "IPv6") return bad(`${JSON.stringify(host)} is not an IPv6 address`);
  } else {
    const colon = hostPort.lastIndexOf(":");
    if (colon < 0) return bad(`no port; ${FORM}`);
    [host, port] = [hostPort.slice(0, colon), hostPort.slice(colon + 1)];
    if (host.includes(":")) return bad(`an IPv6 address needs brackets; ${FORM}`);
    if (parseIPStrict(host)?.family !== "IPv4") return bad(`${JSON.stringify(host)} is not an IP address`);
  }
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535)
    return bad(`port ${JSON.stringify(port)} is not a number from 1 to 65535`);
  return { ok: true, value: { destination: host, port: Number(port), protocol: proto as ExplainProtocol } };
}

/** --from: one IP address (no port, no prefix). */
export function parseExplainSource(text: string): Parsed<string> {
  const ip = parseIPStrict(text);
  if (!ip) return { ok: false, error: `${JSON.stringify(text)} is not an IP address` };
  return { ok: true, value: ip.ip };
}
