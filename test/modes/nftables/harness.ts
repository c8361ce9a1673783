// Drives the nftables proxier the way the sync controller does, over a client that records
// each transaction's nft input (and answers listings from what the test says the table holds).

import { defaultProxyConfig } from "../../../src/config/defaults.ts";
import type { ProxyConfig } from "../../../src/config/types.ts";
import type { NftClient, NftListKind, NftTransactionLike } from "../../../src/host/nft/types.ts";
import { type Logger, nullLogger } from "../../../src/log/logger.ts";
import { nftablesNodePortAddresses } from "../../../src/modes/nftables/build.ts";
import { NftablesProxier, type NftablesProxierDeps } from "../../../src/modes/nftables/proxier.ts";
import { createMetrics, type Metrics } from "../../../src/proxy/metrics/metrics.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { FakeClock } from "../../../src/util/testing/fake-clock.ts";
import { Cluster, NODE_IP, NODE_IPV6 } from "../../support/proxy-cluster.ts";

export class RecordingNft implements NftClient {
  readonly table = "kube-proxy";
  readonly transactions: string[] = [];
  /** What `list` answers. */
  listed: Record<NftListKind, string[]> = { chains: [], sets: [], maps: [] };
  /** When set, the next run fails with it (once). */
  failNext: Error | undefined;

  constructor(readonly family: "ip" | "ip6") {}

  async run(tx: NftTransactionLike): Promise<void> {
    if (tx.size === 0) return;
    const text = tx.render();
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = undefined;
      throw err;
    }
    this.transactions.push(text);
  }
  async check(): Promise<void> {}
  async list(kind: NftListKind): Promise<string[]> {
    return [...this.listed[kind]];
  }
  async version(): Promise<string> {
    return "1.0.6";
  }
  async listTables() {
    return [];
  }
  async deleteTable() {
    return false;
  }
}

export interface NftSetup {
  readonly nft: RecordingNft;
  readonly proxier: NftablesProxier;
  readonly cluster: Cluster;
  readonly metrics: Metrics;
  readonly clock: FakeClock;
  readonly config: ProxyConfig;
  /** Runs one sync and returns the main transaction it ran. */
  sync(): Promise<string>;
}

export function setupNft(
  opts: {
    family?: IPFamily;
    config?: (c: ProxyConfig) => void;
    deps?: Partial<NftablesProxierDeps>;
    localAddresses?: string[];
    logger?: Logger;
  } = {},
): NftSetup {
  const family = opts.family ?? "IPv4";
  const config = defaultProxyConfig();
  config.clusterCIDRs = ["192.0.2.0/24", "2001:db8:1::/48"];
  opts.config?.(config);
  const nft = new RecordingNft(family === "IPv4" ? "ip" : "ip6");
  const metrics = createMetrics(undefined, "nftables");
  const clock = new FakeClock(1_000_000);
  const cluster = new Cluster();
  const addresses = opts.localAddresses ?? ["127.0.0.1/8", `${NODE_IP}/24`, "::1/128", `${NODE_IPV6}/64`];
  const proxier = new NftablesProxier({
    nft,
    family,
    config,
    metrics,
    logger: opts.logger ?? nullLogger,
    nodeIPs: { IPv4: NODE_IP, IPv6: NODE_IPV6 },
    nodePortAddresses: nftablesNodePortAddresses(config.nodePortAddresses),
    localAddresses: async () => addresses,
    clock,
    wallClock: () => clock.now(),
    ...opts.deps,
  });
  const sync = async () => {
    const before = nft.transactions.length;
    await proxier.sync(cluster.input());
    return nft.transactions.slice(before).at(-1) ?? "";
  };
  return { nft, proxier, cluster, metrics, clock, config, sync };
}

/** The lines of a transaction that are not the fixed setup of a full sync (service content). */
export function serviceLines(tx: string): string[] {
  const lines = tx.split("\n").filter((l) => l !== "");
  return lines.filter((l) => {
    const m = /^(?:add|flush|delete) (?:chain|rule|set|element) ip6? kube-proxy (\S+)/.exec(l);
    if (!m) return false;
    const name = m[1]!;
    return (
      name.includes("/") ||
      (/^(cluster-ips|service-ips|service-nodeports|no-endpoint-services|no-endpoint-nodeports|firewall-ips)$/.test(
        name,
      ) &&
        l.includes(" element "))
    );
  });
}
