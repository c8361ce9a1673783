import { describe, expect, test } from "bun:test";
import type { ProxyConfig } from "../../../src/config/types.ts";
import {
  boundAddresses,
  endpointSlice,
  ep,
  fakeHost,
  NODE_IP,
  NODE_IP_2,
  realsOf,
  service,
  setup,
  virtualServerKeys,
} from "./harness.ts";

const members = (s: { host: { ipset: { entries(n: string): string[] | undefined } } }, set: string) =>
  s.host.ipset.entries(set) ?? [];

describe("ClusterIP", () => {
  test("a virtual server per cluster IP:port, its address bound, the set entries written", async () => {
    const s = setup();
    s.cluster.apply(
      service("ns1", "web", { clusterIP: "198.51.100.41" }),
      endpointSlice("ns1", "web", [ep("192.0.2.11"), ep("192.0.2.12", { node: "node-a" })]),
    );
    await s.sync();
    expect(virtualServerKeys(s.host)).toEqual(["TCP 198.51.100.41:80"]);
    expect(realsOf(s.host, "TCP", "198.51.100.41", 80)).toEqual(["192.0.2.11:8080 w1", "192.0.2.12:8080 w1"]);
    expect(s.host.ipvs.services()[0]!.server).toMatchObject({ scheduler: "rr", flags: [], timeout: 0 });
    expect(boundAddresses(s.host)).toEqual(["198.51.100.41"]);
    expect(members(s, "KUBE-CLUSTER-IP")).toEqual(["198.51.100.41,tcp:80"]);
    expect(members(s, "KUBE-IPVS-IPS")).toEqual(["198.51.100.41"]);
    // Only the endpoint on this node can hairpin through the Service.
    expect(members(s, "KUBE-LOOP-BACK")).toEqual(["192.0.2.12,tcp:8080,192.0.2.12"]);
    expect(s.host.net.deviceKind("kube-ipvs0")).toBe("dummy");
  });

  test("a Service without endpoints still gets its virtual server (traffic is refused by IPVS)", async () => {
    const s = setup();
    s.cluster.apply(service("ns1", "empty", { clusterIP: "198.51.100.42" }));
    await s.sync();
    expect(realsOf(s.host, "TCP", "198.51.100.42", 80)).toEqual([]);
  });

  test("internalTrafficPolicy Local: the cluster IP uses local endpoints only", async () => {
    const s = setup();
    s.cluster.apply(
      service("ns1", "local", { clusterIP: "198.51.100.43", internalTrafficPolicy: "Local" }),
      endpointSlice("ns1", "local", [ep("192.0.2.11"), ep("192.0.2.12", { node: "node-a" })]),
    );
    await s.sync();
    expect(realsOf(s.host, "TCP", "198.51.100.43", 80)).toEqual(["192.0.2.12:8080 w1"]);
  });

  test("terminating endpoints serve when no endpoint is ready", async () => {
    const s = setup();
    s.cluster.apply(
      service("ns1", "web", { clusterIP: "198.51.100.41" }),
      endpointSlice("ns1", "web", [
        ep("192.0.2.11", { ready: false, serving: true, terminating: true }),
        ep("192.0.2.12", { ready: false, serving: false, terminating: true }),
      ]),
    );
    await s.sync();
    expect(realsOf(s.host, "TCP", "198.51.100.41", 80)).toEqual(["192.0.2.11:8080 w1"]);
  });
});

