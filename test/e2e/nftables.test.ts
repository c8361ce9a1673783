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
import { renderState, writeStateFile } from "../support/e2e-cluster.ts";
import {
  E2E_TEST_TIMEOUT_MS,
  e2eTest,
  type Harness,
  tearDownHarness,
  withDiagnostics,
} from "../support/e2e-harness.ts";
import { iptablesSave, rulesView, startKubeProxy } from "../support/e2e-kubeproxy.ts";
import { IPTABLES_RULES, type ModeRules, NFTABLES_RULES } from "../support/e2e-mode-rules.ts";
import { nftTables } from "../support/e2e-nft.ts";
import {
  describeServiceSetSwitch,
  describeServiceTraffic,
  firstSync,
  NODE,
  NODEPORT,
  PODS,
  setUp,
  WEB,
} from "../support/e2e-service-cases.ts";
import { describeSummary, probe, probeOnce } from "../support/e2e-traffic.ts";
import { scaled } from "../support/kernel-vm.ts";
import { ADDR } from "../support/netns.ts";

describeServiceTraffic(NFTABLES_RULES);
describeServiceSetSwitch(NFTABLES_RULES);

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
