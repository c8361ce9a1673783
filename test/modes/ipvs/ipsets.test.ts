import { describe, expect, test } from "bun:test";
import { validateEntry } from "../../../src/host/ipset/entries.ts";
import { ipPortNetEntry } from "../../../src/modes/ipvs/entries.ts";
import { familySetName, SET_DEFINITIONS, setCatalog } from "../../../src/modes/ipvs/ipsets.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { type Cluster, endpointSlice, ep, fakeHost, service, setup } from "./harness.ts";

describe("set catalogue", () => {
  test("names, types and comments are upstream's (v1.31), in its order", () => {
    expect(SET_DEFINITIONS.map((d) => `${d.name} ${d.type}`)).toEqual([
      "KUBE-LOOP-BACK hash:ip,port,ip",
      "KUBE-CLUSTER-IP hash:ip,port",
      "KUBE-EXTERNAL-IP hash:ip,port",
      "KUBE-EXTERNAL-IP-LOCAL hash:ip,port",
      "KUBE-LOAD-BALANCER hash:ip,port",
      "KUBE-LOAD-BALANCER-FW hash:ip,port",
      "KUBE-LOAD-BALANCER-LOCAL hash:ip,port",
      "KUBE-LOAD-BALANCER-SOURCE-IP hash:ip,port,ip",
      "KUBE-LOAD-BALANCER-SOURCE-CIDR hash:ip,port,net",
      "KUBE-NODE-PORT-TCP bitmap:port",
      "KUBE-NODE-PORT-LOCAL-TCP bitmap:port",
      "KUBE-NODE-PORT-UDP bitmap:port",
      "KUBE-NODE-PORT-LOCAL-UDP bitmap:port",
      "KUBE-NODE-PORT-SCTP-HASH hash:ip,port",
      "KUBE-NODE-PORT-LOCAL-SCTP-HASH hash:ip,port",
      "KUBE-HEALTH-CHECK-NODE-PORT bitmap:port",
      "KUBE-IPVS-IPS hash:ip",
    ]);
    const comments = Object.fromEntries(SET_DEFINITIONS.map((d) => [d.name, d.comment]));
    expect(comments["KUBE-CLUSTER-IP"]).toBe("Kubernetes service cluster ip + port for masquerade purpose");
    expect(comments["KUBE-NODE-PORT-SCTP-HASH"]).toBe(
      "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'",
    );
    expect(comments["KUBE-IPVS-IPS"]).toBe("Addresses on the ipvs interface");
  });

  test("IPv6 sets are KUBE-6-..., cut to ipset's 31 characters as upstream cuts them", () => {
    const v6 = Object.values(setCatalog("IPv6")).map((s) => s.spec.name);
    expect(v6).toContain("KUBE-6-CLUSTER-IP");
    expect(v6).toContain("KUBE-6-LOAD-BALANCER-SOURCE-IP");
    expect(v6).toContain("KUBE-6-LOAD-BALANCER-SOURCE-CID");
    expect(v6).toContain("KUBE-6-NODE-PORT-LOCAL-SCTP-HAS");
    expect(v6).toContain("KUBE-6-HEALTH-CHECK-NODE-PORT");
    for (const name of v6) expect(name.length).toBeLessThanOrEqual(31);
    expect(familySetName("KUBE-LOOP-BACK", "IPv4")).toBe("KUBE-LOOP-BACK");
  });

  test("hash sets carry the family and upstream's sizes; bitmap sets the whole port range", () => {
    const v6 = setCatalog("IPv6");
    expect(v6.clusterIP.spec).toMatchObject({ family: "inet6", hashSize: 1024, maxElem: 65536 });
    expect(v6.nodePortTCP.spec).toMatchObject({ type: "bitmap:port", range: "0-65535" });
    expect(v6.clusterIP.quotedComment).toBe('"Kubernetes service cluster ip + port for masquerade purpose"');
  });
});