describe("NodePort", () => {
  test("one virtual server per node address; node addresses are not bound", async () => {
    const s = setup();
    s.cluster.apply(
      service("ns1", "np", {
        type: "NodePort",
        clusterIP: "198.51.100.50",
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30080 }],
      }),
      endpointSlice("ns1", "np", [ep("192.0.2.11")]),
    );
    await s.sync();
    expect(virtualServerKeys(s.host)).toEqual([
      "TCP 198.51.100.50:80",
      `TCP ${NODE_IP}:30080`,
      `TCP ${NODE_IP_2}:30080`,
    ]);
    expect(realsOf(s.host, "TCP", NODE_IP_2, 30080)).toEqual(["192.0.2.11:8080 w1"]);
    expect(boundAddresses(s.host)).toEqual(["198.51.100.50"]);
    expect(members(s, "KUBE-NODE-PORT-TCP")).toEqual(["30080"]);
    expect(members(s, "KUBE-NODE-PORT-LOCAL-TCP")).toEqual([]);
  });

  test("nodePortAddresses limits the node addresses NodePorts listen on", async () => {
    const s = setup({ config: (c) => (c.nodePortAddresses = ["203.0.113.16/28"]) });
    s.cluster.apply(
      service("ns1", "np", {
        type: "NodePort",
        clusterIP: "198.51.100.50",
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30080 }],
      }),
    );
    await s.sync();
    expect(virtualServerKeys(s.host)).toEqual(["TCP 198.51.100.50:80", `TCP ${NODE_IP_2}:30080`]);
  });

  test("SCTP NodePorts use hash:ip,port entries, one per node address", async () => {
    const s = setup();
    const ports = [{ name: "sctp", port: 3868, protocol: "SCTP", nodePort: 30868 }];
    s.cluster.apply(
      service("ns1", "diameter", {
        type: "NodePort",
        clusterIP: "198.51.100.51",
        externalTrafficPolicy: "Local",
        ports,
      }),
      endpointSlice("ns1", "diameter", [ep("192.0.2.12", { node: "node-a" })], { ports }),
    );
    await s.sync();
    const expected = [`${NODE_IP},sctp:30868`, `${NODE_IP_2},sctp:30868`];
    expect(members(s, "KUBE-NODE-PORT-SCTP-HASH")).toEqual(expected);
    expect(members(s, "KUBE-NODE-PORT-LOCAL-SCTP-HASH")).toEqual(expected);
    expect(members(s, "KUBE-CLUSTER-IP")).toEqual(["198.51.100.51,sctp:3868"]);
    expect(realsOf(s.host, "SCTP", NODE_IP, 30868)).toEqual(["192.0.2.12:3868 w1"]);
  });
});

describe("externalIPs", () => {
  const externalService = (policy: "Local" | "Cluster", externalIPs: string[]) =>
    service("ns1", "ext", {
      type: "ClusterIP",
      clusterIP: "198.51.100.60",
      externalIPs,
      externalTrafficPolicy: policy,
    });

  test("externalTrafficPolicy Local: only local real servers, the Local set, the address bound", async () => {
    const s = setup();
    s.cluster.apply(
      externalService("Local", ["203.0.113.60"]),
      endpointSlice("ns1", "ext", [ep("192.0.2.11"), ep("192.0.2.12", { node: "node-a" })]),
    );
    await s.sync();
    expect(realsOf(s.host, "TCP", "203.0.113.60", 80)).toEqual(["192.0.2.12:8080 w1"]);
    // The cluster IP is not external: it keeps every endpoint.
    expect(realsOf(s.host, "TCP", "198.51.100.60", 80)).toEqual(["192.0.2.11:8080 w1", "192.0.2.12:8080 w1"]);
    expect(members(s, "KUBE-EXTERNAL-IP-LOCAL")).toEqual(["203.0.113.60,tcp:80"]);
    expect(members(s, "KUBE-EXTERNAL-IP")).toEqual([]);
    expect(boundAddresses(s.host).sort()).toEqual(["198.51.100.60", "203.0.113.60"]);
  });

  test("Local policy without a local endpoint falls back to the cluster's (upstream #97081)", async () => {
    const s = setup();
    s.cluster.apply(
      externalService("Local", ["203.0.113.60"]),
      endpointSlice("ns1", "ext", [ep("192.0.2.11")]),
    );
    await s.sync();
    expect(realsOf(s.host, "TCP", "203.0.113.60", 80)).toEqual(["192.0.2.11:8080 w1"]);
    const metric = await s.metrics.syncProxyRulesNoLocalEndpointsTotal.get();
    expect(metric.values.find((v) => v.labels.traffic_policy === "external")?.value).toBe(1);
  });

  test("an external IP that a node interface carries is served but not bound to kube-ipvs0", async () => {
    const s = setup();
    s.cluster.apply(externalService("Cluster", [NODE_IP_2]), endpointSlice("ns1", "ext", [ep("192.0.2.11")]));
    await s.sync();
    expect(realsOf(s.host, "TCP", NODE_IP_2, 80)).toEqual(["192.0.2.11:8080 w1"]);
    expect(members(s, "KUBE-EXTERNAL-IP")).toEqual([`${NODE_IP_2},tcp:80`]);
    expect(boundAddresses(s.host)).toEqual(["198.51.100.60"]);
  });
});

