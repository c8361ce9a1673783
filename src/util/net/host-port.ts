// "host:port" text with Go's net package rules: one JoinHostPort (IPv6 in brackets) and one
// SplitHostPort, so every listener, endpoint and command line spells an address the same way.

/** Go's net.JoinHostPort: a host containing a colon (IPv6) is bracketed. */
export function joinHostPort(host: string, port: number | string): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

export type HostPort = { ok: true; host: string; port: string } | { ok: false; error: string };

/** Go's net.SplitHostPort: "host:port" or "[host]:port"; the port is not checked here. */
export function splitHostPort(text: string): HostPort {
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0) return { ok: false, error: "missing ']' in address" };
    if (text[close + 1] !== ":") return { ok: false, error: "missing port in address" };
    const host = text.slice(1, close);
    const port = text.slice(close + 2);
    if (host.includes("[") || host.includes("]") || port.includes("]")) {
      return { ok: false, error: "unexpected bracket in address" };
    }
    return { ok: true, host, port };
  }
  const colon = text.lastIndexOf(":");
  if (colon < 0) return { ok: false, error: "missing port in address" };
  const host = text.slice(0, colon);
  if (host.includes(":")) return { ok: false, error: "too many colons in address" };
  if (host.includes("[") || host.includes("]")) return { ok: false, error: "unexpected bracket in address" };
  return { ok: true, host, port: text.slice(colon + 1) };
}

/** A TCP/UDP port number: an integer in 1..65535. */
export function isPortNumber(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= 65535;
}
