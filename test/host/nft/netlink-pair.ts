// Two nftables proxiers over the same cluster in two fresh namespaces: one whose client writes
// every transaction with nft, one whose client sends partial syncs over netlink; and how their
// tables are compared (`nft --json list table` without handles or expiry times, set elements
// sorted; the kernel's own expression dump, `nft --debug=netlink list table`, its lines sorted).
// Used by the netlink-vs-nft tests.

import { expect } from "bun:test";
import { defaultProxyConfig } from "../../../src/config/defaults.ts";
import type { Exec } from "../../../src/exec/types.ts";
import type { NetlinkSocket } from "../../../src/host/netlink-socket/socket.ts";
import { createNftClient } from "../../../src/host/nft/client.ts";
import type { NetlinkNftClient } from "../../../src/host/nft/netlink/client.ts";
import { nullLogger } from "../../../src/log/logger.ts";
import { nftablesNodePortAddresses, overNetlink } from "../../../src/modes/nftables/build.ts";
import { NftablesProxier } from "../../../src/modes/nftables/proxier.ts";
import { createMetrics } from "../../../src/proxy/metrics/metrics.ts";
import { type IPFamily, nftFamily } from "../../../src/util/net/family.ts";
import type { FakeClock } from "../../../src/util/testing/fake-clock.ts";
import { netfilterSocketIn } from "../../support/netns-enter.ts";
import { Cluster, NODE, NODE_IP, NODE_IPV6 } from "../../support/proxy-cluster.ts";
import { createTestNetns, type TestNetns } from "../iptables/netns.ts";

export interface Side {
  readonly ns: TestNetns;
  readonly cluster: Cluster;
  readonly proxier: NftablesProxier;
}

export function proxierOn(
  exec: Exec,
  family: IPFamily,
  clock: FakeClock,
  wrap?: (c: ReturnType<typeof createNftClient>) => NetlinkNftClient,
) {
  const config = defaultProxyConfig();
  config.clusterCIDRs = ["192.0.2.0/24", "2001:db8:1::/48"];
  const plain = createNftClient({ exec, family: nftFamily(family), table: "kube-proxy" });
  return new NftablesProxier({
    nft: wrap ? wrap(plain) : plain,
    family,
    config,
    metrics: createMetrics(undefined, "nftables"),
    logger: nullLogger,
    nodeName: NODE,
    nodeIPs: { IPv4: NODE_IP, IPv6: NODE_IPV6 },
    nodePortAddresses: nftablesNodePortAddresses(config.nodePortAddresses),
    localAddresses: async () => ["127.0.0.1/8", `${NODE_IP}/24`, "::1/128", `${NODE_IPV6}/64`],
    clock,
    wallClock: () => clock.now(),
  });
}

/** The table as nft reads it back, without handles, elements sorted. */
export async function normalTable(exec: Exec, family: IPFamily): Promise<unknown[]> {
  const res = await exec.run({
    cmd: "nft",
    args: ["--json", "list", "table", nftFamily(family), "kube-proxy"],
  });
  expect(res.stderr).toBe("");
  const doc = JSON.parse(res.stdout) as { nftables: Record<string, Record<string, unknown>>[] };
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v && typeof v === "object") {
      const out: Record<string, unknown> = {};
      // Handles are numbered per table; an element's expiry is the time left.
      for (const [k, x] of Object.entries(v)) if (k !== "handle" && k !== "expires") out[k] = strip(x);
      return out;
    }
    return v;
  };
  return doc.nftables
    .filter((e) => !("metainfo" in e))
    .map((e) => {
      const o = strip(e) as Record<string, Record<string, unknown>>;
      for (const kind of ["set", "map"]) {
        const elem = o[kind]?.elem;
        if (Array.isArray(elem)) o[kind]!.elem = elem.map((x) => JSON.stringify(x)).sort();
      }
      return o;
    });
}

/** The kernel's expression dump of the table, line by line, sorted (set elements come in hash order). */
export async function kernelDump(exec: Exec, family: IPFamily): Promise<string[]> {
  const res = await exec.run({
    cmd: "nft",
    args: ["--debug=netlink", "list", "table", nftFamily(family), "kube-proxy"],
  });
  return res.stdout
    .split("\n")
    .map((l) =>
      l
        .replace(/\bhandle \d+/g, "")
        .replace(/ expires \S+/g, "")
        .trimEnd(),
    )
    .filter((l) => l !== "")
    .sort();
}

export interface WriterPair {
  readonly nftSide: Side;
  readonly netlinkSide: Side;
  readonly socket: NetlinkSocket;
  readonly netlinkClient: NetlinkNftClient;
  /** Applies the change to both clusters, syncs both proxiers, and compares the two tables. */
  step(change: (cl: Cluster) => void): Promise<void>;
  close(): Promise<void>;
}

export async function createWriterPair(family: IPFamily, clock: FakeClock): Promise<WriterPair> {
  const a = await createTestNetns();
  const b = await createTestNetns();
  const socket = await netfilterSocketIn(b.name);
  let netlinkClient: NetlinkNftClient | undefined;
  const nftSide: Side = { ns: a, cluster: new Cluster(), proxier: proxierOn(a.exec, family, clock) };
  const netlinkSide: Side = {
    ns: b,
    cluster: new Cluster(),
    proxier: proxierOn(b.exec, family, clock, (plain) => {
      netlinkClient = overNetlink(plain, family, socket);
      return netlinkClient;
    }),
  };
  return {
    nftSide,
    netlinkSide,
    socket,
    netlinkClient: netlinkClient!,
    async step(change) {
      for (const side of [nftSide, netlinkSide]) {
        change(side.cluster);
        await side.proxier.sync(side.cluster.input());
      }
      expect(await normalTable(b.exec, family)).toEqual(await normalTable(a.exec, family));
      expect(await kernelDump(b.exec, family)).toEqual(await kernelDump(a.exec, family));
    },
    async close() {
      socket.close();
      await a.remove();
      await b.remove();
    },
  };
}