describe("LoadBalancer", () => {
  const lb = (sourceRanges: string[]) =>
    service(
      "ns1",
      "lb",
      {
        type: "LoadBalancer",
        clusterIP: "198.51.100.70",
        loadBalancerSourceRanges: sourceRanges,
        externalTrafficPolicy: "Local",
        healthCheckNodePort: 32000,
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30070 }],
      },
      { loadBalancer: { ingress: [{ ip: "203.0.113.70" }] } },
    );

  test("source ranges: the firewall sets, and the node admitted when a range covers it", async () => {
    const s = setup();
    s.cluster.apply(
      lb(["198.51.100.0/24", "203.0.113.0/25"]),
      endpointSlice("ns1", "lb", [ep("192.0.2.12", { node: "node-a" })]),
    );
    await s.sync();
    expect(members(s, "KUBE-LOAD-BALANCER")).toEqual(["203.0.113.70,tcp:80"]);
    expect(members(s, "KUBE-LOAD-BALANCER-LOCAL")).toEqual(["203.0.113.70,tcp:80"]);
    expect(members(s, "KUBE-LOAD-BALANCER-FW")).toEqual(["203.0.113.70,tcp:80"]);
    expect(members(s, "KUBE-LOAD-BALANCER-SOURCE-CIDR")).toEqual([
      "203.0.113.70,tcp:80,198.51.100.0/24",
      "203.0.113.70,tcp:80,203.0.113.0/25",
    ]);
    // 203.0.113.0/25 holds the node IP: the VIP itself (the node looping back) is admitted.
    expect(members(s, "KUBE-LOAD-BALANCER-SOURCE-IP")).toEqual(["203.0.113.70,tcp:80,203.0.113.70"]);
    expect(members(s, "KUBE-HEALTH-CHECK-NODE-PORT")).toEqual(["32000"]);
    expect(s.host.ipt.IPv4.rules("filter", "KUBE-IPVS-OUT-FILTER")).toEqual([]);
    expect(realsOf(s.host, "TCP", "203.0.113.70", 80)).toEqual(["192.0.2.12:8080 w1"]);
    expect(boundAddresses(s.host).sort()).toEqual(["198.51.100.70", "203.0.113.70"]);
  });

  test("source ranges that leave the node out: the node is kept from the VIP", async () => {
    const s = setup();
    s.cluster.apply(
      lb(["198.51.100.0/24"]),
      endpointSlice("ns1", "lb", [ep("192.0.2.12", { node: "node-a" })]),
    );
    await s.sync();
    expect(members(s, "KUBE-LOAD-BALANCER-SOURCE-IP")).toEqual([]);
    expect(s.host.ipt.IPv4.rules("filter", "KUBE-IPVS-OUT-FILTER")).toEqual([
      "-s 203.0.113.70/32 -m ipvs --vaddr 203.0.113.70 --vproto tcp --vport 80 -j DROP",
    ]);
  });

  test("a single-address range is stored as ipset prints it (no churn on the next sync)", async () => {
    const s = setup();
    s.cluster.apply(lb(["198.51.100.9/32"]));
    await s.sync();
    expect(members(s, "KUBE-LOAD-BALANCER-SOURCE-CIDR")).toEqual(["203.0.113.70,tcp:80,198.51.100.9"]);
    await s.sync();
    expect(s.proxier.lastSyncStats()?.ipsetRestoreLines).toBe(0);
  });
});

