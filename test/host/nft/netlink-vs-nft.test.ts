// The netlink writer against nft, in the real kernel: two fresh namespaces get the same cluster
// through two nftables proxiers, one whose client writes everything with nft, one whose client
// sends partial syncs over netlink. After every sync the two tables must read back the same
// (`nft --json list table`, handles left out, set elements sorted; and the kernel's own
// expression dump, `nft --debug=netlink list table`, line for line). Cluster changes cover what
// partial syncs write: endpoints added and removed, Services added and deleted, NodePorts,
// external and load balancer IPs, Local policies, no endpoints (drop and reject), session
// affinity and source ranges (both left to nft), stale chains deleted a second later.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { defaultProxyConfig } from "../../../src/config/defaults.ts";
import type { Exec } from "../../../src/exec/types.ts";
import { createNftClient } from "../../../src/host/nft/client.ts";
import { NftError } from "../../../src/host/nft/errors.ts";
import { createNetlinkNftClient, type NetlinkNftClient } from "../../../src/host/nft/netlink/client.ts";
import { type NetfilterSocket, netfilterSocketOpener } from "../../../src/host/nft/netlink/socket.ts";
import { NftTransaction } from "../../../src/host/nft/transaction.ts";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { nullLogger } from "../../../src/log/logger.ts";
import { nftablesNodePortAddresses } from "../../../src/modes/nftables/build.ts";
import { NftablesProxier } from "../../../src/modes/nftables/proxier.ts";
import { containerTypes, familyWords } from "../../../src/modes/nftables/setup.ts";
import { createMetrics } from "../../../src/proxy/metrics/metrics.ts";
import { type IPFamily, nftFamily } from "../../../src/util/net/family.ts";
import { FakeClock } from "../../../src/util/testing/fake-clock.ts";
import { scaled } from "../../support/kernel-vm.ts";
import { inNetns } from "../../support/netns-enter.ts";
import {
  Cluster,
  endpointSlice,
  ep,
  NODE,
  NODE_IP,
  NODE_IPV6,
  service,
} from "../../support/proxy-cluster.ts";
import { createTestNetns, type TestNetns } from "../iptables/netns.ts";

interface Side {
  readonly ns: TestNetns;
  readonly cluster: Cluster;
  readonly proxier: NftablesProxier;
}

