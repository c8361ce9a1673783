// Drives the nftables proxier the way the sync controller does, over a client that records
// each transaction's nft input (and answers listings from what the test says the table holds).

import { defaultProxyConfig } from "../../../src/config/defaults.ts";
import type { ProxyConfig } from "../../../src/config/types.ts";
import { FakeExec, fail } from "../../../src/exec/testing/fake.ts";
import { createNftClient } from "../../../src/host/nft/client.ts";
import { FakeNft } from "../../../src/host/nft/testing/fake.ts";
import type { NftClient } from "../../../src/host/nft/types.ts";
import { type Logger, nullLogger } from "../../../src/log/logger.ts";
import { nftablesNodePortAddresses } from "../../../src/modes/nftables/build.ts";
import { NftablesProxier, type NftablesProxierDeps } from "../../../src/modes/nftables/proxier.ts";
import { createMetrics, type Metrics } from "../../../src/proxy/metrics/metrics.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { FakeClock } from "../../../src/util/testing/fake-clock.ts";
import { Cluster, NODE, NODE_IP, NODE_IPV6 } from "../../support/proxy-cluster.ts";

/** The real nft client over the stateful fake, keeping every transaction it ran. */
export class FakeNftHost {
  readonly fake = new FakeNft();
  readonly exec: FakeExec;
  /** When set, the next `nft -f` (not --check) fails with this stderr, changing nothing. */
  failNext: string | undefined;

  constructor() {
    this.exec = new FakeExec().on("nft", (req) => {
      const applies = req.args.includes("-f") && !req.args.includes("--check");
      if (applies && this.failNext !== undefined) {
        const stderr = this.failNext;
        this.failNext = undefined;
        return fail(1, stderr);
      }
      return this.fake.handle(req);
    });
  }

  client(family: "ip" | "ip6"): NftClient {
    return createNftClient({ exec: this.exec, family, table: "kube-proxy" });
  }

  /** The input of every `nft -f` that ran (failed ones included), in order. */
  get transactions(): string[] {
    return this.exec
      .callsTo("nft")
      .filter((c) => c.args.includes("-f") && !c.args.includes("--check"))
      .map((c) => c.stdin ?? "");
  }

  dump(family: "ip" | "ip6" = "ip"): string {
    return this.fake.dump(family, "kube-proxy");
  }
}

export interface NftSetup {
  readonly nft: FakeNftHost;
  readonly proxier: NftablesProxier;
  readonly cluster: Cluster;
  readonly metrics: Metrics;
  readonly clock: FakeClock;
  readonly config: ProxyConfig;
  /** Runs one sync and returns the last transaction it ran ("" when none). */
  sync(): Promise<string>;
}

export function setupNft(
  opts: {
    family?: IPFamily;
    config?: (c: ProxyConfig) => void;
    deps?: Partial<NftablesProxierDeps>;
    localAddresses?: string[];
    logger?: Logger;
    /** The kernel state of an earlier run (a restart); a fresh one by default. */
    host?: FakeNftHost;
  } = {},
): NftSetup {
  const family = opts.family ?? "IPv4";
  const config = defaultProxyConfig();
  config.clusterCIDRs = ["192.0.2.0/24", "2001:db8:1::/48"];
  opts.config?.(config);
  const nft = opts.host ?? new FakeNftHost();
  const metrics = createMetrics(undefined, "nftables");
  const clock = new FakeClock(1_000_000);
  const cluster = new Cluster();
  const addresses = opts.localAddresses ?? ["127.0.0.1/8", `${NODE_IP}/24`, "::1/128", `${NODE_IPV6}/64`];
  const proxier = new NftablesProxier({
    nft: nft.client(family === "IPv4" ? "ip" : "ip6"),
    family,
    config,
    metrics,
    logger: opts.logger ?? nullLogger,
    nodeName: NODE,
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

/** The rules of one chain in a FakeNft dump; undefined when the chain does not exist. */
export function chainIn(dump: string, chain: string): string[] | undefined {
  return blockIn(dump, "chain", chain);
}

/** The elements ("key" or "key : value") of one set or map in a FakeNft dump. */
export function elementsIn(dump: string, kind: "set" | "map", name: string): string[] | undefined {
  return blockIn(dump, kind, name);
}

/** Names of the chains in a dump that belong to services and endpoints (they contain "/"). */
export function serviceChainsIn(dump: string): string[] {
  return dump
    .split("\n")
    .filter((l) => l.startsWith("chain ") && l.split(" ")[1]!.includes("/"))
    .map((l) => l.split(" ")[1]!);
}

function blockIn(dump: string, kind: string, name: string): string[] | undefined {
  const lines = dump.split("\n");
  const start = lines.findIndex((l) => l === `${kind} ${name}` || l.startsWith(`${kind} ${name} {`));
  if (start < 0) return undefined;
  const out: string[] = [];
  for (let i = start + 1; i < lines.length && lines[i]!.startsWith("  "); i++) out.push(lines[i]!.slice(2));
  return out;
}