describe("session affinity", () => {
  test("ClientIP affinity makes every virtual server of the port persistent", async () => {
    const s = setup();
    s.cluster.apply(
      service("ns1", "sticky", {
        type: "NodePort",
        clusterIP: "198.51.100.80",
        sessionAffinity: "ClientIP",
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30080 }],
      }),
    );
    await s.sync();
    const timeouts = s.host.ipvs.services().map((v) => v.server.timeout);
    expect(timeouts).toEqual([600, 600, 600]);
    expect(s.host.ipvs.save()).toContain("-A -t 198.51.100.80:80 -s rr -p 600");
  });

  test("changing the affinity edits the virtual server in place", async () => {
    const s = setup();
    const svc = (affinity: "ClientIP" | "None") =>
      service("ns1", "sticky", { clusterIP: "198.51.100.80", sessionAffinity: affinity });
    s.cluster.apply(svc("ClientIP"), endpointSlice("ns1", "sticky", [ep("192.0.2.11")]));
    await s.sync();
    expect(s.host.ipvs.services()[0]!.server.timeout).toBe(10800);
    s.cluster.apply(svc("None"));
    await s.sync();
    expect(s.host.ipvs.services()[0]!.server.timeout).toBe(0);
    expect(realsOf(s.host, "TCP", "198.51.100.80", 80)).toEqual(["192.0.2.11:8080 w1"]);
    const restore = s.host.exec.callsTo("ipvsadm").at(-1)!;
    expect(restore.stdin).toBe("-E -t 198.51.100.80:80 -s rr\n");
  });
});

describe("schedulers", () => {
  const cases: [string, string[]][] = [
    ["rr", []],
    ["wrr", []],
    ["lc", []],
    ["wlc", []],
    ["lblc", []],
    ["lblcr", []],
    ["sh", []],
    ["dh", []],
    ["sed", []],
    ["nq", []],
    ["mh", ["mh-port"]],
  ];
  for (const [scheduler, flags] of cases) {
    test(`${scheduler}: virtual servers use it${flags.length ? ` with ${flags.join(",")}` : " without flags"}`, async () => {
      const s = setup({ config: (c) => (c.ipvs.scheduler = scheduler) });
      s.cluster.apply(
        service("ns1", "web", { clusterIP: "198.51.100.41" }),
        endpointSlice("ns1", "web", [ep("192.0.2.11")]),
      );
      await s.sync();
      expect(s.host.ipvs.services()[0]!.server).toMatchObject({ scheduler, flags });
      expect(s.proxier.desiredVirtualServers()[0]).toMatchObject({ scheduler, flags });
      // Nothing to change on the next sync: the kernel reads back what was written.
      await s.sync();
      expect(s.proxier.lastSyncStats()?.ipvsRestoreLines).toBe(0);
    });
  }

  test("an empty scheduler means rr", async () => {
    const s = setup({ config: (c) => (c.ipvs.scheduler = "") });
    s.cluster.apply(service("ns1", "web", { clusterIP: "198.51.100.41" }));
    await s.sync();
    expect(s.host.ipvs.services()[0]!.server.scheduler).toBe("rr");
  });
});

