import { describe, expect, test } from "bun:test";
import type { Table } from "../../../src/host/iptables/types.ts";
import { memoryLogger, nullLogger } from "../../../src/log/logger.ts";
import { endpointChain, servicePortChains } from "../../../src/modes/iptables/chains.ts";
import { registerNfacctMetrics } from "../../../src/modes/iptables/nfacct-metrics.ts";
import type { Metrics } from "../../../src/proxy/metrics/metrics.ts";
import { FULL_SYNC_PERIOD_MS } from "../../../src/proxy/proxier.ts";
import {
  chainRules,
  endpointSlice,
  ep,
  fakeNfacct,
  type Setup,
  service,
  setup,
  tableSection,
} from "./harness.ts";

const names = (port: string) => servicePortChains(port, "tcp");
const sep = (port: string, endpoint: string) => endpointChain(port, "tcp", endpoint);

/** nat chain declarations in a restore payload, in order. */
function natChains(payload: string): string[] {
  return tableSection(payload, "nat")
    .filter((l) => l.startsWith(":"))
    .map((l) => l.slice(1, l.indexOf(" ")));
}

async function value(
  metric: { get(): Promise<{ values: { value: number; labels: object }[] }> },
  labels = {},
) {
  const values = (await metric.get()).values;
  // Every series also carries ip_family; the labels asked for must match.
  const match = values.find((v) =>
    Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want),
  );
  return match?.value ?? 0;
}

async function histogramCount(metric: Metrics["syncProxyRulesLatency"]): Promise<number> {
  const values = (await metric.get()).values as { metricName?: string; value: number }[];
  return values.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0;
}

function twoServices(s: Setup) {
  s.cluster.apply(
    service("ns1", "svc1", { clusterIP: "198.51.100.41" }),
    endpointSlice("ns1", "svc1", [ep("192.0.2.11")]),
    service("ns2", "svc2", {
      clusterIP: "198.51.100.42",
      ports: [{ name: "p8080", port: 8080, protocol: "TCP" }],
    }),
    endpointSlice("ns2", "svc2", [ep("192.0.2.21")], {
      ports: [{ name: "p8080", port: 8080, protocol: "TCP" }],
    }),
  );
}

