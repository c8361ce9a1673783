// nftables mode end to end, on the real kernel: the compiled binary runs with
// --proxy-mode=nftables as a daemon in the node namespace of a netns topology
// (test/support/netns.ts has the address plan), writes `table ip kube-proxy` from a --state
// file, and real TCP/UDP traffic from clients, pods and the node proves each Service behaviour:
// the cases of test/e2e/iptables.test.ts (test/support/e2e-service-cases.ts), read back with
// nft (test/support/e2e-mode-rules.ts). Then one node moves iptables -> nftables -> iptables
// and keeps neither mode's rules behind.
//
// Run as root (iproute2, iptables, nft, conntrack installed):
// `node_modules/.bin/bun test test/e2e/nftables.test.ts`.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/binary.ts";
import { renderState, type ServiceSpec, writeStateFile } from "../support/e2e-cluster.ts";
import {
  E2E_TEST_TIMEOUT_MS,
  e2eTest,
  type Harness,
  tearDownHarness,
  withDiagnostics,
} from "../support/e2e-harness.ts";
import {
  iptablesSave,
  kubeProxyBinary,
  rulesView,
  startKubeProxy,
  waitForView,
} from "../support/e2e-kubeproxy.ts";
import { IPTABLES_RULES, type ModeRules, NFTABLES_RULES } from "../support/e2e-mode-rules.ts";
import {
  canonicalTable,
  type NftTableView,
  nftDiagnostics,
  nftTables,
  serviceChainsWithEndpoints,
  upstreamTableInput,
} from "../support/e2e-nft.ts";
import {
  describeServiceSetSwitch,
  describeServiceTraffic,
  firstSync,
  HTTP,
  NODE,
  NODEPORT,
  PODS,
  setUp,
  WEB,
} from "../support/e2e-service-cases.ts";
import { describeSummary, probe, probeOnce, startServer } from "../support/e2e-traffic.ts";
import { scaled } from "../support/kernel-vm.ts";
import { ADDR, createTopology } from "../support/netns.ts";

/** As the shared cases see nftables mode: an endpoint a policy chain DNATs to counts as its chain. */
const NFT_RULES: ModeRules<NftTableView> = { ...NFTABLES_RULES, serviceChains: serviceChainsWithEndpoints };

describeServiceTraffic(NFT_RULES);
describeServiceSetSwitch(NFT_RULES);

// ---------------------------------------------------------------------------------------------
// One node, three daemons in turn: iptables, nftables, iptables again. Each start must clean up
// after the other mode (cleanupOtherModes), and traffic must work at every step.

/** Chains (nat, filter, mangle) only kube-proxy's iptables mode makes; kubelet's chains may stay. */
const IPTABLES_MODE_CHAIN =
  /^:(KUBE-(?:SERVICES|NODEPORTS|POSTROUTING|MARK-MASQ|PROXY-CANARY|EXTERNAL-SERVICES|FORWARD|PROXY-FIREWALL|(?:SVC|SVL|EXT|FW|SEP)-[A-Z2-7]{16})) /;

async function iptablesModeChains(h: Harness): Promise<string[]> {
  const out: string[] = [];
  for (const table of ["nat", "filter", "mangle"] as const) {
    for (const line of (await iptablesSave(h.topo!, table)).split("\n")) {
      const m = IPTABLES_MODE_CHAIN.exec(line);
      if (m) out.push(`${table} ${m[1]}`);
    }
  }
  return out.sort();
}

const SWITCH_PODS = PODS.slice(0, 4);
const SWITCH_SET = [WEB, NODEPORT];

/** ClusterIP (TCP and UDP, from a pod and from the node) and NodePort (from the client) work. */
async function switchTrafficWorks(h: Harness): Promise<void> {
  for (const from of ["p4", "node"]) {
    const tcp = await probe(h.topo!, from, { target: `${WEB.clusterIP}:80`, count: 5 });
    expect(tcp.ok, `${from}: ${describeSummary(tcp)}`).toBe(true);
    const udp = await probe(h.topo!, from, { proto: "udp", target: `${WEB.clusterIP}:53`, count: 5 });
    expect(udp.ok, `${from}: ${describeSummary(udp)}`).toBe(true);
  }
  const np = await probe(h.topo!, "client", { target: `${ADDR.node}:30080`, count: 5 });
  expect(np.ok, describeSummary(np)).toBe(true);
}