describe("removal and foreign virtual servers", () => {
  test("a removed Service loses its virtual servers, addresses and set entries", async () => {
    const s = setup();
    const web = service("ns1", "web", { clusterIP: "198.51.100.41", externalIPs: ["203.0.113.41"] });
    const keep = service("ns1", "keep", { clusterIP: "198.51.100.42" });
    s.cluster.apply(web, keep, endpointSlice("ns1", "web", [ep("192.0.2.11")]));
    await s.sync();
    expect(boundAddresses(s.host).sort()).toEqual(["198.51.100.41", "198.51.100.42", "203.0.113.41"]);
    s.cluster.remove(web);
    await s.sync();
    expect(virtualServerKeys(s.host)).toEqual(["TCP 198.51.100.42:80"]);
    expect(boundAddresses(s.host)).toEqual(["198.51.100.42"]);
    expect(members(s, "KUBE-CLUSTER-IP")).toEqual(["198.51.100.42,tcp:80"]);
    expect(members(s, "KUBE-EXTERNAL-IP")).toEqual([]);
    expect(members(s, "KUBE-IPVS-IPS")).toEqual(["198.51.100.42"]);
  });

  test("a Service replaced by another in one sync: the old one is gone, the new one in", async () => {
    const s = setup();
    const a = service("ns1", "a", { clusterIP: "198.51.100.41" });
    s.cluster.apply(a);
    await s.sync();
    s.cluster.remove(a).apply(service("ns1", "b", { clusterIP: "198.51.100.42" }));
    await s.sync();
    expect(virtualServerKeys(s.host)).toEqual(["TCP 198.51.100.42:80"]);
  });

  test("--ipvs-exclude-cidrs protects foreign virtual servers; other unknown ones are deleted", async () => {
    const s = setup({ config: (c) => (c.ipvs.excludeCIDRs = ["203.0.113.128/25", "2001:db8:99::/64"]) });
    s.host.ipvs.load(
      [
        "-A -t 203.0.113.200:443 -s wlc",
        "-a -t 203.0.113.200:443 -r 192.0.2.99:443 -m -w 3",
        "-A -t 203.0.113.5:443 -s rr",
        "-A -t [2001:db8:55::1]:443 -s rr",
      ].join("\n"),
    );
    s.cluster.apply(service("ns1", "web", { clusterIP: "198.51.100.41" }));
    await s.sync();
    // The IPv6 one belongs to the other family's proxier, which decides about it.
    expect(virtualServerKeys(s.host)).toEqual([
      "TCP 198.51.100.41:80",
      "TCP 203.0.113.200:443",
      "TCP [2001:db8:55::1]:443",
    ]);
    expect(realsOf(s.host, "TCP", "203.0.113.200", 443)).toEqual(["192.0.2.99:443 w3"]);
  });

  test("addresses of the other family on kube-ipvs0 are left alone", async () => {
    const s = setup();
    s.host.net.addDevice("kube-ipvs0", "dummy", { up: false, addresses: ["2001:db8:1:2::5/128"] });
    await s.sync();
    expect(boundAddresses(s.host)).toEqual(["2001:db8:1:2::5"]);
  });
});

describe("weights and timeouts", () => {
  test("the first sync resets weights a previous instance left at 0; later syncs leave them", async () => {
    const s = setup();
    s.host.ipvs.load(
      [
        "-A -t 198.51.100.41:80 -s rr",
        "-a -t 198.51.100.41:80 -r 192.0.2.11:8080 -m -w 0",
        "-a -t 198.51.100.41:80 -r 192.0.2.12:8080 -m -w 1",
      ].join("\n"),
    );
    s.cluster.apply(
      service("ns1", "web", { clusterIP: "198.51.100.41" }),
      endpointSlice("ns1", "web", [ep("192.0.2.11"), ep("192.0.2.12")]),
    );
    await s.sync();
    expect(realsOf(s.host, "TCP", "198.51.100.41", 80)).toEqual(["192.0.2.11:8080 w1", "192.0.2.12:8080 w1"]);
    s.host.ipvs.load("-e -t 198.51.100.41:80 -r 192.0.2.12:8080 -m -w 0");
    await s.sync();
    expect(realsOf(s.host, "TCP", "198.51.100.41", 80)).toEqual(["192.0.2.11:8080 w1", "192.0.2.12:8080 w0"]);
  });

  test("configured timeouts are set once, in seconds", async () => {
    const s = setup({
      config: (c: ProxyConfig) => {
        c.ipvs.tcpTimeout = 900_000;
        c.ipvs.udpTimeout = 30_500;
      },
    });
    await s.sync();
    await s.sync();
    expect(s.host.ipvs.timeouts()).toEqual({ tcp: 900, tcpFin: 120, udp: 30 });
    expect(s.host.exec.callsTo("ipvsadm").filter((c) => c.args[0] === "--set")).toHaveLength(1);
  });

  test("no timeouts configured: ipvsadm --set never runs", async () => {
    const s = setup();
    await s.sync();
    expect(s.host.exec.callsTo("ipvsadm").some((c) => c.args[0] === "--set")).toBe(false);
  });
});