describe("full and partial syncs", () => {
  test("the first sync is full: jump rules ensured, every chain written", async () => {
    const s = setup();
    twoServices(s);
    const payload = await s.sync();
    expect(natChains(payload)).toEqual([
      "KUBE-SERVICES",
      "KUBE-NODEPORTS",
      "KUBE-POSTROUTING",
      "KUBE-MARK-MASQ",
      names("ns1/svc1:p80").svc,
      sep("ns1/svc1:p80", "192.0.2.11:8080"),
      names("ns2/svc2:p8080").svc,
      sep("ns2/svc2:p8080", "192.0.2.21:8080"),
    ]);
    expect(s.ipt.rules("nat", "PREROUTING")).toEqual([
      `-m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
    ]);
    expect(s.ipt.rules("nat", "POSTROUTING")).toEqual([
      `-m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING`,
    ]);
    expect(s.ipt.rules("filter", "INPUT")).toEqual([
      "-j KUBE-FIREWALL",
      `-m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL`,
      `-m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS`,
      `-m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES`,
    ]);
    expect(await histogramCount(s.metrics.syncFullProxyRulesLatency)).toBe(1);
  });

  test("the restore input is handed over in pieces, never joined into one string", async () => {
    const s = setup();
    twoServices(s);
    await s.sync();
    const input = s.ipt.inputs.at(-1);
    if (input === undefined || typeof input === "string")
      throw new Error("the payload reached the client as one string");
    const pieces = [...input];
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join("")).toBe(s.ipt.restores.at(-1)!);
    expect(pieces.join("")).toStartWith("*filter\n");
    // Read again (as an error's context reads it), it gives the same text.
    expect([...input].join("")).toBe(pieces.join(""));
  });

  test("a sync without changes rewrites only the top-level chains", async () => {
    const s = setup();
    twoServices(s);
    await s.sync();
    const ensured = s.ipt.rules("filter", "FORWARD").length;
    const payload = await s.sync();
    expect(natChains(payload)).toEqual([
      "KUBE-SERVICES",
      "KUBE-NODEPORTS",
      "KUBE-POSTROUTING",
      "KUBE-MARK-MASQ",
    ]);
    // KUBE-SERVICES is complete again, so the services stay reachable.
    expect(chainRules(payload, "nat", "KUBE-SERVICES")).toHaveLength(3);
    expect(s.ipt.rules("nat", names("ns1/svc1:p80").svc)).toHaveLength(2);
    expect(s.ipt.rules("filter", "FORWARD")).toHaveLength(ensured);
    expect(await histogramCount(s.metrics.syncPartialProxyRulesLatency)).toBe(1);
  });

  test("an endpoint change rewrites that service's chains and deletes the stale endpoint chain", async () => {
    const s = setup();
    twoServices(s);
    await s.sync();
    s.cluster.apply(endpointSlice("ns1", "svc1", [ep("192.0.2.12")]));
    const payload = await s.sync();
    const old = sep("ns1/svc1:p80", "192.0.2.11:8080");
    const fresh = sep("ns1/svc1:p80", "192.0.2.12:8080");
    expect(natChains(payload)).toEqual([
      "KUBE-SERVICES",
      "KUBE-NODEPORTS",
      "KUBE-POSTROUTING",
      "KUBE-MARK-MASQ",
      names("ns1/svc1:p80").svc,
      fresh,
      old,
    ]);
    expect(chainRules(payload, "nat", old)).toEqual([]);
    expect(tableSection(payload, "nat")).toContain(`-X ${old}`);
    expect(s.ipt.chains("nat")).not.toContain(old);
    expect(s.ipt.rules("nat", names("ns1/svc1:p80").svc)[1]).toContain(`-j ${fresh}`);
    // The other service's chains were neither written nor disturbed.
    expect(payload).not.toContain(`:${names("ns2/svc2:p8080").svc}`);
    expect(s.ipt.rules("nat", names("ns2/svc2:p8080").svc)).toHaveLength(2);
  });

  test("a deleted service's chains are flushed and deleted; others are untouched", async () => {
    const s = setup();
    twoServices(s);
    await s.sync();
    s.cluster.remove(service("ns2", "svc2", {}));
    const payload = await s.sync();
    const gone = [names("ns2/svc2:p8080").svc, sep("ns2/svc2:p8080", "192.0.2.21:8080")].sort();
    expect(tableSection(payload, "nat").filter((l) => l.startsWith("-X "))).toEqual(
      gone.map((c) => `-X ${c}`),
    );
    for (const c of gone) expect(s.ipt.chains("nat")).not.toContain(c);
    expect(s.ipt.chains("nat")).toContain(names("ns1/svc1:p80").svc);
    expect(chainRules(payload, "nat", "KUBE-SERVICES")).toHaveLength(2);
  });

  test("a new service without endpoints gets only its REJECT rule, then its chains", async () => {
    const s = setup();
    twoServices(s);
    await s.sync();
    s.cluster.apply(service("ns4", "svc4", { clusterIP: "198.51.100.44" }));
    const first = await s.sync();
    expect(chainRules(first, "filter", "KUBE-SERVICES")).toHaveLength(1);
    expect(natChains(first)).toHaveLength(4);
    s.cluster.apply(endpointSlice("ns4", "svc4", [ep("192.0.2.41")]));
    const second = await s.sync();
    expect(chainRules(second, "filter", "KUBE-SERVICES")).toEqual([]);
    expect(natChains(second).slice(4)).toEqual([
      names("ns4/svc4:p80").svc,
      sep("ns4/svc4:p80", "192.0.2.41:8080"),
    ]);
  });

  test("leftover chains from an earlier kube-proxy are swept; foreign chains are kept", async () => {
    const s = setup();
    await s.ipt.ensureChain("nat", "KUBE-SEP-LEFTOVER0000000");
    await s.ipt.ensureChain("nat", "KUBE-SVC-LEFTOVER0000000");
    await s.ipt.ensureChain("nat", "CNI-HOSTPORT-DNAT");
    twoServices(s);
    const payload = await s.sync();
    expect(tableSection(payload, "nat").filter((l) => l.startsWith("-X "))).toEqual([
      "-X KUBE-SEP-LEFTOVER0000000",
      "-X KUBE-SVC-LEFTOVER0000000",
    ]);
    expect(s.ipt.chains("nat")).toContain("CNI-HOSTPORT-DNAT");
    expect(s.ipt.chains("nat")).not.toContain("KUBE-SVC-LEFTOVER0000000");
  });
});

describe("failures", () => {
  test("a failed restore leaves the tables as they were and forces a full sync", async () => {
    const logger = memoryLogger();
    const s = setup({ logger });
    twoServices(s);
    await s.sync();
    const before = await s.ipt.saveAll();
    s.cluster.apply(endpointSlice("ns1", "svc1", [ep("192.0.2.12")]));
    // Line 4: a partial sync leaves the unchanged filter table out (*filter, COMMIT, *nat, ...).
    s.ipt.fake.failNextRestore(4);
    await expect(s.sync()).rejects.toThrow("injected failure");
    expect(await s.ipt.saveAll()).toBe(before);
    expect(await value(s.metrics.iptablesRestoreFailures)).toBe(1);
    expect(await value(s.metrics.iptablesPartialRestoreFailures)).toBe(1);
    const log = logger.lines.join("\n");
    expect(log).toContain("Failed to execute iptables-restore");
    // The typed error names line 4: the lines around it are logged for the operator.
    expect(log).toContain("3: *nat");
    expect(log).toContain("> 4: :KUBE-SERVICES - [0:0]");

    // The change set is consumed, so the retry must be a full sync that catches up.
    const retry = await s.sync();
    expect(natChains(retry)).toContain(names("ns2/svc2:p8080").svc);
    expect(s.ipt.rules("nat", names("ns1/svc1:p80").svc)[1]).toContain(
      sep("ns1/svc1:p80", "192.0.2.12:8080"),
    );
    expect(s.ipt.chains("nat")).not.toContain(sep("ns1/svc1:p80", "192.0.2.11:8080"));
    expect(await histogramCount(s.metrics.syncFullProxyRulesLatency)).toBe(2);
  });

  test("a failed full sync is not counted as a partial failure", async () => {
    const s = setup();
    twoServices(s);
    s.ipt.fake.failNextRestore(2);
    await expect(s.sync()).rejects.toThrow();
    expect(await value(s.metrics.iptablesRestoreFailures)).toBe(1);
    expect(await value(s.metrics.iptablesPartialRestoreFailures)).toBe(0);
  });

  test("failing to ensure a jump rule fails the sync before any restore", async () => {
    const s = setup();
    twoServices(s);
    s.ipt.ensureRuleError = new Error("iptables: Resource temporarily unavailable.");
    await expect(s.sync()).rejects.toThrow("Resource temporarily unavailable");
    expect(s.ipt.restores).toHaveLength(0);
    s.ipt.ensureRuleError = undefined;
    await s.sync();
    expect(s.ipt.restores).toHaveLength(1);
  });
});

describe("when full syncs happen", () => {
  test("canaries: created first, a flush is detected and the next sync restores everything", async () => {
    const s = setup();
    twoServices(s);
    expect(await s.proxier.checkCanaries()).toBe(false);
    for (const t of ["mangle", "nat", "filter"] as Table[]) {
      expect(await s.ipt.chainExists(t, "KUBE-PROXY-CANARY")).toBe(true);
    }
    await s.sync();
    expect(await s.proxier.checkCanaries()).toBe(false);
    expect(await s.sync()).not.toContain(`:${names("ns1/svc1:p80").svc}`);

    s.ipt.flushAll();
    expect(await s.proxier.checkCanaries()).toBe(true);
    expect(await s.ipt.chainExists("mangle", "KUBE-PROXY-CANARY")).toBe(true);
    const payload = await s.sync();
    expect(natChains(payload)).toContain(names("ns1/svc1:p80").svc);
    expect(s.ipt.rules("nat", "PREROUTING")).toHaveLength(1);
    expect(s.ipt.rules("nat", names("ns2/svc2:p8080").svc)).toHaveLength(2);
  });

  test("the canary monitor polls every sync period and reports a flush", async () => {
    const s = setup();
    let flushes = 0;
    const monitor = s.proxier.canaryMonitor(() => flushes++);
    monitor.start();
    await s.clock.advanceAsync(0);
    expect(await s.ipt.chainExists("nat", "KUBE-PROXY-CANARY")).toBe(true);
    s.ipt.flushAll();
    await s.clock.advanceAsync(s.config.iptables.syncPeriod);
    expect(flushes).toBe(1);
    await s.clock.advanceAsync(s.config.iptables.syncPeriod);
    expect(flushes).toBe(1);
    monitor.stop();
  });

  test("an hour after the last full sync the next sync is full again", async () => {
    const s = setup();
    twoServices(s);
    await s.sync();
    s.clock.advance(FULL_SYNC_PERIOD_MS - 1000);
    expect(natChains(await s.sync())).toHaveLength(4);
    s.clock.advance(1000);
    expect(natChains(await s.sync())).toHaveLength(8);
    expect(natChains(await s.sync())).toHaveLength(4);
  });

  test("a node label change rewrites everything (topology depends on it)", async () => {
    const s = setup();
    twoServices(s);
    await s.sync();
    s.cluster.node = { ...s.cluster.node!, labels: { "topology.kubernetes.io/zone": "zone-a" } };
    expect(natChains(await s.sync())).toHaveLength(8);
    expect(natChains(await s.sync())).toHaveLength(4);
  });

  test("NodeCIDR mode: the pod CIDR arriving with the Node triggers a full sync", async () => {
    const s = setup({
      config: (c) => {
        c.detectLocalMode = "NodeCIDR";
      },
    });
    const node = s.cluster.node;
    s.cluster.node = undefined;
    twoServices(s);
    const before = await s.sync();
    expect(chainRules(before, "nat", names("ns1/svc1:p80").svc)[0]).not.toContain("KUBE-MARK-MASQ");
    s.cluster.node = node;
    const after = await s.sync();
    expect(chainRules(after, "nat", names("ns1/svc1:p80").svc)[0]).toContain(
      "! -s 192.0.2.0/25 -j KUBE-MARK-MASQ",
    );
  });
});

describe("large clusters", () => {
  function bigCluster(s: Setup) {
    for (let i = 0; i < 11; i++) {
      s.cluster.apply(service("ns", `s${i}`, { clusterIP: `198.51.100.${i + 1}` }));
      const eps = [];
      for (let j = 0; j < 100; j++) eps.push(ep(`192.0.${i}.${j + 1}`));
      s.cluster.apply(endpointSlice("ns", `s${i}`, eps));
    }
  }

  test("no hourly full sync, and the iptables-save sweep runs at most once per sync period", async () => {
    const s = setup();
    bigCluster(s);
    await s.sync();
    expect(s.proxier.inLargeClusterMode).toBe(true);
    expect(s.ipt.saveCalls).toBe(1);
    await s.sync();
    expect(s.ipt.saveCalls).toBe(1);
    s.clock.advance(FULL_SYNC_PERIOD_MS + 1);
    const payload = await s.sync();
    expect(natChains(payload)).toHaveLength(4);
    expect(s.ipt.saveCalls).toBe(2);
  });

  test("the sweep's period runs from the end of the sync that swept: a restore longer than the period does not make the next change sweep", async () => {
    const s = setup();
    bigCluster(s);
    const restoreAll = s.ipt.restoreAll.bind(s.ipt);
    let restoreMs = s.config.iptables.syncPeriod + 5_000;
    s.ipt.restoreAll = async (...args: Parameters<typeof restoreAll>) => {
      s.clock.advance(restoreMs);
      return restoreAll(...args);
    };
    await s.sync();
    expect(s.ipt.saveCalls).toBe(1);
    restoreMs = 10;
    s.cluster.apply(endpointSlice("ns", "s0", [ep("192.0.0.1"), ep("192.0.0.2")]));
    await s.sync();
    expect(s.ipt.saveCalls).toBe(1);
    s.clock.advance(s.config.iptables.syncPeriod + 1);
    await s.sync();
    expect(s.ipt.saveCalls).toBe(2);
  });

  test("a sync carrying a change leaves a due sweep to the next sync without one, unless it is a period overdue", async () => {
    const s = setup();
    bigCluster(s);
    await s.sync();
    expect(s.ipt.saveCalls).toBe(1);
    s.clock.advance(s.config.iptables.syncPeriod + 1);
    s.cluster.apply(endpointSlice("ns", "s0", [ep("192.0.0.1"), ep("192.0.0.2")]));
    await s.sync();
    expect(s.ipt.saveCalls).toBe(1);
    await s.sync();
    expect(s.ipt.saveCalls).toBe(2);
    s.clock.advance(2 * s.config.iptables.syncPeriod + 1);
    s.cluster.apply(endpointSlice("ns", "s0", [ep("192.0.0.1")]));
    await s.sync();
    expect(s.ipt.saveCalls).toBe(3);
  });

  test("a full sync requested while a sweep is due leaves the sweep to the partial sync after it", async () => {
    const s = setup();
    bigCluster(s);
    await s.sync();
    expect(s.ipt.saveCalls).toBe(1);
    s.clock.advance(FULL_SYNC_PERIOD_MS + 1);
    s.proxier.requestFullSync();
    await s.sync();
    expect(s.ipt.saveCalls).toBe(1);
    await s.sync();
    expect(s.ipt.saveCalls).toBe(2);
  });

  test("between sweeps, chains a changed service stopped using are still deleted", async () => {
    const s = setup();
    bigCluster(s);
    await s.sync();
    const gone = sep("ns/s3:p80", "192.0.3.1:8080");
    s.cluster.apply(endpointSlice("ns", "s3", [ep("192.0.3.200")]));
    const payload = await s.sync();
    expect(s.ipt.saveCalls).toBe(1);
    const deleted = tableSection(payload, "nat").filter((l) => l.startsWith("-X "));
    expect(deleted).toHaveLength(100);
    expect(deleted).toContain(`-X ${gone}`);
    expect(s.ipt.chains("nat")).not.toContain(gone);
    expect(s.ipt.rules("nat", names("ns/s3:p80").svc)).toHaveLength(2);
  });

  test("leaving large-cluster mode restores the comments on rewritten chains", async () => {
    const s = setup();
    bigCluster(s);
    await s.sync();
    for (let i = 1; i < 11; i++) s.cluster.remove(service("ns", `s${i}`, {}));
    s.cluster.apply(endpointSlice("ns", "s0", [ep("192.0.0.1")]));
    const payload = await s.sync();
    expect(s.proxier.inLargeClusterMode).toBe(false);
    const svc = names("ns/s0:p80").svc;
    expect(chainRules(payload, "nat", svc)[1]).toContain(`--comment "ns/s0:p80 -> 192.0.0.1:8080"`);
  });
});

describe("after a successful restore", () => {
  test("rule-count metrics match what the tables hold", async () => {
    const s = setup();
    twoServices(s);
    await s.sync();
    const natRules = (await s.ipt.save("nat")).split("\n").filter((l) => l.startsWith("-A KUBE-")).length;
    const filterRules = (await s.ipt.save("filter"))
      .split("\n")
      .filter((l) => l.startsWith("-A KUBE-")).length;
    expect(await value(s.metrics.iptablesRulesTotal, { table: "nat" })).toBe(natRules);
    expect(await value(s.metrics.iptablesRulesTotal, { table: "filter" })).toBe(filterRules);
    // A partial sync writes fewer rules but the total still counts the unchanged ones.
    await s.sync();
    expect(await value(s.metrics.iptablesRulesTotal, { table: "nat" })).toBe(natRules);
    expect(await value(s.metrics.iptablesRulesLastSync, { table: "nat" })).toBe(natRules - 8); // two services x (SVC 2 + SEP 2) not rewritten
    expect(await value(s.metrics.syncProxyRulesLastTimestamp)).toBeGreaterThan(0);
  });

  test("network programming latency is observed from the slices' trigger times", async () => {
    const trigger = new Date(Date.now() + 60_000);
    const s = setup({ deps: { wallClock: () => trigger.getTime() + 2500 } });
    s.cluster.apply(service("ns1", "svc1", { clusterIP: "198.51.100.41" }));
    const slice = endpointSlice("ns1", "svc1", [ep("192.0.2.11")]);
    slice.metadata!.annotations = {
      "endpoints.kubernetes.io/last-change-trigger-time": trigger.toISOString(),
    };
    s.cluster.apply(slice);
    await s.sync();
    const values = (await s.metrics.networkProgrammingLatency.get()).values as {
      metricName?: string;
      value: number;
    }[];
    expect(values.find((v) => v.metricName?.endsWith("_sum"))?.value).toBeCloseTo(2.5);
    expect(values.find((v) => v.metricName?.endsWith("_count"))?.value).toBe(1);
  });

  test("health check servers get the health check ports and local endpoint counts", async () => {
    const seen: { services?: ReadonlyMap<string, number>; endpoints?: ReadonlyMap<string, number> } = {};
    const s = setup({
      deps: {
        healthCheck: {
          syncServices: (m) => {
            seen.services = new Map(m);
          },
          syncEndpoints: (m) => {
            seen.endpoints = new Map(m);
          },
        },
      },
    });
    s.cluster.apply(
      service(
        "ns1",
        "svc1",
        {
          type: "LoadBalancer",
          clusterIP: "198.51.100.41",
          externalTrafficPolicy: "Local",
          healthCheckNodePort: 31000,
          ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3001 }],
        },
        { loadBalancer: { ingress: [{ ip: "203.0.113.100" }] } },
      ),
      endpointSlice("ns1", "svc1", [ep("192.0.2.11", { node: "node-a" })]),
    );
    await s.sync();
    expect(seen.services).toEqual(new Map([["ns1/svc1", 31000]]));
    expect(seen.endpoints).toEqual(new Map([["ns1/svc1", 1]]));
  });

  test("nfacct counters are created on the full sync; a scrape reads them as counters", async () => {
    const nfacct = fakeNfacct();
    const s = setup({ deps: { nfacct: nfacct.client } });
    registerNfacctMetrics(s.metrics.registry, nfacct.client, nullLogger);
    twoServices(s);
    await s.sync();
    expect(nfacct.fake.names.sort()).toEqual([
      "ct_state_invalid_dropped_pkts",
      "localhost_nps_accepted_pkts",
    ]);
    nfacct.fake.count("ct_state_invalid_dropped_pkts", 7);
    nfacct.fake.count("localhost_nps_accepted_pkts", 3);
    const text = await s.metrics.registry.metrics();
    expect(text).toContain("# TYPE kubeproxy_iptables_ct_state_invalid_dropped_packets_total counter\n");
    expect(text).toContain("\nkubeproxy_iptables_ct_state_invalid_dropped_packets_total 7\n");
    expect(text).toContain("\nkubeproxy_iptables_localhost_nodeports_accepted_packets_total 3\n");
  });
});

describe("the filter table in partial syncs", () => {
  test("left out when unchanged, written when it changes, always written by a full sync", async () => {
    const s = setup({});
    twoServices(s);
    const first = await s.sync();
    expect(first).toContain(":KUBE-SERVICES - [0:0]\n");
    const filterOf = (payload: string) => payload.slice(0, payload.indexOf("COMMIT"));
    // An endpoint change of a Service that keeps endpoints: the filter table is as it was.
    s.cluster.apply(endpointSlice("ns1", "svc1", [ep("192.0.2.12")]));
    const partial = await s.sync();
    expect(filterOf(partial)).toBe("*filter\n");
    // The Service loses its endpoints: a REJECT rule appears, so the filter table is written.
    s.cluster.apply(endpointSlice("ns1", "svc1", []));
    const rejecting = await s.sync();
    expect(filterOf(rejecting)).toContain("has no endpoints");
    expect(s.ipt.rules("filter", "KUBE-SERVICES").join("\n")).toContain("has no endpoints");
    // The hourly full sync writes it even though nothing changed.
    s.clock.advance(FULL_SYNC_PERIOD_MS);
    expect(filterOf(await s.sync())).toContain("has no endpoints");
  });
});

describe("a big filter table in partial syncs (filter-edits.ts)", () => {
  // Every table counts as big: a threshold of 1 rule.
  const big = () => setup({ deps: { filterLinesForEdits: 1 } });
  const sectionOf = (payload: string, table: string) => {
    const from = payload.indexOf(`*${table}\n`);
    return payload.slice(from, payload.indexOf("COMMIT", from));
  };
  const filterTotal = (s: Setup) => value(s.metrics.iptablesRulesTotal, { table: "filter" });
  const filterWritten = (s: Setup) => value(s.metrics.iptablesRulesLastSync, { table: "filter" });

  test("a Service before its endpoints: its REJECT is appended, then left (stale) when they come, then goes a sync period later", async () => {
    const s = big();
    twoServices(s);
    await s.sync();
    s.cluster.apply(service("ns3", "new", { clusterIP: "198.51.100.43" }));
    const added = await s.sync();
    // Only the new rule, with no chain declaration (which would flush the chain).
    expect(sectionOf(added, "filter").split("\n").filter(Boolean)).toEqual([
      "*filter",
      expect.stringMatching(
        /^-A KUBE-SERVICES -m comment --comment "ns3\/new:p80 has no endpoints" .* -j REJECT/,
      ),
    ]);
    expect(s.ipt.rules("filter", "KUBE-SERVICES").join("\n")).toContain("ns3/new:p80 has no endpoints");
    expect(await filterWritten(s)).toBe(1);

    s.cluster.apply(endpointSlice("ns3", "new", [ep("192.0.2.31")]));
    const served = await s.sync();
    // The nat rules are written; the filter table is left as it is, the REJECT stale in it.
    expect(sectionOf(served, "nat")).toContain("ns3/new:p80 cluster IP");
    expect(sectionOf(served, "filter")).toBe("*filter\n");
    expect(s.ipt.rules("filter", "KUBE-SERVICES").join("\n")).toContain("ns3/new:p80 has no endpoints");
    const held = await filterTotal(s);
    expect(await filterWritten(s)).toBe(0);

    // Endpoints gone again: the stale rule is the wanted one, so nothing is written.
    s.cluster.apply(endpointSlice("ns3", "new", []));
    expect(sectionOf(await s.sync(), "filter")).toBe("*filter\n");
    expect(s.ipt.rules("filter", "KUBE-SERVICES").filter((r) => r.includes("ns3/new"))).toHaveLength(1);
    s.cluster.apply(endpointSlice("ns3", "new", [ep("192.0.2.31")]));
    await s.sync();

    // One sync period after it went stale, the next sync writes the table whole, nat first.
    s.clock.advance(s.config.iptables.syncPeriod);
    const whole = await s.sync();
    expect(whole.indexOf("*nat")).toBeLessThan(whole.indexOf("*filter"));
    expect(sectionOf(whole, "filter")).toContain(":KUBE-SERVICES - [0:0]");
    expect(s.ipt.rules("filter", "KUBE-SERVICES").join("\n")).not.toContain("ns3/new");
    expect(await filterTotal(s)).toBe(held - 1);
  });

  test("any other removal, or a new rule for a port with a stale one, writes the table whole", async () => {
    const s = big();
    s.cluster.apply(
      service("ns1", "np", {
        type: "NodePort",
        clusterIP: "198.51.100.44",
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30044 }],
      }),
    );
    await s.sync();
    expect(s.ipt.rules("filter", "KUBE-EXTERNAL-SERVICES").join("\n")).toContain(
      "ns1/np:p80 has no endpoints",
    );
    // Its endpoints arrive: the NodePort REJECT (KUBE-EXTERNAL-SERVICES) must go now.
    s.cluster.apply(endpointSlice("ns1", "np", [ep("192.0.2.44")]));
    const served = await s.sync();
    expect(served.indexOf("*nat")).toBeLessThan(served.indexOf("*filter"));
    expect(s.ipt.rules("filter", "KUBE-EXTERNAL-SERVICES")).toEqual([]);
    expect(s.ipt.rules("filter", "KUBE-SERVICES")).toEqual([]);

    // A ClusterIP Service loses its endpoints, gets them back (stale REJECT), and then becomes
    // internalTrafficPolicy Local with no local endpoint: its DROP must not sit behind the REJECT.
    s.cluster.apply(
      service("ns2", "itp", { clusterIP: "198.51.100.45" }),
      endpointSlice("ns2", "itp", [ep("192.0.2.45", { node: "node-b" })]),
    );
    await s.sync();
    s.cluster.apply(endpointSlice("ns2", "itp", []));
    await s.sync();
    s.cluster.apply(endpointSlice("ns2", "itp", [ep("192.0.2.45", { node: "node-b" })]));
    await s.sync();
    expect(s.ipt.rules("filter", "KUBE-SERVICES").join("\n")).toContain("ns2/itp:p80 has no endpoints");
    s.cluster.apply(service("ns2", "itp", { clusterIP: "198.51.100.45", internalTrafficPolicy: "Local" }));
    const local = await s.sync();
    expect(sectionOf(local, "filter")).toContain(":KUBE-SERVICES - [0:0]");
    const rules = s.ipt.rules("filter", "KUBE-SERVICES").filter((r) => r.includes("ns2/itp"));
    expect(rules).toHaveLength(1);
    expect(rules[0]).toContain("-j DROP");
  });
});
