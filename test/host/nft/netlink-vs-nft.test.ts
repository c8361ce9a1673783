// The netlink writer against nft, in the real kernel: two fresh namespaces get the same cluster
// through two nftables proxiers, one whose client writes everything with nft, one whose client
// sends partial syncs over netlink (netlink-pair.ts). After every sync the two tables must read
// back the same. Cluster changes cover what
// partial syncs write: endpoints added and removed, Services added and deleted, NodePorts,
// external and load balancer IPs, Local policies, no endpoints (drop and reject), session
// affinity (its sets made over netlink), source ranges (left to nft), stale chains deleted a second later.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { NetlinkSocket } from "../../../src/host/netlink-socket/socket.ts";
import { createNftClient } from "../../../src/host/nft/client.ts";
import { NftError } from "../../../src/host/nft/errors.ts";
import type { NetlinkNftClient } from "../../../src/host/nft/netlink/client.ts";
import { NftTransaction } from "../../../src/host/nft/transaction.ts";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { overNetlink } from "../../../src/modes/nftables/build.ts";
import { type IPFamily, nftFamily } from "../../../src/util/net/family.ts";
import { FakeClock } from "../../../src/util/testing/fake-clock.ts";
import { scaled } from "../../support/kernel-vm.ts";
import { netfilterSocketIn } from "../../support/netns-enter.ts";
import { type Cluster, endpointSlice, ep, NODE, service } from "../../support/proxy-cluster.ts";
import { createTestNetns, type TestNetns } from "../iptables/netns.ts";
import { createWriterPair, type WriterPair } from "./netlink-pair.ts";

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
    let pair: WriterPair;
    const step = (change: (cl: Cluster) => void) => pair.step(change);

    const ip = (i: number) => ({ clusterIP: c.vip(i), clusterIPs: [c.vip(i)], ipFamilies: [c.family] });
    const slice = (name: string, eps: ReturnType<typeof ep>[]) =>
      endpointSlice("ns1", name, eps, { addressType: c.addressType });

    beforeAll(async () => {
      pair = await createWriterPair(c.family, clock);
    }, scaled(30_000));

    afterAll(async () => {
      await pair?.close();
    });

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
        const afterFull = pair.netlinkClient.sent.netlink;
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
        const before = { ...pair.netlinkClient.sent };
        await step(
          apply(
            service("ns1", "e", { ...ip(5), sessionAffinity: "ClientIP" }),
            slice("e", [ep(c.pod(50)), ep(c.pod(51))]),
          ),
        );
        expect(pair.netlinkClient.sent).toEqual({ netlink: before.netlink + 1, nft: before.nft });
        // A client recorded in each affinity set reads back the same: the key's byte order was
        // written as nft writes it.
        for (const side of [pair.nftSide, pair.netlinkSide]) {
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
        expect(pair.netlinkClient.sent).toEqual({ netlink: before.netlink + 1, nft: before.nft + 1 });
        // Back to a plain endpoint change after them.
        await step(apply(slice("e", [ep(c.pod(50))])));
        await step(apply(slice("c", [ep(c.pod(30), { node: NODE }), ep(c.pod(32))])));
        // Netlink carried the plain partial syncs (at least the first six and the stale chains).
        expect(pair.netlinkClient.sent.netlink - afterFull).toBeGreaterThanOrEqual(7);
        // Sent by the worker thread: this one stays free while the kernel commits.
        expect(pair.socket.sentFrom).toBe("worker");
      },
      scaled(120_000),
    );
  });
}

describe("a batch the kernel refuses (fresh netns)", () => {
  let ns: TestNetns;
  let socket: NetlinkSocket;
  let client: NetlinkNftClient;

  beforeAll(async () => {
    ns = await createTestNetns();
    socket = await netfilterSocketIn(ns.name);
    client = overNetlink(
      createNftClient({ exec: ns.exec, family: "ip", table: "kube-proxy" }),
      "IPv4",
      socket,
    );
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
