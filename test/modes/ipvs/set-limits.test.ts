// ipvs mode against its sets' maxelem (65,536 members, as upstream creates them): a Service
// whose members would overfill a set is held out whole and reported once, the rest keep
// syncing, and it is programmed again once it fits. Over the stateful fakes, whose ipset refuses
// the member past a set's maxelem as the kernel does (test/host/ipset/fake-vs-real.test.ts).

import { describe, expect, test } from "bun:test";
import { memoryRecorder } from "../../../src/k8s/events.ts";
import type { ServiceObject } from "../../../src/k8s/objects.ts";
import { memoryLogger } from "../../../src/log/logger.ts";
import { HeldOutByFamily } from "../../../src/modes/ipvs/held-out-families.ts";
import { MultiFamilyProxier } from "../../../src/proxy/multi-family.ts";
import {
  boundAddresses,
  endpointSlice,
  ep,
  fakeHost,
  NODE,
  service,
  setup,
  virtualServerKeys,
} from "./harness.ts";

const MAXELEM = 65_536;

/** `n` distinct /32 source ranges from `from` on (members only: no traffic is ever sent). */
function ranges(n: number, from = 0): string[] {
  const out: string[] = [];
  for (let i = from; i < from + n; i++) out.push(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`);
  return out;
}

function lb(name: string, vip: string, created: string, sourceRanges: string[]): ServiceObject {
  const s = service(
    "ns1",
    name,
    {
      type: "LoadBalancer",
      clusterIP: vip.replace("203.0.113.", "198.51.100."),
      loadBalancerSourceRanges: sourceRanges,
      ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30000 + Number(vip.split(".")[3]) }],
    },
    { loadBalancer: { ingress: [{ ip: vip }] } },
  );
  return { ...s, metadata: { ...s.metadata, creationTimestamp: created } };
}

const web = (() => {
  const s = service("ns1", "web", { clusterIP: "198.51.100.41" });
  return { ...s, metadata: { ...s.metadata, creationTimestamp: "2020-01-01T00:00:00Z" } };
})();

/** A health check sink that keeps every local endpoint count it is told, in order. */
function recordingHealthCheck() {
  const counts: ReadonlyMap<string, number>[] = [];
  const healthCheck = {
    syncServices: () => {},
    syncEndpoints: (local: ReadonlyMap<string, number>) => {
      counts.push(local);
    },
  };
  return { counts, healthCheck };
}

function setUp() {
  const logger = memoryLogger();
  const recorder = memoryRecorder();
  const s = setup({ logger, deps: { recorder } });
  const members = (set: string) => s.host.ipset.entries(set) ?? [];
  const told = (what: string) => logger.lines.filter((l) => l.includes(what));
  return { ...s, logger, recorder, members, told };
}

describe("sets at maxelem", () => {
  test("a Service that would overfill a set is held out whole and told once; the rest keep syncing", async () => {
    const s = setUp();
    const wide = lb("wide", "203.0.113.70", "2024-01-01T00:00:00Z", ranges(MAXELEM + 1));
    s.cluster.apply(web, endpointSlice("ns1", "web", [ep("192.0.2.11")]), wide);
    await s.sync();
    expect(virtualServerKeys(s.host)).toEqual(["TCP 198.51.100.41:80"]);
    expect(boundAddresses(s.host)).toEqual(["198.51.100.41"]);
    expect(s.members("KUBE-CLUSTER-IP")).toEqual(["198.51.100.41,tcp:80"]);
    expect(s.members("KUBE-LOAD-BALANCER-SOURCE-CIDR")).toEqual([]);
    expect(s.members("KUBE-LOAD-BALANCER")).toEqual([]);
    const told = s.told("do not fit");
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(
      `service="ns1/wide" ipset="KUBE-LOAD-BALANCER-SOURCE-CIDR" membersAtLeast=${MAXELEM + 1} maxelem=${MAXELEM}`,
    );
    expect(s.proxier.heldOutServices().get("ns1/wide")?.set).toBe("loadBalancerSourceCIDR");
    expect(s.recorder.events).toEqual([
      {
        ref: { kind: "Service", namespace: "ns1", name: "wide" },
        type: "Warning",
        reason: "KubeProxyIPSetFull",
        action: "SyncProxyRules",
        message:
          `ipset KUBE-LOAD-BALANCER-SOURCE-CIDR would hold at least ${MAXELEM + 1} members with this Service's, ` +
          `more than its maxelem ${MAXELEM}: the Service is not programmed in ipvs mode (IPv4) on this node`,
      },
    ]);

    // Other changes land, and the held-out Service is not told again.
    const later = service("ns1", "later", { clusterIP: "198.51.100.42" });
    s.cluster.apply(later);
    await s.sync();
    expect(virtualServerKeys(s.host)).toEqual(["TCP 198.51.100.41:80", "TCP 198.51.100.42:80"]);
    s.proxier.requestFullSync();
    await s.sync();
    expect(s.told("do not fit")).toHaveLength(1);
    expect(s.recorder.events).toHaveLength(1);
    expect(s.told("Sync failed")).toEqual([]);

    // Still too big after an update: still held out, not told again.
    s.cluster.apply(lb("wide", "203.0.113.70", "2024-01-01T00:00:00Z", ranges(MAXELEM + 5)));
    await s.sync();
    expect(s.proxier.heldOutServices().get("ns1/wide")?.wanted).toBe(MAXELEM + 5);
    expect(s.members("KUBE-LOAD-BALANCER-SOURCE-CIDR")).toEqual([]);
    expect(s.told("do not fit")).toHaveLength(1);

    // Once it fits, it is programmed.
    s.cluster.apply(lb("wide", "203.0.113.70", "2024-01-01T00:00:00Z", ranges(2)));
    await s.sync();
    expect(s.told("fit again")).toHaveLength(1);
    expect(s.members("KUBE-LOAD-BALANCER-SOURCE-CIDR").sort()).toEqual([
      "203.0.113.70,tcp:80,10.0.0.0",
      "203.0.113.70,tcp:80,10.0.0.1",
    ]);
    expect(virtualServerKeys(s.host)).toContain("TCP 203.0.113.70:80");
    expect(s.proxier.heldOutServices().size).toBe(0);
  });

  test("an older Service that grows takes the room from a newer one, and gives it back when deleted", async () => {
    const s = setUp();
    const older = (n: number) => lb("older", "203.0.113.71", "2021-01-01T00:00:00Z", ranges(n));
    const newer = lb("newer", "203.0.113.72", "2022-01-01T00:00:00Z", ranges(30_000, 100_000));
    s.cluster.apply(older(30_000), newer);
    await s.sync();
    expect(s.members("KUBE-LOAD-BALANCER-SOURCE-CIDR")).toHaveLength(60_000);

    s.cluster.apply(older(40_000));
    await s.sync();
    expect(s.proxier.lastSyncStats()?.reconcile).toBe("partial");
    expect([...s.proxier.heldOutServices().keys()]).toEqual(["ns1/newer"]);
    const held = s.members("KUBE-LOAD-BALANCER-SOURCE-CIDR");
    expect(held).toHaveLength(40_000);
    expect(held.every((m) => m.startsWith("203.0.113.71,"))).toBe(true);
    expect(virtualServerKeys(s.host)).not.toContain("TCP 203.0.113.72:80");

    s.cluster.remove(older(40_000));
    await s.sync();
    expect(s.proxier.heldOutServices().size).toBe(0);
    expect(s.members("KUBE-LOAD-BALANCER-SOURCE-CIDR")).toHaveLength(30_000);
    expect(virtualServerKeys(s.host)).toContain("TCP 203.0.113.72:80");
    expect(s.told("Sync failed")).toEqual([]);
    // The partial syncs left the kernel as a full comparison wants it.
    expect(await s.proxier.drift()).toEqual({ differences: [] });
  });

  test("a held-out Service deleted leaves nothing behind", async () => {
    const s = setUp();
    const wide = lb("wide", "203.0.113.70", "2024-01-01T00:00:00Z", ranges(MAXELEM + 1));
    s.cluster.apply(web, wide);
    await s.sync();
    s.cluster.remove(wide);
    await s.sync();
    expect(s.proxier.heldOutServices().size).toBe(0);
    expect(virtualServerKeys(s.host)).toEqual(["TCP 198.51.100.41:80"]);
    s.proxier.requestFullSync();
    await s.sync();
    expect(s.told("do not fit")).toHaveLength(1);
    expect(s.told("fit again")).toEqual([]);
  });

  test("a Service past a limit on its own is planned only until it passes it, and planned whole again when it changes", async () => {
    const s = setUp();
    // 400 external IPs x 200 ports: 80,000 members of KUBE-EXTERNAL-IP, 400 more per port.
    const wideIPs = (ports: number) => {
      const svc = service("ns1", "wide", {
        clusterIP: "198.51.100.90",
        externalIPs: ranges(400).map((r) => r.slice(0, -3)),
        ports: Array.from({ length: ports }, (_, i) => ({ name: `p${i}`, port: 1000 + i, protocol: "TCP" })),
      });
      return { ...svc, metadata: { ...svc.metadata, creationTimestamp: "2024-01-01T00:00:00Z" } };
    };
    s.cluster.apply(web, wideIPs(200));
    await s.sync();
    expect(s.proxier.heldOutServices().get("ns1/wide")).toEqual({
      set: "externalIP",
      wanted: 65_600,
      limit: MAXELEM,
    });
    // 164 ports pass 65,536 members; none of the wide Service's plans is kept, web's is.
    expect(s.proxier.plannedPorts()).toBe(1);
    expect(virtualServerKeys(s.host)).toEqual(["TCP 198.51.100.41:80"]);
    expect(s.members("KUBE-EXTERNAL-IP")).toEqual([]);

    // A full scan with nothing changed plans none of it again.
    s.proxier.requestFullSync();
    await s.sync();
    expect(s.proxier.plannedPorts()).toBe(1);

    // Changed, it is planned again, and fits: 400 x 100 ports.
    s.cluster.apply(wideIPs(100));
    await s.sync();
    expect(s.proxier.heldOutServices().size).toBe(0);
    expect(s.proxier.plannedPorts()).toBe(101);
    expect(s.members("KUBE-EXTERNAL-IP")).toHaveLength(40_000);
    expect(s.told("fit again")).toHaveLength(1);
    expect(s.told("do not fit")).toHaveLength(1);

    // Grown past the limit again in a partial sync: let go again, told again.
    s.cluster.apply(wideIPs(170));
    await s.sync();
    expect(s.proxier.heldOutServices().get("ns1/wide")?.set).toBe("externalIP");
    expect(s.proxier.plannedPorts()).toBe(1);
    expect(s.members("KUBE-EXTERNAL-IP")).toEqual([]);
    expect(s.told("do not fit")).toHaveLength(2);
    expect(await s.proxier.drift()).toEqual({ differences: [] });
  });

  test("a held-out LoadBalancer's health check reports no local endpoint until it is programmed", async () => {
    const { counts, healthCheck } = recordingHealthCheck();
    const logger = memoryLogger();
    const s = setup({ logger, deps: { healthCheck } });
    const local = (n: number) => {
      const svc = lb("wide", "203.0.113.70", "2024-01-01T00:00:00Z", ranges(n));
      return { ...svc, spec: { ...svc.spec, externalTrafficPolicy: "Local", healthCheckNodePort: 32000 } };
    };
    s.cluster.apply(
      web,
      local(MAXELEM + 1),
      endpointSlice("ns1", "wide", [ep("192.0.2.21", { node: NODE })]),
    );
    await s.sync();
    expect(s.proxier.heldOutServices().has("ns1/wide")).toBe(true);
    // Traffic a load balancer sent here would find no virtual server: it is told to go elsewhere.
    expect(counts.at(-1)?.get("ns1/wide")).toBeUndefined();

    s.cluster.apply(local(2));
    await s.sync();
    expect(s.proxier.heldOutServices().size).toBe(0);
    expect(virtualServerKeys(s.host)).toContain("TCP 203.0.113.70:80");
    expect(counts.at(-1)?.get("ns1/wide")).toBe(1);
  });

  test("dual-stack: a LoadBalancer held out in its second family only turns its health check away", async () => {
    const { counts, healthCheck } = recordingHealthCheck();
    const host = fakeHost();
    const heldOutByFamily = new HeldOutByFamily();
    const v4 = setup({ host, deps: { healthCheck, heldOutByFamily } });
    const v6 = setup({ host, family: "IPv6", cluster: v4.cluster, deps: { healthCheck, heldOutByFamily } });
    const multi = new MultiFamilyProxier([v4.proxier, v6.proxier]);
    const round = () => multi.sync(v4.cluster.input());
    // Two IPv4 ranges, and IPv6 ranges past what one set holds (members only: nothing is sent).
    const wide = (v6Ranges: number) => {
      const svc = lb("wide", "203.0.113.70", "2024-01-01T00:00:00Z", [
        "10.0.0.0/24",
        "10.0.1.0/24",
        ...Array.from(
          { length: v6Ranges },
          (_, i) => `2001:db8:9::${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}/128`,
        ),
      ]);
      return {
        ...svc,
        spec: {
          ...svc.spec,
          clusterIPs: ["198.51.100.70", "2001:db8:2::70"],
          ipFamilies: ["IPv4", "IPv6"],
          ipFamilyPolicy: "PreferDualStack",
          externalTrafficPolicy: "Local",
          healthCheckNodePort: 32000,
        },
        status: { loadBalancer: { ingress: [{ ip: "203.0.113.70" }, { ip: "2001:db8:3::70" }] } },
      } as ServiceObject;
    };
    v4.cluster.apply(
      wide(MAXELEM + 1),
      endpointSlice("ns1", "wide", [ep("192.0.2.21", { node: NODE })]),
      endpointSlice("ns1", "wide", [ep("2001:db8:1::21", { node: NODE })], {
        addressType: "IPv6",
        suffix: "v6",
      }),
    );
    await round();
    expect(v4.proxier.heldOutServices().size).toBe(0);
    expect(v6.proxier.heldOutServices().get("ns1/wide")?.set).toBe("loadBalancerSourceCIDR");
    expect(virtualServerKeys(host)).toContain("TCP 203.0.113.70:80");
    expect(virtualServerKeys(host)).not.toContain("TCP [2001:db8:3::70]:80");
    // Each family reported; the last report of the round has both families' word.
    expect(counts).toHaveLength(2);
    expect(counts.at(-1)?.get("ns1/wide")).toBeUndefined();

    // The next round's first report already knows the other family's holdout.
    v4.cluster.apply(service("ns1", "other", { clusterIP: "198.51.100.42" }));
    await round();
    expect(counts.slice(2).map((c) => c.get("ns1/wide"))).toEqual([undefined, undefined]);

    v4.cluster.apply(wide(2));
    await round();
    expect(v6.proxier.heldOutServices().size).toBe(0);
    expect(virtualServerKeys(host)).toContain("TCP [2001:db8:3::70]:80");
    expect(counts.at(-1)?.get("ns1/wide")).toBe(1);
  });
});