function proxierOn(
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
async function normalTable(exec: Exec, family: IPFamily): Promise<unknown[]> {
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
async function kernelDump(exec: Exec, family: IPFamily): Promise<string[]> {
  const res = await exec.run({
    cmd: "nft",
    args: ["--debug=netlink", "list", "table", nftFamily(family), "kube-proxy"],
  });
  return res.stdout
    .split("\n")
    .map((l) => l.replace(/\bhandle \d+/g, "").replace(/ expires \S+/g, "").trimEnd())
    .filter((l) => l !== "")
    .sort();
}

const CASES: {
  family: IPFamily;
  pod: (i: number) => string;
  vip: (i: number) => string;
  ext: (i: number) => string;
  addressType: string;
}[] = [
  {
    family: "IPv4",
    pod: (i) => `192.0.2.${i}`,
    vip: (i) => `198.51.100.${i}`,
    ext: (i) => `203.0.113.${100 + i}`,
    addressType: "IPv4",
  },
  {
    family: "IPv6",
    pod: (i) => `2001:db8:1::${i.toString(16)}`,
    vip: (i) => `2001:db8:5::${i.toString(16)}`,
    ext: (i) => `2001:db8:7::${i.toString(16)}`,
    addressType: "IPv6",
  },
];

for (const c of CASES) {
  describe(`netlink partial syncs read back as nft's (${c.family}, fresh netns)`, () => {
    const clock = new FakeClock(1_000_000);
    let nftSide: Side;
    let netlinkSide: Side;
    let socket: NetfilterSocket;
    let netlinkClient: NetlinkNftClient | undefined;

    const ip = (i: number) => ({ clusterIP: c.vip(i), clusterIPs: [c.vip(i)], ipFamilies: [c.family] });
    const slice = (name: string, eps: ReturnType<typeof ep>[]) =>
      endpointSlice("ns1", name, eps, { addressType: c.addressType });

    beforeAll(async () => {
      const opener = await netfilterSocketOpener();
      if (typeof opener === "string") throw new Error(opener);
      const a = await createTestNetns();
      const b = await createTestNetns();
      const opened = inNetns(b.name, opener);
      if (typeof opened === "string") throw new Error(opened);
      socket = opened;
      const types = containerTypes(familyWords(c.family));
      nftSide = { ns: a, cluster: new Cluster(), proxier: proxierOn(a.exec, c.family, clock) };
      netlinkSide = {
        ns: b,
        cluster: new Cluster(),
        proxier: proxierOn(b.exec, c.family, clock, (plain) => {
          netlinkClient = createNetlinkNftClient({
            nft: plain,
            family: c.family,
            socket,
            containerTypes: (n) => types.get(n),
          });
          return netlinkClient;
        }),
      };
    }, scaled(30_000));

    afterAll(async () => {
      socket?.close();
      await nftSide?.ns.remove();
      await netlinkSide?.ns.remove();
    });

    /** Applies the change to both clusters, syncs both, and compares the tables. */
    async function step(change: (cl: Cluster) => void): Promise<void> {
      for (const side of [nftSide, netlinkSide]) {
        change(side.cluster);
        await side.proxier.sync(side.cluster.input());
      }
      expect(await normalTable(netlinkSide.ns.exec, c.family)).toEqual(
        await normalTable(nftSide.ns.exec, c.family),
      );
      expect(await kernelDump(netlinkSide.ns.exec, c.family)).toEqual(
        await kernelDump(nftSide.ns.exec, c.family),
      );
    }

    const apply =
      (...objects: (ServiceObject | EndpointSliceObject)[]) =>
      (cl: Cluster) =>
        cl.apply(...objects);

    test(
      "a sequence of changes",
      async () => {
        // The first (full) sync goes to nft on both sides.
        await step(
          apply(
            service("ns1", "a", ip(1)),
            slice("a", [ep(c.pod(10)), ep(c.pod(11))]),
            service("ns1", "b", { ...ip(2), type: "NodePort", externalIPs: [c.ext(1)] }),
            slice("b", [ep(c.pod(20), { node: NODE })]),
            service("ns1", "d", ip(4)),
          ),
        );
        const afterFull = netlinkClient!.sent.netlink;
        // Endpoints added.
        await step(apply(slice("a", [ep(c.pod(10)), ep(c.pod(11)), ep(c.pod(12))])));
        // A LoadBalancer with a Local external policy: a local endpoint, then none here.
        await step(
          apply(
            service(
              "ns1",
              "c",
              { ...ip(3), type: "LoadBalancer", externalTrafficPolicy: "Local" },
              { loadBalancer: { ingress: [{ ip: c.ext(3) }] } },
            ),
            slice("c", [ep(c.pod(30), { node: NODE }), ep(c.pod(31))]),
          ),
        );
        await step(apply(slice("c", [ep(c.pod(31))])));
        // No endpoints at all: reject; an internal Local policy without local endpoints: drop.
        await step(apply(slice("b", [])));
        await step(
          apply(
            service("ns1", "d", { ...ip(4), internalTrafficPolicy: "Local" }),
            slice("d", [ep(c.pod(40))]),
          ),
        );
        // A Service deleted: its chains are flushed now and deleted a second later.
        await step((cl) => cl.remove(service("ns1", "a", ip(1)), slice("a", [])));
        clock.advance(2000);
        await step(() => {});
        // Session affinity: address sets made over netlink too; source ranges (an anonymous
        // set) left to nft.
        const before = { ...netlinkClient!.sent };
        await step(
          apply(
            service("ns1", "e", { ...ip(5), sessionAffinity: "ClientIP" }),
            slice("e", [ep(c.pod(50)), ep(c.pod(51))]),
          ),
        );
        expect(netlinkClient!.sent).toEqual({ netlink: before.netlink + 1, nft: before.nft });
        // A client recorded in each affinity set reads back the same: the key's byte order was
        // written as nft writes it.
        for (const side of [nftSide, netlinkSide]) {
          const sets = await side.ns.exec.run({
            cmd: "nft",
            args: ["--json", "list", "sets", nftFamily(c.family)],
          });
          const names = (JSON.parse(sets.stdout) as { nftables: { set?: { name: string } }[] }).nftables
            .map((e) => e.set?.name)
            .filter((n): n is string => n?.startsWith("affinity-") ?? false);
          expect(names.length).toBe(2);
          for (const name of names) {
            const added = await side.ns.exec.run({
              cmd: "nft",
              args: ["add", "element", nftFamily(c.family), "kube-proxy", name, `{ ${c.pod(99)} }`],
            });
            expect(added.stderr).toBe("");
          }
        }
        await step(() => {});
        await step(
          apply(
            service(
              "ns1",
              "f",
              {
                ...ip(6),
                type: "LoadBalancer",
                loadBalancerSourceRanges: [c.family === "IPv4" ? "192.0.2.0/26" : "2001:db8:1::/64"],
              },
              { loadBalancer: { ingress: [{ ip: c.ext(6) }] } },
            ),
            slice("f", [ep(c.pod(60))]),
          ),
        );
        expect(netlinkClient!.sent).toEqual({ netlink: before.netlink + 1, nft: before.nft + 1 });
        // Back to a plain endpoint change after them.
        await step(apply(slice("e", [ep(c.pod(50))])));
        await step(apply(slice("c", [ep(c.pod(30), { node: NODE }), ep(c.pod(32))])));
        // Netlink carried the plain partial syncs (at least the first six and the stale chains).
        expect(netlinkClient!.sent.netlink - afterFull).toBeGreaterThanOrEqual(7);
        // Sent by the worker thread: this one stays free while the kernel commits.
        expect(socket.sentFrom).toBe("worker");
      },
      scaled(120_000),
    );
  });
}

describe("a batch the kernel refuses (fresh netns)", () => {
  let ns: TestNetns;
  let socket: NetfilterSocket;
  let client: NetlinkNftClient;

  beforeAll(async () => {
    const opener = await netfilterSocketOpener();
    if (typeof opener === "string") throw new Error(opener);
    ns = await createTestNetns();
    const opened = inNetns(ns.name, opener);
    if (typeof opened === "string") throw new Error(opened);
    socket = opened;
    const plain = createNftClient({ exec: ns.exec, family: "ip", table: "kube-proxy" });
    const types = containerTypes(familyWords("IPv4"));
    client = createNetlinkNftClient({
      nft: plain,
      family: "IPv4",
      socket,
      containerTypes: (n) => types.get(n),
    });
    const res = await ns.exec.run({
      cmd: "nft",
      args: ["-f", "-"],
      stdin: "add table ip kube-proxy\nadd chain ip kube-proxy kept\nadd rule ip kube-proxy kept drop\n",
    });
    expect(res.stderr).toBe("");
  }, scaled(30_000));

  afterAll(async () => {
    socket?.close();
    await ns?.remove();
  });

  const tx = () => new NftTransaction("ip", "kube-proxy", { keepOperations: true });

  test("fails as an NftError naming the operation, and nothing of the batch is applied", async () => {
    const before = client.sent.netlink;
    const bad = tx()
      .add({ kind: "chain", name: "fresh" })
      .flush({ kind: "chain", name: "kept" })
      .add({ kind: "rule", chain: "absent", rule: "goto fresh" });
    const err = await client.run(bad).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NftError);
    const e = err as NftError;
    expect(e.isNotFound()).toBe(true);
    expect(e.line).toBe(3);
    expect(e.lineText).toBe("add rule ip kube-proxy absent goto fresh");
    // It went to the kernel, which refused it whole.
    expect(client.sent.netlink).toBe(before + 1);
    const listed = await ns.exec.run({ cmd: "nft", args: ["list", "table", "ip", "kube-proxy"] });
    expect(listed.stdout).not.toContain("fresh");
    expect(listed.stdout).toContain("drop");
  });

  test("then a good batch applies", async () => {
    await client.run(
      tx()
        .add({ kind: "chain", name: "fresh" })
        .add({ kind: "rule", chain: "fresh", rule: "goto kept", comment: 'say "hi"' }),
    );
    const listed = await ns.exec.run({ cmd: "nft", args: ["list", "chain", "ip", "kube-proxy", "fresh"] });
    expect(listed.stdout).toContain(`goto kept comment "say 'hi'"`);
  });

  test("a transaction with anything it does not write goes to nft whole", async () => {
    const before = { ...client.sent };
    await client.run(
      tx().add({ kind: "chain", name: "other" }).add({ kind: "rule", chain: "other", rule: "reject" }),
    );
    expect(client.sent).toEqual({ netlink: before.netlink, nft: before.nft + 1 });
  });
});
