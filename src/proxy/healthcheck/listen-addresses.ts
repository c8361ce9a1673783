// Where the per-Service health check servers listen. Upstream: when nodePortAddresses matches
// every address, one wildcard listener; otherwise one listener per local IP inside
// nodePortAddresses, so a health check port is reachable exactly where NodePorts are.

import type { IPFamily } from "../../util/net/family.ts";
import { NodePortAddresses, resolveNodePortAddresses } from "../nodeport-addresses.ts";

/** fe80::/10: binding one needs a zone index, which `ip -o addr` addresses do not carry. */
function isIPv6LinkLocal(ip: string): boolean {
  return /^fe[89ab][0-9a-f]?:/i.test(ip);
}

/**
 * undefined: listen on every address (one wildcard socket). Otherwise the addresses to listen
 * on, possibly none. A family whose nodePortAddresses match everything contributes all of its
 * local addresses, so a restriction of one family never opens the other's wildcard on it.
 */
export async function serviceHealthListenAddresses(
  configured: readonly string[],
  nodeIPs: Readonly<Partial<Record<IPFamily, string>>>,
  localAddresses: () => Promise<readonly string[]>,
): Promise<string[] | undefined> {
  const cidrs = resolveNodePortAddresses(configured, nodeIPs);
  const byFamily = (["IPv4", "IPv6"] as const).map((f) => new NodePortAddresses(f, cidrs));
  if (byFamily.every((npa) => npa.matchAll)) return undefined;
  const local = await localAddresses();
  const out: string[] = [];
  for (const npa of byFamily) {
    for (const ip of npa.nodeIPs(local)) if (!isIPv6LinkLocal(ip) && !out.includes(ip)) out.push(ip);
  }
  return out;
}
