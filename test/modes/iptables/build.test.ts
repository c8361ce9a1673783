// The iptables mode assembly a real run uses, over fakes for the tools and a temporary
// directory as the sysctl root: route_localnet and the localnet guard come from one decision,
// and nf_conntrack_tcp_be_liberal is read from the host's sysctls.

import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { defaultProxyConfig } from "../../../src/cli/index.ts";
import { DEFAULT_FEATURE_GATES } from "../../../src/config/feature-gates.ts";
import type { ProxyConfig } from "../../../src/config/types.ts";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { FakeIptables } from "../../../src/host/iptables/testing/fake.ts";
import { FakeNetlink } from "../../../src/host/netlink/testing/fake.ts";
import { createSysctlClient } from "../../../src/host/sysctl/client.ts";
import { memoryLogger } from "../../../src/log/logger.ts";
import { buildIptablesMode } from "../../../src/modes/iptables/build.ts";
import { SyncHistory } from "../../../src/proxy/debug-state/history.ts";
import { createMetrics } from "../../../src/proxy/metrics/metrics.ts";
import { tempDir } from "../../support/binary.ts";
import { Cluster, endpointSlice, ep, service } from "./harness.ts";

const ROUTE_LOCALNET = "net/ipv4/conf/all/route_localnet";
const TCP_BE_LIBERAL = "net/netfilter/nf_conntrack_tcp_be_liberal";

function sysctlRoot(values: Record<string, number>): string {
  const root = tempDir("kpts-sysroot-");
  for (const [name, value] of Object.entries(values)) {
    const file = join(root, "proc/sys", name);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${value}\n`);
  }
  return root;
}

const readSysctl = (root: string, name: string) => readFileSync(join(root, "proc/sys", name), "utf8").trim();

async function build(root: string, patch: (c: ProxyConfig) => void = () => {}) {
  const exec = new FakeExec();
  const ipt = { IPv4: new FakeIptables(), IPv6: new FakeIptables() };
  ipt.IPv4.install(exec, "IPv4");
  ipt.IPv6.install(exec, "IPv6");
  const net = new FakeNetlink();
  net.install(exec);
  net.addDevice("eth0", "ether", { addresses: ["203.0.113.10/24"] });
  const config = defaultProxyConfig();
  patch(config);
  const log = memoryLogger();
  const mode = await buildIptablesMode({
    exec,
    config,
    featureGates: DEFAULT_FEATURE_GATES,
    metrics: createMetrics(),
    log,
    nodeName: "node-a",
    nodeIPs: { IPv4: "203.0.113.10", IPv6: "::1" },
    sysctl: createSysctlClient({ root }),
    backend: "nft",
    nfacct: false,
  });
  const cluster = new Cluster().apply(
    service("ns", "web", { clusterIP: "198.51.100.41" }),
    endpointSlice("ns", "web", [ep("192.0.2.11")]),
  );
  const history = new SyncHistory();
  const first = history.begin({ services: 1, endpoints: 1 });
  await mode.proxier.sync({ ...cluster.input(), note: first });
  first.finish();
  return { ipt, log, mode, cluster, history };
}

const hasGuard = (ipt: FakeIptables) =>
  ipt.rules("filter", "KUBE-FIREWALL").some((r) => r.includes("block incoming localnet connections"));
const dropsInvalid = (ipt: FakeIptables) =>
  ipt.rules("filter", "KUBE-FORWARD").some((r) => r.includes("--ctstate INVALID") && r.endsWith("-j DROP"));

describe("iptables mode assembly", () => {
  test("localhost NodePorts on: route_localnet set to 1 and the IPv4 guard installed", async () => {
    const root = sysctlRoot({ [ROUTE_LOCALNET]: 0, [TCP_BE_LIBERAL]: 0 });
    const { ipt } = await build(root);
    expect(readSysctl(root, ROUTE_LOCALNET)).toBe("1");
    expect(hasGuard(ipt.IPv4)).toBe(true);
    expect(hasGuard(ipt.IPv6)).toBe(false);
  });

  test("nodePortAddresses without loopback: route_localnet untouched, no guard, the reason logged", async () => {
    const root = sysctlRoot({ [ROUTE_LOCALNET]: 0, [TCP_BE_LIBERAL]: 0 });
    const { ipt, log } = await build(root, (c) => {
      c.nodePortAddresses = ["203.0.113.0/24"];
    });
    expect(readSysctl(root, ROUTE_LOCALNET)).toBe("0");
    expect(hasGuard(ipt.IPv4)).toBe(false);
    expect(
      log.lines.some((l) => l.includes("Localhost NodePorts are off") && l.includes("no loopback")),
    ).toBe(true);
  });

  test("nf_conntrack_tcp_be_liberal=1 on the host: no INVALID drop in either family", async () => {
    const root = sysctlRoot({ [ROUTE_LOCALNET]: 0, [TCP_BE_LIBERAL]: 1 });
    const { ipt, log } = await build(root);
    expect(dropsInvalid(ipt.IPv4)).toBe(false);
    expect(dropsInvalid(ipt.IPv6)).toBe(false);
    expect(log.lines.some((l) => l.includes("nf_conntrack_tcp_be_liberal set"))).toBe(true);
  });

  test("nf_conntrack_tcp_be_liberal=0 (or absent): the INVALID drop is installed", async () => {
    const { ipt } = await build(sysctlRoot({ [ROUTE_LOCALNET]: 0, [TCP_BE_LIBERAL]: 0 }));
    expect(dropsInvalid(ipt.IPv4)).toBe(true);
    const absent = await build(sysctlRoot({ [ROUTE_LOCALNET]: 0 }));
    expect(dropsInvalid(absent.ipt.IPv4)).toBe(true);
  });

  test("/debug/state: the backend and why; each family notes its sync, full then partial, with the rules written", async () => {
    const { mode, cluster, history } = await build(sysctlRoot({ [ROUTE_LOCALNET]: 0, [TCP_BE_LIBERAL]: 0 }));
    expect(mode.backend).toBe("nft");
    expect(mode.backendReason).toBe("--iptables-backend=nft");
    cluster.apply(endpointSlice("ns", "web", [ep("192.0.2.11"), ep("192.0.2.12")]));
    const second = history.begin({ services: 0, endpoints: 1 });
    await mode.proxier.sync({ ...cluster.input(), note: second });
    second.finish();
    const [partial, full] = history.records();
    // Every family the mode proxies (this sysctl root has no IPv6: IPv4 alone).
    expect(full?.families.map((f) => [f.family, f.fullSync])).toEqual(mode.families.map((f) => [f, true]));
    expect(full?.families[0]?.written?.count).toBeGreaterThan(partial?.families[0]?.written?.count ?? 0);
    expect(partial).toMatchObject({ kind: "partial", result: "ok" });
    expect(partial?.families[0]).toMatchObject({
      family: "IPv4",
      fullSync: false,
      written: { unit: "rules" },
    });
    expect(partial?.families[0]?.written?.count).toBeGreaterThan(0);
  });

  test("route_localnet that cannot be written stops the assembly (upstream refuses to start)", async () => {
    // No route_localnet file under the root: the write fails like a missing sysctl.
    await expect(build(sysctlRoot({ [TCP_BE_LIBERAL]: 0 }))).rejects.toThrow(/cannot set required sysctl/);
  });
});
