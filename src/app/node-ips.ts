// The node's primary IPs, needed before the proxiers are built (nodePortAddresses "primary",
// load-balancer source ranges that must admit the node itself). Upstream's order: a specific
// --bind-address, else the Node object's addresses, else loopback with a warning.

import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import type { ApiClient } from "../k8s/api-client.ts";
import { nodeIPs } from "../k8s/node-info.ts";
import type { NodeObject } from "../k8s/objects.ts";
import { parseStateDocuments } from "../k8s/state-file.ts";
import type { Logger } from "../log/logger.ts";
import type { IPFamily } from "../proxy/types.ts";

export type NodeIPs = Partial<Record<IPFamily, string>>;

function fromNode(node: NodeObject | undefined): NodeIPs {
  if (!node) return {};
  const ips = nodeIPs(node);
  return { ...(ips.ipv4 ? { IPv4: ips.ipv4 } : {}), ...(ips.ipv6 ? { IPv6: ips.ipv6 } : {}) };
}

function fromBindAddress(bindAddress: string): NodeIPs {
  const v = isIP(bindAddress);
  if (v === 4 && bindAddress !== "0.0.0.0") return { IPv4: bindAddress };
  if (v === 6 && bindAddress !== "::") return { IPv6: bindAddress };
  return {};
}

export function nodeIPsFromStateFile(path: string, nodeName: string): NodeIPs {
  const docs = parseStateDocuments(readFileSync(path, "utf8"), path);
  return fromNode(docs.nodes.find((n) => n.metadata?.name === nodeName) as NodeObject | undefined);
}

/** Asks the API server for this Node, retrying for up to `timeoutMs`. */
export async function nodeIPsFromApi(
  client: ApiClient,
  nodeName: string,
  timeoutMs: number,
): Promise<NodeIPs> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await client.request({
        method: "GET",
        path: `/api/v1/nodes/${encodeURIComponent(nodeName)}`,
      });
      if (res.status === 200) return fromNode(JSON.parse(await res.text()) as NodeObject);
    } catch {
      // API not reachable yet: retry below.
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  return {};
}

export async function detectNodeIPs(
  bindAddress: string,
  lookup: () => Promise<NodeIPs> | NodeIPs,
  log: Logger,
): Promise<NodeIPs> {
  const bound = fromBindAddress(bindAddress);
  if (bound.IPv4 || bound.IPv6) return bound;
  const found = await lookup();
  if (found.IPv4 || found.IPv6) {
    log.info("Detected node IPs", { ipv4: found.IPv4, ipv6: found.IPv6 });
    return found;
  }
  log.warn(
    "Can't determine this node's IP, assuming loopback; if this is incorrect, please set the --bind-address flag",
  );
  return { IPv4: "127.0.0.1", IPv6: "::1" };
}