describe("dual-stack", () => {
  test("two proxiers share the IPVS table and kube-ipvs0 without undoing each other", async () => {
    const host = fakeHost();
    const v4 = setup({ host });
    const v6 = setup({ host, family: "IPv6", cluster: v4.cluster });
    v4.cluster.apply(
      service("ns1", "web", {
        clusterIP: "198.51.100.41",
        clusterIPs: ["198.51.100.41", "2001:db8:2::41"],
        ipFamilies: ["IPv4", "IPv6"],
        ipFamilyPolicy: "PreferDualStack",
      }),
      endpointSlice("ns1", "web", [ep("192.0.2.11")]),
      endpointSlice("ns1", "web", [ep("2001:db8:1::11")], { addressType: "IPv6", suffix: "v6" }),
    );
    const input = v4.cluster.input();
    await v4.proxier.sync(input);
    await v6.proxier.sync(input);
    await v4.proxier.sync(input);
    expect(virtualServerKeys(host)).toEqual(["TCP 198.51.100.41:80", "TCP [2001:db8:2::41]:80"]);
    expect(realsOf(host, "TCP", "2001:db8:2::41", 80)).toEqual(["[2001:db8:1::11]:8080 w1"]);
    expect(boundAddresses(host).sort()).toEqual(["198.51.100.41", "2001:db8:2::41"]);
    expect(host.ipset.entries("KUBE-6-CLUSTER-IP")).toEqual(["2001:db8:2::41,tcp:80"]);
    expect(host.ipset.entries("KUBE-CLUSTER-IP")).toEqual(["198.51.100.41,tcp:80"]);
    expect(host.ipt.IPv6.rules("nat", "KUBE-SERVICES")[0]).toBe("-s ::1/128 -j RETURN");
  });
});

describe("failures", () => {
  test("a refused iptables-restore fails the sync, counts it, and the next sync is full", async () => {
    const s = setup();
    s.cluster.apply(service("ns1", "web", { clusterIP: "198.51.100.41" }));
    await s.sync();
    s.host.ipt.IPv4.failNextRestore(2, "injected");
    await expect(s.sync()).rejects.toThrow();
    expect((await s.metrics.iptablesRestoreFailures.get()).values[0]?.value).toBe(1);
    // The IPVS side still went through.
    expect(virtualServerKeys(s.host)).toEqual(["TCP 198.51.100.41:80"]);
    await s.sync();
    expect(s.proxier.lastSyncStats()?.fullSync).toBe(true);
  });
});

describe("desiredVirtualServers", () => {
  test("reports the dry-run shape of what the last sync programmed", async () => {
    const s = setup();
    s.cluster.apply(
      service("ns1", "web", {
        clusterIP: "198.51.100.41",
        sessionAffinity: "ClientIP",
      }),
      endpointSlice("ns1", "web", [ep("192.0.2.12"), ep("192.0.2.11")]),
    );
    await s.sync();
    expect(s.proxier.desiredVirtualServers()).toEqual([
      {
        address: "198.51.100.41",
        port: 80,
        protocol: "TCP",
        scheduler: "rr",
        flags: [],
        timeout: 10800,
        realServers: [
          { address: "192.0.2.11", port: 8080, weight: 1 },
          { address: "192.0.2.12", port: 8080, weight: 1 },
        ],
      },
    ]);
  });
});

