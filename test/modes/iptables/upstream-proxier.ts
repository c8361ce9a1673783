// Upstream's NewFakeProxier (pkg/proxy/iptables/proxier_test.go, v1.37) for the packet-flow
// tests: node IP 192.168.0.2 with 192.168.1.2 and 192.168.99.11 also on the node (2001:db8::1
// and 2001:db8:1::2 for IPv6), pod CIDR 10.0.0.0/8 (fd00:10::/64) as the local-traffic
// detector, every local address a NodePort address unless nodePortAddresses says otherwise,
// localhost NodePorts on, both nfacct counters present. After a sync, `flows` traces packets
// through the resulting kernel state (FakeIptables' tables, with the jumps from the built-in
// chains) with upstream's tracer conventions for which addresses are local.

import { type FlowPacket, IptablesTracer } from "../../../src/host/iptables/trace.ts";
import { detectLocalByCIDR, noOpLocalDetector } from "../../../src/proxy/local-detect.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { UPSTREAM_NODE_ADDRESSES } from "../../support/upstream-test-node.ts";
import { fakeNfacct, type Setup, setup } from "./harness.ts";

/** Upstream's testNodeIPs: what its tracer treats as local (with 127.0.0.1 and ::1). */
export const TEST_NODE_IPS = ["192.168.0.2", "192.168.1.2", "192.168.99.11", "2001:db8::1", "2001:db8:1::2"];
export const TEST_NODE_IP = "192.168.0.2";
export const TEST_NODE_IP_ALT = "192.168.1.2";
export const TEST_EXTERNAL_CLIENT = "203.0.113.2";
export const TEST_EXTERNAL_CLIENT_BLOCKED = "203.0.113.130";

export interface UpstreamProxierOptions {
  family?: IPFamily;
  localhostNodePorts?: boolean;
  nodePortAddresses?: string[];
  masqueradeAll?: boolean;
  /** false: upstream's NoOpLocalDetector (no way to tell pod traffic). */
  localDetector?: boolean;
}

export function upstreamProxier(opts: UpstreamProxierOptions = {}): Setup {
  const family = opts.family ?? "IPv4";
  return setup({
    family,
    config: (c) => {
      c.clusterCIDRs = ["10.0.0.0/8", "fd00:10::/64"];
      c.iptables.localhostNodePorts = opts.localhostNodePorts ?? true;
      c.iptables.masqueradeAll = opts.masqueradeAll ?? false;
      if (opts.nodePortAddresses) c.nodePortAddresses = opts.nodePortAddresses;
    },
    deps: {
      nfacct: fakeNfacct().client,
      nodeIPs: { IPv4: TEST_NODE_IP, IPv6: "2001:db8::1" },
      localhostNodePorts: opts.localhostNodePorts ?? true,
      localDetector:
        opts.localDetector === false
          ? noOpLocalDetector
          : detectLocalByCIDR(family === "IPv4" ? "10.0.0.0/8" : "fd00:10::/64"),
    },
    localAddresses: [...UPSTREAM_NODE_ADDRESSES],
  });
}

/** One row of an upstream packetFlowTest table. */
export interface FlowRow extends FlowPacket {
  readonly name: string;
  readonly output: string;
  readonly masq?: boolean;
}

/**
 * Traces every row through the proxier's current kernel state and returns one line per row
 * whose output or masquerade differs from upstream's expectation (empty: all agree).
 */
export async function flowMismatches(s: Setup, rows: readonly FlowRow[]): Promise<string[]> {
  const tracer = new IptablesTracer(await s.ipt.saveAll(), TEST_NODE_IPS);
  const out: string[] = [];
  for (const row of rows) {
    const r = tracer.trace(row);
    const masq = row.masq ?? false;
    if (r.output !== row.output || r.masq !== masq) {
      out.push(
        `${row.name} (${row.protocol ?? "tcp"} ${row.source} -> ${row.destination}:${row.port}): ` +
          `expected ${JSON.stringify(row.output)} masq=${masq}, got ${JSON.stringify(r.output)} masq=${r.masq}` +
          `\n    matched:\n      ${r.matched.join("\n      ")}`,
      );
    }
  }
  return out;
}
