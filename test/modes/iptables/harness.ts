// Drives the iptables proxier the way the sync controller does: Service and EndpointSlice
// objects go through the real change trackers and maps, and each sync gets their update
// results. Addresses follow the documentation ranges: 198.51.100.0/24 cluster IPs,
// 192.0.2.0/24 pods (192.0.2.0/25 is this node's pod CIDR), 203.0.113.0/24 node, external and
// load balancer IPs, 2001:db8::/32 for IPv6.

import { defaultProxyConfig } from "../../../src/config/defaults.ts";
import type { ProxyConfig } from "../../../src/config/types.ts";
import { createNfacctClient } from "../../../src/host/nfacct/client.ts";
import { FakeNfacct } from "../../../src/host/nfacct/testing/fake.ts";
import type { NfacctClient } from "../../../src/host/nfacct/types.ts";
import { type Logger, nullLogger } from "../../../src/log/logger.ts";
import { IptablesProxier, type IptablesProxierDeps } from "../../../src/modes/iptables/proxier.ts";
import { createMetrics, type Metrics } from "../../../src/proxy/metrics/metrics.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { FakeClock } from "../../../src/util/testing/fake-clock.ts";
import { Cluster, NODE, NODE_IP, NODE_IPV6 } from "../../support/proxy-cluster.ts";
import { RecordingIptables } from "./recording-iptables.ts";

/** The real nfacct client over a stateful fake (counters that exist once ensured). */
export function fakeNfacct(): { fake: FakeNfacct; client: NfacctClient } {
  const fake = new FakeNfacct();
  return { fake, client: createNfacctClient({ exec: fake.install() }) };
}

export {
  Cluster,
  type EpOpts,
  endpointSlice,
  ep,
  NODE,
  NODE_IP,
  NODE_IPV6,
  service,
} from "../../support/proxy-cluster.ts";

export interface Setup {
  readonly ipt: RecordingIptables;
  readonly proxier: IptablesProxier;
  readonly cluster: Cluster;
  readonly metrics: Metrics;
  readonly clock: FakeClock;
  readonly config: ProxyConfig;
  /** Runs one sync and returns the restore input it wrote. */
  sync(): Promise<string>;
}

export interface SetupOptions {
  family?: IPFamily;
  config?: (c: ProxyConfig) => void;
  deps?: Partial<IptablesProxierDeps>;
  localAddresses?: string[];
  logger?: Logger;
}

/** Upstream's test conventions translated: ClusterCIDR 192.0.2.0/24 (IPv6 2001:db8:1::/48). */
export function setup(opts: SetupOptions = {}): Setup {
  const family = opts.family ?? "IPv4";
  const config = defaultProxyConfig();
  config.clusterCIDRs = ["192.0.2.0/24", "2001:db8:1::/48"];
  opts.config?.(config);
  const ipt = new RecordingIptables(family);
  const metrics = createMetrics();
  const clock = new FakeClock(1_000_000);
  const cluster = new Cluster();
  const addresses = opts.localAddresses ?? ["127.0.0.1/8", `${NODE_IP}/24`, "::1/128", `${NODE_IPV6}/64`];
  const proxier = new IptablesProxier({
    iptables: ipt,
    family,
    config,
    metrics,
    logger: opts.logger ?? nullLogger,
    nodeName: NODE,
    nodeIPs: { IPv4: NODE_IP, IPv6: NODE_IPV6 },
    localAddresses: async () => addresses,
    clock,
    wallClock: () => clock.now(),
    ...opts.deps,
  });
  const sync = async () => {
    await proxier.sync(cluster.input());
    return ipt.restores.at(-1) ?? "";
  };
  return { ipt, proxier, cluster, metrics, clock, config, sync };
}

/** The lines of a restore payload (or a save) that belong to one chain of one table, in order. */
export function chainRules(payload: string, table: string, chain: string): string[] {
  const out: string[] = [];
  let current = "";
  for (const line of payload.split("\n")) {
    if (line.startsWith("*")) current = line.slice(1);
    else if (current === table && line.startsWith(`-A ${chain} `)) out.push(line);
  }
  return out;
}

/** Every line of one table's section of a restore payload. */
export function tableSection(payload: string, table: string): string[] {
  const lines = payload.split("\n");
  const start = lines.indexOf(`*${table}`);
  if (start < 0) return [];
  const end = lines.indexOf("COMMIT", start);
  return lines.slice(start, end + 1);
}

/** A per-table gauge's value (the rules metrics), -1 when the table has none. */
export async function tableGauge(
  metric: { get(): Promise<{ values: { value: number; labels: object }[] }> },
  table: string,
): Promise<number> {
  const values = (await metric.get()).values;
  return values.find((v) => (v.labels as Record<string, unknown>).table === table)?.value ?? -1;
}