describe("partial and full reconciles", () => {
  async function twoServices() {
    const s = setup();
    s.cluster.apply(
      service("ns1", "a", { clusterIP: "198.51.100.41" }),
      endpointSlice("ns1", "a", [ep("192.0.2.11")]),
      service("ns1", "b", { clusterIP: "198.51.100.42" }),
      endpointSlice("ns1", "b", [ep("192.0.2.21")]),
    );
    await s.sync();
    // Someone removes a's virtual server and unbinds its address behind our back.
    s.host.ipvs.load("-D -t 198.51.100.41:80");
    s.host.net.handle({ cmd: "ip", args: ["addr", "del", "198.51.100.41/32", "dev", "kube-ipvs0"] });
    return s;
  }

  test("a sync after a change compares only what changed", async () => {
    const s = await twoServices();
    s.cluster.apply(endpointSlice("ns1", "b", [ep("192.0.2.22")]));
    await s.sync();
    expect(s.proxier.lastSyncStats()).toMatchObject({ reconcile: "partial", recomputedPorts: 1 });
    expect(realsOf(s.host, "TCP", "198.51.100.42", 80)).toEqual(["192.0.2.22:8080 w1"]);
    expect(realsOf(s.host, "TCP", "198.51.100.41", 80)).toBeUndefined();
  });

  test("a sync with nothing to do reads and writes nothing until the ipvs sync period is up", async () => {
    const s = await twoServices();
    const from = s.host.exec.calls.length;
    await s.sync();
    expect(s.proxier.lastSyncStats()?.reconcile).toBe("partial");
    // Only the iptables rules, rewritten each sync as upstream does.
    expect(s.host.exec.calls.slice(from).map((c) => c.cmd)).toEqual(["iptables-nft-restore"]);
    expect(realsOf(s.host, "TCP", "198.51.100.41", 80)).toBeUndefined();
  });

  test("a sync with nothing to do once the ipvs sync period is up compares everything and repairs the drift", async () => {
    const s = await twoServices();
    s.clock.advance(s.config.ipvs.syncPeriod);
    await s.sync();
    expect(s.proxier.lastSyncStats()?.reconcile).toBe("full");
    expect(realsOf(s.host, "TCP", "198.51.100.41", 80)).toEqual(["192.0.2.11:8080 w1"]);
    expect(boundAddresses(s.host).sort()).toEqual(["198.51.100.41", "198.51.100.42"]);
  });

  test("changes never postpone a full compare beyond the ipvs sync period", async () => {
    const s = await twoServices();
    s.clock.advance(s.config.ipvs.syncPeriod);
    s.cluster.apply(endpointSlice("ns1", "b", [ep("192.0.2.22")]));
    await s.sync();
    expect(s.proxier.lastSyncStats()?.reconcile).toBe("full");
    expect(realsOf(s.host, "TCP", "198.51.100.41", 80)).toEqual(["192.0.2.11:8080 w1"]);
  });

  test("after a failed sync, the next one checks every port and compares everything", async () => {
    const s = await twoServices();
    s.host.ipt.IPv4.failNextRestore(2, "injected");
    s.cluster.apply(endpointSlice("ns1", "b", [ep("192.0.2.22")]));
    await expect(s.sync()).rejects.toThrow();
    await s.sync();
    expect(s.proxier.lastSyncStats()).toMatchObject({ reconcile: "full", fullSync: true });
    expect(virtualServerKeys(s.host)).toEqual(["TCP 198.51.100.41:80", "TCP 198.51.100.42:80"]);
  });
});
