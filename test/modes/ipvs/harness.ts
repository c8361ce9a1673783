// Drives the ipvs proxier through the real host clients over one FakeExec, with the stateful
// fakes behind them (IPVS table, ipsets, links and addresses, iptables tables), so tests assert
// on the resulting kernel state. Cluster objects and addresses follow the iptables harness:
// 198.51.100.0/24 cluster IPs, 192.0.2.0/24 pods (192.0.2.0/25 on this node), 203.0.113.0/24
// node, external and load balancer IPs, 2001:db8::/32 for IPv6.

import { defaultProxyConfig } from "../../../src/config/defaults.ts";
import type { ProxyConfig } from "../../../src/config/types.ts";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { createIpsetClient } from "../../../src/host/ipset/client.ts";
import { FakeIpset } from "../../../src/host/ipset/testing/fake.ts";
import { createIptablesClient } from "../../../src/host/iptables/client.ts";
import { FakeIptables } from "../../../src/host/iptables/testing/fake.ts";
import { createIpvsClient } from "../../../src/host/ipvs/client.ts";
import { FakeIpvs } from "../../../src/host/ipvs/testing/fake.ts";
import { createNetlinkClient } from "../../../src/host/netlink/client.ts";
import { FakeNetlink } from "../../../src/host/netlink/testing/fake.ts";
import { type Logger, nullLogger } from "../../../src/log/logger.ts";
import { IpvsProxier, type IpvsProxierDeps } from "../../../src/modes/ipvs/proxier.ts";
import { createMetrics, type Metrics } from "../../../src/proxy/metrics/metrics.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { FakeClock } from "../../../src/util/testing/fake-clock.ts";
import { Cluster, NODE, NODE_IP, NODE_IPV6 } from "../iptables/harness.ts";

export { Cluster, endpointSlice, ep, NODE, NODE_IP, NODE_IPV6, service } from "../iptables/harness.ts";

/** A second node address (NodePorts listen on every node address). */
export const NODE_IP_2 = "203.0.113.20";
export const NODE_IPV6_2 = "2001:db8:ffff::20";

export interface Host {
  readonly exec: FakeExec;
  readonly ipvs: FakeIpvs;
  readonly ipset: FakeIpset;
  readonly net: FakeNetlink;
  readonly ipt: Record<IPFamily, FakeIptables>;
}

/**
 * A node with eth0 and eth1 carrying both families, and nothing of kube-proxy's yet; or, given
 * `addresses` (with prefix lengths), one eth0 carrying exactly those.
 */
export function fakeHost(addresses?: string[]): Host {
  const exec = new FakeExec();
  const ipvs = new FakeIpvs();
  const ipset = new FakeIpset();
  const net = new FakeNetlink();
  const ipt = { IPv4: new FakeIptables(), IPv6: new FakeIptables() };
  ipvs.install(exec);
  ipset.install(exec);
  net.install(exec);
  ipt.IPv4.install(exec, "IPv4");
  ipt.IPv6.install(exec, "IPv6");
  if (addresses) {
    net.addDevice("eth0", "ether", { addresses });
    return { exec, ipvs, ipset, net, ipt };
  }
  net.addDevice("eth0", "ether", { addresses: [`${NODE_IP}/24`, `${NODE_IPV6}/64`] });
  net.addDevice("eth1", "ether", { addresses: [`${NODE_IP_2}/24`, `${NODE_IPV6_2}/64`] });
  return { exec, ipvs, ipset, net, ipt };
}

export interface Setup {
  readonly host: Host;
  readonly proxier: IpvsProxier;
  readonly cluster: Cluster;
  readonly metrics: Metrics;
  readonly clock: FakeClock;
  readonly config: ProxyConfig;
  sync(): Promise<void>;
}

export interface SetupOptions {
  family?: IPFamily;
  config?: (c: ProxyConfig) => void;
  deps?: Partial<IpvsProxierDeps>;
  host?: Host;
  cluster?: Cluster;
  logger?: Logger;
}

export function setup(opts: SetupOptions = {}): Setup {
  const family = opts.family ?? "IPv4";
  const config = defaultProxyConfig();
  config.mode = "ipvs";
  config.clusterCIDRs = ["192.0.2.0/24", "2001:db8:1::/48"];
  opts.config?.(config);
  const host = opts.host ?? fakeHost();
  const metrics = createMetrics();
  const clock = new FakeClock(1_000_000);
  const cluster = opts.cluster ?? new Cluster();
  const logger = opts.logger ?? nullLogger;
  const { exec } = host;
  const proxier = new IpvsProxier({
    ipvs: createIpvsClient({ exec, logger }),
    ipset: createIpsetClient({ exec, logger }),
    netlink: createNetlinkClient({ exec, logger }),
    iptables: createIptablesClient({ exec, family, backend: "nft", logger }),
    config,
    metrics,
    logger,
    family,
    nodeName: NODE,
    nodeIPs: { IPv4: NODE_IP, IPv6: NODE_IPV6 },
    clock,
    wallClock: () => clock.now(),
    ...opts.deps,
  });
  const sync = () => proxier.sync(cluster.input());
  return { host, proxier, cluster, metrics, clock, config, sync };
}

/** "-> addr:port w" lines of one virtual server in the fake kernel, or undefined if absent. */
export function realsOf(host: Host, protocol: string, address: string, port: number): string[] | undefined {
  const svc = host.ipvs
    .services()
    .find((s) => s.server.protocol === protocol && s.server.address === address && s.server.port === port);
  return svc?.reals.map(
    (r) => `${r.address.includes(":") ? `[${r.address}]` : r.address}:${r.port} w${r.weight}`,
  );
}

/** "PROTO addr:port" of every virtual server in the fake kernel. */
export function virtualServerKeys(host: Host): string[] {
  return host.ipvs.services().map((s) => {
    const a = s.server.address.includes(":") ? `[${s.server.address}]` : s.server.address;
    return `${s.server.protocol} ${a}:${s.server.port}`;
  });
}

/** Addresses (without prefix) bound on kube-ipvs0. */
export function boundAddresses(host: Host): string[] {
  return host.net.addresses("kube-ipvs0").map((a) => a.slice(0, a.indexOf("/")));
}
