// The node's primary IPs, needed before the proxiers are built (nodePortAddresses "primary",
// load-balancer source ranges that must admit the node itself). Upstream's rule (v1.31
// detectNodeIPs): both families start as loopback, the Node object's addresses fill them in (its
// first address decides the primary family), then a specific --bind-address replaces the IP of
// its own family only and makes that family primary.

import { readFileSync } from "node:fs";
import { nodePath } from "../k8s/api-access.ts";
import type { ApiClient } from "../k8s/api-client.ts";
import { nodeIPs } from "../k8s/node-info.ts";
import { parseStateDocuments } from "../k8s/state-file.ts";
import type { Logger } from "../log/logger.ts";
import { platformIPFamily } from "../util/net/address.ts";
import type { IPFamily } from "../util/net/family.ts";

/** What startup settles on: an IP for each family (loopback when unknown) and the primary family. */
export interface DetectedNodeIPs {
  readonly primaryFamily: IPFamily;
  readonly ips: Readonly<Record<IPFamily, string>>;
}

const LOOPBACK: Readonly<Record<IPFamily, string>> = { IPv4: "127.0.0.1", IPv6: "::1" };

function isLoopbackIP(ip: string): boolean {
  return platformIPFamily(ip) === "IPv4" ? ip.startsWith("127.") : ip === "::1";
}

/**
 * The Node's IPs, primary first, at most one per family (upstream's raw node IPs). Read quietly
 * and defensively: the sync controller reports the Node's bad fields once it is delivered.
 */
function fromNode(node: unknown): string[] {
  return [...nodeIPs(node).ordered];
}

export function nodeIPsFromStateFile(path: string, nodeName: string): string[] {
  const docs = parseStateDocuments(readFileSync(path, "utf8"), path);
  return fromNode(docs.nodes.find((n) => n.metadata?.name === nodeName));
}

/** Asks the API server for this Node, retrying for up to `timeoutMs`. */
export async function nodeIPsFromApi(
  client: ApiClient,
  nodeName: string,
  timeoutMs: number,
): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await client.request({
        method: "GET",
        path: nodePath(nodeName),
      });
      if (res.status === 200) return fromNode(JSON.parse(await res.text()));
    } catch {
      // API not reachable yet: retry below.
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  return [];
}

/** Upstream's precedence, applied to the raw node IPs (primary first) and --bind-address. */
export function resolveNodeIPs(rawNodeIPs: readonly string[], bindAddress: string): DetectedNodeIPs {
  const ips: Record<IPFamily, string> = { ...LOOPBACK };
  let primaryFamily: IPFamily = "IPv4";
  for (const [i, ip] of rawNodeIPs.slice(0, 2).entries()) {
    const family = platformIPFamily(ip);
    if (!family) continue;
    if (i === 0) primaryFamily = family;
    ips[family] = ip;
  }
  const bindFamily = platformIPFamily(bindAddress);
  if (bindFamily && bindAddress !== "0.0.0.0" && bindAddress !== "::") {
    primaryFamily = bindFamily;
    ips[bindFamily] = bindAddress;
  }
  return { primaryFamily, ips };
}

export async function detectNodeIPs(
  bindAddress: string,
  lookup: () => Promise<readonly string[]> | readonly string[],
  log: Logger,
): Promise<DetectedNodeIPs> {
  const raw = await lookup();
  if (raw.length > 0) log.info("Successfully retrieved NodeIPs", { NodeIPs: raw.join(",") });
  const detected = resolveNodeIPs(raw, bindAddress);
  if (isLoopbackIP(detected.ips[detected.primaryFamily])) {
    log.warn(
      "Can't determine this node's IP, assuming loopback; if this is incorrect, please set the --bind-address flag",
    );
  }
  log.info("Node IPs", {
    primaryFamily: detected.primaryFamily,
    ipv4: detected.ips.IPv4,
    ipv6: detected.ips.IPv6,
  });
  return detected;
}
