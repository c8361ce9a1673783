// iptables mode taking over a node whose rules upstream kube-proxy's iptables mode left, in
// v1.31's and v1.37's form, on the real kernel: the expected dump of upstream's
// TestOverallIPTablesRules (test/modes/iptables/golden/, each era's) rewritten to this
// topology's documentation addresses and loaded with the real iptables-restore in the node
// namespace, plus the jumps from the built-in chains, the canaries and the nfacct counters
// upstream makes. Then the real binary starts from a --state file holding other Services:
// traffic works, no chain or rule of the old Services stays, and every kube rule is one a fresh
// node gets; `--cleanup` then leaves no KUBE-* chain and no jump to one but kubelet's shared
// KUBE-FIREWALL (which upstream's cleanup leaves too).
//
// Run as root (iproute2, iptables, nfacct, conntrack installed):
// `node_modules/.bin/bun test --timeout 60000 test/e2e/iptables-takeover.test.ts`.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/binary.ts";
import { renderState, writeStateFile } from "../support/e2e-cluster.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest, type Harness, tearDownHarness } from "../support/e2e-harness.ts";
import {
  iptablesSave,
  kubeProxyBinary,
  startKubeProxy,
  type Table,
  waitForRules,
} from "../support/e2e-kubeproxy.ts";
import { IPTABLES_RULES } from "../support/e2e-mode-rules.ts";
import { firstSync, NODE, NODEPORT, PODS, WEB } from "../support/e2e-service-cases.ts";
import { describeSummary, probe, startServer } from "../support/e2e-traffic.ts";
import { scaled } from "../support/kernel-vm.ts";
import { ADDR, createTopology } from "../support/netns.ts";

/** Upstream's test addresses -> this topology's (documentation ranges; pods answer on 8080). */
const UPSTREAM_ADDRESSES: Readonly<Record<string, string>> = {
  "10.0.0.0/8": ADDR.podNet,
  "203.0.113.0/25": ADDR.clientNet,
  "1.2.3.4": "192.0.2.204",
  "5.6.7.8": "192.0.2.205",
  "192.168.99.22": "192.0.2.222",
  "192.168.99.33": "192.0.2.233",
  ...Object.fromEntries([1, 2, 3, 4, 5, 6].map((n) => [`172.30.0.4${n}`, `198.51.100.4${n}`])),
  ...Object.fromEntries([1, 2, 3, 4, 5].map((n) => [`10.180.0.${n}`, `203.0.113.1${n}`])),
};

