import { describe, expect, test } from "bun:test";
import { createIpsetClient } from "../../../src/host/ipset/client.ts";
import { createIpvsClient } from "../../../src/host/ipvs/client.ts";
import { createNetlinkClient } from "../../../src/host/netlink/client.ts";
import { SharedKernelReads } from "../../../src/modes/ipvs/shared-reads.ts";
import { MultiFamilyProxier } from "../../../src/proxy/multi-family.ts";
import {
  boundAddresses,
  endpointSlice,
  ep,
  fakeHost,
  type Host,
  realsOf,
  service,
  setup,
  virtualServerKeys,
} from "./harness.ts";

function dualStack(host: Host) {
  const { exec } = host;
  const shared = new SharedKernelReads(
    {
      ipvs: createIpvsClient({ exec }),
      ipset: createIpsetClient({ exec }),
      netlink: createNetlinkClient({ exec }),
    },
    ["IPv4", "IPv6"],
  );
  const v4 = setup({ host, deps: shared.forFamily("IPv4") });
  const v6 = setup({ host, family: "IPv6", cluster: v4.cluster, deps: shared.forFamily("IPv6") });
  const multi = new MultiFamilyProxier([v4.proxier, v6.proxier]);
  const round = async () => {
    shared.beginRound();
    try {
      await multi.sync(v4.cluster.input());
    } finally {
      shared.endRound();
    }
  };
  return { shared, v4, v6, round };
}

const reads = (host: Host) => ({
  ipvs: host.exec.callsTo("ipvsadm").filter((c) => c.args[0] === "-L" && c.args.length === 3).length,
  ipset: host.exec.callsTo("ipset").filter((c) => c.args[0] === "save").length,
  addresses: host.exec.callsTo("ip").filter((c) => c.args.join(" ") === "-o addr show").length,
});

function dualService(cluster: ReturnType<typeof setup>["cluster"], n: number) {
  cluster.apply(
    service("ns1", `web${n}`, {
      clusterIP: `198.51.100.${n}`,
      clusterIPs: [`198.51.100.${n}`, `2001:db8:2::${n}`],
      ipFamilies: ["IPv4", "IPv6"],
      ipFamilyPolicy: "PreferDualStack",
    }),
    endpointSlice("ns1", `web${n}`, [ep(`192.0.2.${n}`)]),
    endpointSlice("ns1", `web${n}`, [ep(`2001:db8:1::${n}`)], { addressType: "IPv6", suffix: "v6" }),
  );
}

describe("SharedKernelReads", () => {
  test("a full dual-stack round reads each table once and programs what two separate reads would", async () => {
    const host = fakeHost();
    const { v4, round } = dualStack(host);
    dualService(v4.cluster, 41);
    await round();
    expect(reads(host)).toEqual({ ipvs: 1, ipset: 1, addresses: 1 });
    expect(virtualServerKeys(host)).toEqual(["TCP 198.51.100.41:80", "TCP [2001:db8:2::41]:80"]);
    expect(realsOf(host, "TCP", "2001:db8:2::41", 80)).toEqual(["[2001:db8:1::41]:8080 w1"]);
    expect(boundAddresses(host).sort()).toEqual(["198.51.100.41", "2001:db8:2::41"]);
    expect(host.ipset.entries("KUBE-6-CLUSTER-IP")).toEqual(["2001:db8:2::41,tcp:80"]);
    expect(host.ipset.entries("KUBE-CLUSTER-IP")).toEqual(["198.51.100.41,tcp:80"]);

    // The same state from separate proxiers, each reading for itself.
    const alone = fakeHost();
    const a4 = setup({ host: alone });
    const a6 = setup({ host: alone, family: "IPv6", cluster: a4.cluster });
    dualService(a4.cluster, 41);
    await new MultiFamilyProxier([a4.proxier, a6.proxier]).sync(a4.cluster.input());
    expect(reads(alone)).toEqual({ ipvs: 2, ipset: 2, addresses: 2 });
    expect(host.ipvs.services()).toEqual(alone.ipvs.services());
    expect(boundAddresses(host).sort()).toEqual(boundAddresses(alone).sort());
    for (const set of ["KUBE-CLUSTER-IP", "KUBE-6-CLUSTER-IP", "KUBE-LOOP-BACK", "KUBE-6-LOOP-BACK"]) {
      expect(host.ipset.entries(set)).toEqual(alone.ipset.entries(set));
    }
  });

  test("the other family's part is not kept past its round, nor made outside one", async () => {
    const host = fakeHost();
    const { shared, v4, round } = dualStack(host);
    dualService(v4.cluster, 41);
    await round();
    const before = reads(host);
    // Outside a round: every read goes to the kernel.
    const v4ipvs = shared.forFamily("IPv4").ipvs;
    const v6ipvs = shared.forFamily("IPv6").ipvs;
    expect((await v4ipvs.read()).map((s) => s.server.address)).toEqual(["198.51.100.41"]);
    expect((await v6ipvs.read()).map((s) => s.server.address)).toEqual(["2001:db8:2::41"]);
    expect(reads(host).ipvs).toBe(before.ipvs + 2);
    // In a round, the IPv6 part of the IPv4 read is taken once; what is left at the end is dropped.
    shared.beginRound();
    await v4ipvs.read();
    expect((await v6ipvs.read()).map((s) => s.server.address)).toEqual(["2001:db8:2::41"]);
    await v6ipvs.read();
    await v4ipvs.read();
    shared.endRound();
    await v6ipvs.read();
    expect(reads(host).ipvs).toBe(before.ipvs + 5);
  });

  test("a change in one family after the first round is programmed in both rounds' reads", async () => {
    const host = fakeHost();
    const { v4, round } = dualStack(host);
    dualService(v4.cluster, 41);
    await round();
    dualService(v4.cluster, 42);
    await round();
    v4.cluster.apply(
      endpointSlice("ns1", "web42", [ep("2001:db8:1::99")], { addressType: "IPv6", suffix: "v6" }),
    );
    await round();
    expect(virtualServerKeys(host).sort()).toEqual([
      "TCP 198.51.100.41:80",
      "TCP 198.51.100.42:80",
      "TCP [2001:db8:2::41]:80",
      "TCP [2001:db8:2::42]:80",
    ]);
    expect(realsOf(host, "TCP", "2001:db8:2::42", 80)).toEqual(["[2001:db8:1::99]:8080 w1"]);
    expect(realsOf(host, "TCP", "198.51.100.42", 80)).toEqual(["192.0.2.42:8080 w1"]);
  });
});