/** Stops the running daemon and starts one in `rules.mode` on the same node and state file. */
async function restartIn<V>(h: Harness, rules: ModeRules<V>, services = SWITCH_SET): Promise<void> {
  await h.kubeProxy?.kill(3000);
  if (rules.extraDiagnostics) h.extraDiagnostics = rules.extraDiagnostics;
  else delete h.extraDiagnostics;
  h.kubeProxy = startKubeProxy(h.topo!, { stateFile: h.stateFile!, mode: rules.mode });
  // The rules of the daemon before may satisfy the check below: wait for this one's sync first.
  await withDiagnostics(h, `${rules.mode} restart`, () =>
    h.kubeProxy!.waitForOutput(/Memory after the first sync/, scaled(30_000)),
  );
  await firstSync(h, rules, services);
}

describe("switching proxy modes on one node leaves no stale rules", () => {
  const h: Harness = {};

  beforeAll(async () => {
    await setUp(h, IPTABLES_RULES, SWITCH_PODS, SWITCH_SET);
    await firstSync(h, IPTABLES_RULES, SWITCH_SET);
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await tearDownHarness(h);
  }, E2E_TEST_TIMEOUT_MS);

  e2eTest(h, "iptables mode: traffic works, and its chains are in nat and filter", async () => {
    await switchTrafficWorks(h);
    const chains = await iptablesModeChains(h);
    for (const c of ["nat KUBE-SERVICES", "filter KUBE-SERVICES", "nat KUBE-POSTROUTING"]) {
      expect(chains).toContain(c);
    }
    expect(chains.some((c) => c.startsWith("nat KUBE-SVC-"))).toBe(true);
    expect(await nftTables(h.topo!)).not.toContain("table ip kube-proxy");
  });

  e2eTest(h, "then nftables mode: traffic works, no iptables-mode chain is left", async () => {
    await restartIn(h, NFTABLES_RULES);
    await switchTrafficWorks(h);
    expect(await iptablesModeChains(h)).toEqual([]);
    // Nothing else still jumps into one either.
    const { nat, filter } = await rulesView(h.topo!);
    expect(`${nat}\n${filter}`).not.toMatch(
      /-j KUBE-(SERVICES|NODEPORTS|POSTROUTING|MARK-MASQ|SVC-|SEP-|EXT-)/,
    );
    const tables = await nftTables(h.topo!);
    expect(tables).toContain("table ip kube-proxy");
    expect(h.kubeProxy!.exitCode()).toBeUndefined();
  });

  e2eTest(h, "nftables mode restarted over its own table, a Service deleted meanwhile", async () => {
    await h.kubeProxy?.kill(3000);
    writeStateFile(h.stateFile!, renderState(NODE, [WEB]));
    await restartIn(h, NFTABLES_RULES, [WEB]);
    const web = await probe(h.topo!, "p4", { target: `${WEB.clusterIP}:80`, count: 5 });
    expect(web.ok, describeSummary(web)).toBe(true);
    // The deleted NodePort's port is the node's own again: nothing listens there.
    const np = await probeOnce(h.topo!, "client", { target: `${ADDR.node}:30080`, timeoutMs: scaled(2000) });
    expect(np.error, JSON.stringify(np)).toBe("refused");
    // The deleted Service's chains, found by listing the table, are flushed (deleted later).
    const v = await NFTABLES_RULES.source(h.topo!).read();
    const left = [...NFTABLES_RULES.serviceChains(v)].filter((c) => c.includes("/nodeport/"));
    for (const c of left) expect(v.chains.get(c), c).toEqual([]);
    writeStateFile(h.stateFile!, renderState(NODE, SWITCH_SET));
  });

  e2eTest(h, "a full resync (a Node label change) empties each chain before refilling it", async () => {
    await firstSync(h, NFTABLES_RULES, SWITCH_SET);
    const before = await NFTABLES_RULES.source(h.topo!).read();
    const since = h.kubeProxy!.stderr().length;
    // Not the first full sync of this process: the table is known from its own record, not listed.
    writeStateFile(
      h.stateFile!,
      renderState({ ...NODE, labels: { "e2e.kube-proxy-ts/resync": "1" } }, SWITCH_SET),
    );
    const resynced = /"Syncing nftables rules" ipFamily="IPv4" fullSync=true[\s\S]*"SyncProxyRules complete"/;
    const deadline = Date.now() + scaled(30_000);
    while (!resynced.test(h.kubeProxy!.stderr().slice(since))) {
      if (Date.now() > deadline)
        throw new Error(`no full resync logged:\n${h.kubeProxy!.stderr().slice(since)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const after = await NFTABLES_RULES.source(h.topo!).read();
    // (A chain flushed and waiting to be deleted has no rules: left out.)
    const chains = [...NFTABLES_RULES.serviceChains(before)].filter((c) => before.chains.get(c)?.length);
    expect(chains.length).toBeGreaterThan(0);
    // Every chain holds its rules once: flushed before it was refilled, none doubled.
    for (const c of chains) expect(after.chains.get(c), c).toEqual(before.chains.get(c));
    await switchTrafficWorks(h);
  });

  e2eTest(
    h,
    "then iptables mode again: traffic works, and no kube-proxy nftables table is left",
    async () => {
      await restartIn(h, IPTABLES_RULES);
      await switchTrafficWorks(h);
      const tables = await nftTables(h.topo!);
      expect(tables.filter((t) => t.endsWith(" kube-proxy"))).toEqual([]);
      const { nat } = await rulesView(h.topo!);
      expect(nat).toContain(":KUBE-SERVICES ");
    },
  );
});

// ---------------------------------------------------------------------------------------------
// The node itself (and a host-network process on another of its addresses) reaches the
// LoadBalancer IP of an externalTrafficPolicy: Local Service whose endpoints all run elsewhere:
// it is DNATed to one of them (the filter checks run after DNAT since upstream 1.34; before,
// the check for "no local endpoint" dropped it).

const LB_REMOTE: ServiceSpec = {
  name: "lb-remote",
  type: "LoadBalancer",
  clusterIP: "198.51.100.20",
  ports: [{ ...HTTP, nodePort: 30083 }],
  loadBalancerIPs: ["192.0.2.202"],
  externalTrafficPolicy: "Local",
  // Routed through this node like every pod, but the slice says they run on node-b.
  endpoints: [
    { ip: "203.0.113.11", node: "node-b" },
    { ip: "203.0.113.12", node: "node-b" },
  ],
};

describe("nftables mode: the node reaches a Local LoadBalancer with no endpoint of its own", () => {
  const h: Harness = {};

  beforeAll(async () => {
    await setUp(h, NFT_RULES, PODS.slice(0, 2), [LB_REMOTE]);
    await firstSync(h, NFT_RULES, [LB_REMOTE]);
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await tearDownHarness(h);
  }, E2E_TEST_TIMEOUT_MS);

  e2eTest(h, "from the node's primary address and from another of its addresses", async () => {
    for (const source of [undefined, ADDR.nodeToClient2]) {
      const r = await probe(h.topo!, "node", {
        target: "192.0.2.202:80",
        count: 5,
        ...(source ? { source } : {}),
      });
      expect(r.ok, `${source ?? "primary"}: ${describeSummary(r)}`).toBe(true);
    }
    // From outside, the Local policy still finds no endpoint here: dropped, not served.
    const outside = await probeOnce(h.topo!, "client", { target: "192.0.2.202:80", timeoutMs: scaled(1000) });
    expect(outside.ok, JSON.stringify(outside)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// Taking over a node whose `ip kube-proxy` table upstream wrote, in the 1.31 era's layout and in
// 1.37's: after the first sync and the stale-chain deletion the table is exactly what a fresh
// node gets, traffic works, and --cleanup leaves no kube-proxy table.

/** Upstream's test addresses -> this topology's (documentation ranges; pods answer on 8080). */
const UPSTREAM_ADDRESSES: Readonly<Record<string, string>> = {
  "172.30.0.0/16": ADDR.serviceNet,
  "10.0.0.0/8": ADDR.podNet,
  "203.0.113.0/25": ADDR.clientNet,
  "192.168.0.2": ADDR.node,
  "1.2.3.4": "192.0.2.204",
  "5.6.7.8": "192.0.2.205",
  "192.168.99.22": "192.0.2.222",
  "192.168.99.33": "192.0.2.233",
  ...Object.fromEntries([1, 2, 3, 4, 5, 6].map((n) => [`172.30.0.4${n}`, `198.51.100.4${n}`])),
  ...Object.fromEntries([1, 2, 3, 4, 5].map((n) => [`10.180.0.${n}`, `203.0.113.1${n}`])),
};

const GOLDEN_DIR = join(import.meta.dir, "..", "modes", "nftables", "golden");

function describeTakeover(title: string, golden: string): void {
  describe(`nftables mode takes over a table ${title} wrote`, () => {
    const h: Harness = {};
    const services = [WEB, NODEPORT];

    beforeAll(async () => {
      const input = upstreamTableInput(readFileSync(join(GOLDEN_DIR, golden), "utf8"), UPSTREAM_ADDRESSES);
      h.topo = await createTopology({ pods: SWITCH_PODS, client2: true });
      h.extraDiagnostics = nftDiagnostics;
      await Promise.all(SWITCH_PODS.map((p) => startServer(h.topo!, p.name, { tcp: [8080], udp: [5353] })));
      await h.topo.must("node", ["nft", "-f", "-"], { stdin: input, timeoutMs: 10_000 });
      h.dir = tempDir("kpts-e2e-");
      h.stateFile = join(h.dir, "state.yaml");
      writeStateFile(h.stateFile, renderState(NODE, services));
      h.kubeProxy = startKubeProxy(h.topo, { stateFile: h.stateFile, mode: "nftables" });
      await firstSync(h, NFT_RULES, services);
    }, E2E_TEST_TIMEOUT_MS);

    afterAll(async () => {
      await tearDownHarness(h);
    }, E2E_TEST_TIMEOUT_MS);

    e2eTest(h, "traffic works, and the table ends up exactly as a fresh node's", async () => {
      await switchTrafficWorks(h);
      // A sync a second or more after the first deletes the flushed stale chains: a Node label
      // change brings one now rather than at the next periodic sync.
      await new Promise((r) => setTimeout(r, 1100));
      writeStateFile(
        h.stateFile!,
        renderState({ ...NODE, labels: { "e2e.kube-proxy-ts/takeover": "1" } }, services),
      );
      const current = NFT_RULES.source(h.topo!);
      await waitForView(
        current,
        h.kubeProxy,
        (v) => [...v.chains.keys()].every((c) => !c.includes("/") || /(web|nodeport)\//.test(c)),
        "no chain of the upstream table's Services",
        scaled(45_000),
      );
      const taken = await canonicalTable(h.topo!);
      const text = (await NFT_RULES.source(h.topo!).read()).text;
      for (const gone of ["filter-prerouting ", "filter-output-post-dnat", "mark-for-masquerade", "ns1/svc1"])
        expect(text).not.toContain(gone);
      expect(text).toContain(
        "chain filter-input {\n\t\ttype filter hook input priority filter; policy accept;",
      );

      // The same daemon on an empty table: what a fresh node gets.
      await h.kubeProxy!.kill(3000);
      await h.topo!.must("node", ["nft", "delete", "table", "ip", "kube-proxy"]);
      h.kubeProxy = startKubeProxy(h.topo!, { stateFile: h.stateFile!, mode: "nftables" });
      await firstSync(h, NFT_RULES, services);
      await switchTrafficWorks(h);
      expect(taken).toEqual(await canonicalTable(h.topo!));
    });

    e2eTest(h, "--cleanup leaves no kube-proxy table", async () => {
      await h.kubeProxy!.kill(3000);
      const r = await h.topo!.run("node", [kubeProxyBinary(), "--cleanup"], {
        timeoutMs: scaled(30_000),
      });
      expect(r.code, r.stderr).toBe(0);
      expect((await nftTables(h.topo!)).filter((t) => t.endsWith(" kube-proxy"))).toEqual([]);
    });
  });
}

describeTakeover("upstream 1.31 (the v1.31-era layout)", "upstream-1.31-era-overall.nft");
describeTakeover("upstream 1.37", "upstream-1.37-overall.nft");