function richCluster(cluster: Cluster): void {
  const dual = { ipFamilies: ["IPv4", "IPv6"], ipFamilyPolicy: "PreferDualStack" };
  cluster.apply(
    service(
      "ns1",
      "lb",
      {
        type: "LoadBalancer",
        clusterIP: "198.51.100.70",
        clusterIPs: ["198.51.100.70", "2001:db8:2::70"],
        ...dual,
        externalTrafficPolicy: "Local",
        healthCheckNodePort: 32000,
        externalIPs: ["203.0.113.60", "2001:db8:3::60"],
        loadBalancerSourceRanges: [
          "203.0.113.0/25",
          "198.51.100.7/32",
          "2001:db8:ffff::/48",
          "2001:db8:9::9/128",
        ],
        ports: [
          { name: "p80", port: 80, protocol: "TCP", nodePort: 30070 },
          { name: "dns", port: 53, protocol: "UDP", nodePort: 30053 },
          { name: "sctp", port: 3868, protocol: "SCTP", nodePort: 30868 },
        ],
      },
      { loadBalancer: { ingress: [{ ip: "203.0.113.70" }, { ip: "2001:db8:3::70" }] } },
    ),
    endpointSlice("ns1", "lb", [ep("192.0.2.12", { node: "node-a" }), ep("192.0.2.13")], {
      ports: [
        { name: "p80", port: 8080, protocol: "TCP" },
        { name: "dns", port: 5353, protocol: "UDP" },
        { name: "sctp", port: 3868, protocol: "SCTP" },
      ],
    }),
    endpointSlice("ns1", "lb", [ep("2001:db8:1::12", { node: "node-a" })], {
      addressType: "IPv6",
      suffix: "v6",
      ports: [{ name: "p80", port: 8080, protocol: "TCP" }],
    }),
  );
}

describe("entries", () => {
  test("every entry written passes ipset's validation for its set's type and family", async () => {
    const host = fakeHost();
    const v4 = setup({ host });
    const v6 = setup({ host, family: "IPv6", cluster: v4.cluster });
    richCluster(v4.cluster);
    const input = v4.cluster.input();
    await v4.proxier.sync(input);
    await v6.proxier.sync(input);
    let checked = 0;
    for (const [name, set] of host.ipset.sets()) {
      for (const entry of set.entries) {
        expect({ name, entry, ok: validateEntry(set.spec.type, entry, set.spec.family) }).toEqual({
          name,
          entry,
          ok: true,
        });
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(30);
    // Spot checks of the IPv6 side.
    expect(host.ipset.entries("KUBE-6-LOAD-BALANCER-SOURCE-CID")).toEqual([
      "2001:db8:3::70,sctp:3868,2001:db8:9::9",
      "2001:db8:3::70,sctp:3868,2001:db8:ffff::/48",
      "2001:db8:3::70,tcp:80,2001:db8:9::9",
      "2001:db8:3::70,tcp:80,2001:db8:ffff::/48",
      "2001:db8:3::70,udp:53,2001:db8:9::9",
      "2001:db8:3::70,udp:53,2001:db8:ffff::/48",
    ]);
    expect(host.ipset.entries("KUBE-6-LOOP-BACK")).toEqual(["2001:db8:1::12,tcp:8080,2001:db8:1::12"]);
    expect(host.ipset.entries("KUBE-6-NODE-PORT-LOCAL-SCTP-HAS")).toEqual([
      "2001:db8:ffff::10,sctp:30868",
      "2001:db8:ffff::20,sctp:30868",
    ]);
  });

  test("a second sync of the same cluster writes no ipset line (entries read back as written)", async () => {
    for (const family of ["IPv4", "IPv6"] as IPFamily[]) {
      const s = setup({ family });
      richCluster(s.cluster);
      await s.sync();
      await s.sync();
      expect(s.proxier.lastSyncStats()).toMatchObject({
        ipsetRestoreLines: 0,
        ipvsRestoreLines: 0,
        ipBatchLines: 0,
      });
    }
  });

  test("host-length networks are spelled bare, as ipset prints them", () => {
    expect(ipPortNetEntry("203.0.113.70", "tcp", 80, "198.51.100.7/32")).toBe(
      "203.0.113.70,tcp:80,198.51.100.7",
    );
    expect(ipPortNetEntry("2001:db8::1", "tcp", 80, "2001:db8::/64")).toBe(
      "2001:db8::1,tcp:80,2001:db8::/64",
    );
  });
});