/** The jumps upstream's iptables mode adds to the built-in chains (prepended, as it does). */
const UPSTREAM_JUMPS: readonly (readonly string[])[] = [
  [
    "filter",
    "INPUT",
    "-m",
    "conntrack",
    "--ctstate",
    "NEW",
    "-m",
    "comment",
    "--comment",
    "kubernetes externally-visible service portals",
    "-j",
    "KUBE-EXTERNAL-SERVICES",
  ],
  [
    "filter",
    "FORWARD",
    "-m",
    "conntrack",
    "--ctstate",
    "NEW",
    "-m",
    "comment",
    "--comment",
    "kubernetes externally-visible service portals",
    "-j",
    "KUBE-EXTERNAL-SERVICES",
  ],
  [
    "filter",
    "INPUT",
    "-m",
    "comment",
    "--comment",
    "kubernetes health check service ports",
    "-j",
    "KUBE-NODEPORTS",
  ],
  [
    "filter",
    "FORWARD",
    "-m",
    "conntrack",
    "--ctstate",
    "NEW",
    "-m",
    "comment",
    "--comment",
    "kubernetes service portals",
    "-j",
    "KUBE-SERVICES",
  ],
  [
    "filter",
    "OUTPUT",
    "-m",
    "conntrack",
    "--ctstate",
    "NEW",
    "-m",
    "comment",
    "--comment",
    "kubernetes service portals",
    "-j",
    "KUBE-SERVICES",
  ],
  ["filter", "FORWARD", "-m", "comment", "--comment", "kubernetes forwarding rules", "-j", "KUBE-FORWARD"],
  [
    "filter",
    "INPUT",
    "-m",
    "conntrack",
    "--ctstate",
    "NEW",
    "-m",
    "comment",
    "--comment",
    "kubernetes load balancer firewall",
    "-j",
    "KUBE-PROXY-FIREWALL",
  ],
  [
    "filter",
    "OUTPUT",
    "-m",
    "conntrack",
    "--ctstate",
    "NEW",
    "-m",
    "comment",
    "--comment",
    "kubernetes load balancer firewall",
    "-j",
    "KUBE-PROXY-FIREWALL",
  ],
  [
    "filter",
    "FORWARD",
    "-m",
    "conntrack",
    "--ctstate",
    "NEW",
    "-m",
    "comment",
    "--comment",
    "kubernetes load balancer firewall",
    "-j",
    "KUBE-PROXY-FIREWALL",
  ],
  ["nat", "OUTPUT", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"],
  ["nat", "PREROUTING", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"],
  [
    "nat",
    "POSTROUTING",
    "-m",
    "comment",
    "--comment",
    "kubernetes postrouting rules",
    "-j",
    "KUBE-POSTROUTING",
  ],
  ["filter", "INPUT", "-j", "KUBE-FIREWALL"],
  ["filter", "OUTPUT", "-j", "KUBE-FIREWALL"],
];

const GOLDEN_DIR = join(import.meta.dir, "..", "modes", "iptables", "golden");
const TABLES: readonly Table[] = ["nat", "filter", "mangle"];

/** An upstream expected dump with its addresses replaced in one pass (no replacement is re-read). */
export function rewriteAddresses(dump: string, addresses: Readonly<Record<string, string>>): string {
  const keys = Object.keys(addresses).sort((a, b) => b.length - a.length);
  const escaped = keys.map((k) => k.replaceAll(".", "\\.").replaceAll("/", "\\/"));
  const pattern = new RegExp(`(?<![0-9.])(?:${escaped.join("|")})(?![0-9/])`, "g");
  return dump.replace(pattern, (m) => addresses[m] ?? m);
}

/** Every KUBE-* chain and every rule naming one, per table, without counters, sorted. */
async function kubeRules(h: Harness): Promise<string[]> {
  const out: string[] = [];
  for (const table of TABLES) {
    for (const line of (await iptablesSave(h.topo!, table)).split("\n")) {
      const l = line.replace(/ \[\d+:\d+\]$/, "");
      if (/^:KUBE-/.test(l) || (l.startsWith("-A ") && l.includes("KUBE-"))) out.push(`${table} ${l}`);
    }
  }
  return out.sort();
}

const SERVICES = [WEB, NODEPORT];
const PODS_USED = PODS.slice(0, 4);

async function trafficWorks(h: Harness): Promise<void> {
  for (const from of ["p4", "node"]) {
    const tcp = await probe(h.topo!, from, { target: `${WEB.clusterIP}:80`, count: 5 });
    expect(tcp.ok, `${from}: ${describeSummary(tcp)}`).toBe(true);
    const udp = await probe(h.topo!, from, { proto: "udp", target: `${WEB.clusterIP}:53`, count: 5 });
    expect(udp.ok, `${from}: ${describeSummary(udp)}`).toBe(true);
  }
  const np = await probe(h.topo!, "client", { target: `${ADDR.node}:30080`, count: 5 });
  expect(np.ok, describeSummary(np)).toBe(true);
}

function describeTakeover(title: string, golden: string): void {
  describe(`iptables mode takes over the rules ${title} left`, () => {
    const h: Harness = {};
    const dump = readFileSync(join(GOLDEN_DIR, golden), "utf8");
    /** The old Services' chains (KUBE-SVC-, -SEP-, -EXT-, -FW-): none of them may stay. */
    const oldChains = [...dump.matchAll(/^:(KUBE-(?:SVC|SEP|EXT|FW|SVL)-[A-Z2-7]{16}) /gm)].map((m) => m[1]!);

    beforeAll(async () => {
      h.topo = await createTopology({ pods: PODS_USED, client2: true });
      await Promise.all(PODS_USED.map((p) => startServer(h.topo!, p.name, { tcp: [8080], udp: [5353] })));
      if (dump.includes("nfacct"))
        for (const counter of ["ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts"])
          await h.topo.must("node", ["nfacct", "add", counter], { timeoutMs: 10_000 });
      for (const table of TABLES)
        await h.topo.must("node", ["iptables-nft", "-t", table, "-N", "KUBE-PROXY-CANARY"], {
          timeoutMs: 10_000,
        });
      await h.topo.must("node", ["iptables-nft-restore", "--noflush"], {
        stdin: rewriteAddresses(dump, UPSTREAM_ADDRESSES),
        timeoutMs: 10_000,
      });
      for (const [table, chain, ...args] of UPSTREAM_JUMPS)
        await h.topo.must("node", ["iptables-nft", "-t", table!, "-I", chain!, ...args], {
          timeoutMs: 10_000,
        });
      // What was loaded is there: the old Services' chains and rules.
      const before = await kubeRules(h);
      expect(before.some((l) => l.includes(`:${oldChains[0]}`))).toBe(true);
      expect(before.some((l) => l.includes("ns1/svc1:p80"))).toBe(true);
      h.dir = tempDir("kpts-e2e-");
      h.stateFile = join(h.dir, "state.yaml");
      writeStateFile(h.stateFile, renderState(NODE, SERVICES));
      h.kubeProxy = startKubeProxy(h.topo, { stateFile: h.stateFile });
      await firstSync(h, IPTABLES_RULES, SERVICES);
    }, E2E_TEST_TIMEOUT_MS);

    afterAll(async () => {
      await tearDownHarness(h);
    }, E2E_TEST_TIMEOUT_MS);

    e2eTest(
      h,
      "traffic works, nothing of the old Services stays, every kube rule is a fresh node's",
      async () => {
        await trafficWorks(h);
        await waitForRules(
          h.topo!,
          h.kubeProxy,
          (v) =>
            !/ns[1-6]\/svc[1-6]:p80/.test(v.nat + v.filter) &&
            oldChains.every((c) => !(v.nat + v.filter).includes(c)),
          "no chain or rule of the upstream Services",
          scaled(45_000),
        );
        const taken = await kubeRules(h);
        for (const c of oldChains) expect(taken.some((l) => l.includes(c))).toBe(false);

        // The same daemon on a node with no kube rules: what a fresh node gets.
        await h.kubeProxy!.kill(3000);
        const clean = await h.topo!.run("node", [kubeProxyBinary(), "--cleanup"], {
          timeoutMs: scaled(30_000),
        });
        expect(clean.code, clean.stderr).toBe(0);
        h.kubeProxy = startKubeProxy(h.topo!, { stateFile: h.stateFile! });
        await firstSync(h, IPTABLES_RULES, SERVICES);
        await trafficWorks(h);
        expect(taken).toEqual(await kubeRules(h));
      },
    );

    e2eTest(h, "--cleanup leaves no KUBE-* chain and no jump to one", async () => {
      await h.kubeProxy!.kill(3000);
      const r = await h.topo!.run("node", [kubeProxyBinary(), "--cleanup"], { timeoutMs: scaled(30_000) });
      expect(r.code, r.stderr).toBe(0);
      // KUBE-FIREWALL (the localnet guard and its INPUT/OUTPUT jumps) is kubelet's as much as
      // kube-proxy's: upstream's cleanup leaves it, and so does ours. Nothing else may stay.
      const left = await kubeRules(h);
      expect(left.filter((l) => !/(:| |-j )KUBE-FIREWALL( |$)/.test(l))).toEqual([]);
      expect(left.some((l) => /-j KUBE-(?!FIREWALL\b)/.test(l))).toBe(false);
    });
  });
}

describeTakeover("upstream 1.31", "upstream-1.31-era-overall.iptables");
describeTakeover("upstream 1.37", "upstream-1.37-overall.iptables");
