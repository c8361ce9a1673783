// ipvs mode against a real ipset's maxelem, in the kernel VM (test/vm/kernel-vm.test.ts runs
// this file there). A Service of 128 external IPs x 513 ports wants 65,664 members in
// KUBE-EXTERNAL-IP-LOCAL, past the 65,536 the set is created with; upstream's kube-proxy then fails
// every ipset restore, and with it every sync on the node (kubernetes/kubernetes#129389). The
// built binary holds that Service out and says so, the older Service keeps serving traffic,
// other Services still land, and once the wide one shrinks it is programmed. The wide Service
// is a LoadBalancer with externalTrafficPolicy Local and a pod on this node: while held out, its
// health check NodePort answers 503 (no local endpoint), so no load balancer sends it here.
//
// By hand: scripts/kernel-vm -- bash -c 'modprobe nf_conntrack &&
//   node_modules/.bin/bun test --timeout 600000 ./test/vm/ipvs-set-limits.vm.ts'
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { join } from "node:path";
import { tempDir } from "../support/binary.ts";
import { type NodeSpec, renderState, type ServiceSpec, writeStateFile } from "../support/e2e-cluster.ts";
import {
  E2E_TEST_TIMEOUT_MS,
  e2eTest,
  type Harness,
  tearDownHarness,
  withDiagnostics,
} from "../support/e2e-harness.ts";
import { describeHttp, type HttpGetResult, pollHttp } from "../support/e2e-http.ts";
import {
  type IpvsView,
  ipvsDiagnostics,
  OLD_WEB,
  unexpectedErrorLines,
  virtualServer,
  waitForIpvs,
  wideService,
} from "../support/e2e-ipvs.ts";
import { NODE_NAME, startKubeProxy, waitForRules } from "../support/e2e-kubeproxy.ts";
import { describeSummary, probe, startServer } from "../support/e2e-traffic.ts";
import { requireKernelVm, scaled } from "../support/kernel-vm.ts";
import { ADDR, createTopology, type PodSpec } from "../support/netns.ts";
import { until } from "../support/until.ts";

requireKernelVm("ipvs-set-limits.vm.ts");

const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const PODS: PodSpec[] = [{ name: "p1", ip: "203.0.113.11" }];
const CONNECT_MS = scaled(250);

const WEB = OLD_WEB;
const HC_PORT = 32100;
const wide = (ips: number, ports: number): ServiceSpec => ({
  ...wideService(ips, ports),
  type: "LoadBalancer",
  externalTrafficPolicy: "Local",
  healthCheckNodePort: HC_PORT,
  endpoints: [{ ip: "203.0.113.11" }],
});
const WIDE_MEMBERS = 128 * 513;
/** Where the wide Service's external IPs go: its traffic policy is Local. */
const WIDE_SET = "KUBE-EXTERNAL-IP-LOCAL";
const LATER: ServiceSpec = {
  name: "later",
  clusterIP: "198.51.100.30",
  ports: [{ name: "http", port: 80, targetPort: 8080 }],
  endpoints: [{ ip: "203.0.113.11" }],
};

/** Members of a set, counted from `ipset save` (`list -t` counts 0 on some kernels). */
async function entries(h: Harness, set: string): Promise<number> {
  const saved = await h.topo!.must("node", ["ipset", "save", set], { timeoutMs: 10_000 });
  return saved.split("\n").filter((l) => l.startsWith(`add ${set} `)).length;
}

/** The wide Service's virtual servers: on its ClusterIP or an address of 192.0.2.128/25. */
function isWide(address: string): boolean {
  const ip = address.slice(0, address.lastIndexOf(":"));
  return ip === "198.51.100.20" || (ip.startsWith("192.0.2.") && Number(ip.split(".")[3]) >= 128);
}
/** The health check's count of local endpoints, from its JSON answer. */
const localEndpoints = (body: string | undefined) =>
  (JSON.parse(body ?? "{}") as { localEndpoints?: number }).localEndpoints;
/** The health check NodePort `port` on the node, polled from the client until `done` holds. */
const pollHealth = (h: Harness, port: number, done: (r: HttpGetResult) => boolean, what: string) =>
  pollHttp(h.topo!, "client", `http://${ADDR.node}:${port}/`, done, what, {
    daemon: h.kubeProxy!,
    timeoutMs: scaled(20_000),
  });
const wideServers = (v: IpvsView) => v.virtualServers.filter((s) => isWide(s.address)).length;

describe("ipvs mode: a Service past a set's maxelem", () => {
  const h: Harness = { extraDiagnostics: ipvsDiagnostics };

  beforeAll(async () => {
    const topo = await createTopology({ pods: PODS });
    h.topo = topo;
    await startServer(topo, "p1", { tcp: [8080] });
    h.dir = tempDir("kpts-ipvs-limits-");
    h.stateFile = join(h.dir, "state.yaml");
    writeStateFile(h.stateFile, renderState(NODE, [WEB, wide(128, 513)]));
    const kubeProxy = startKubeProxy(topo, { stateFile: h.stateFile, mode: "ipvs" });
    h.kubeProxy = kubeProxy;
    await withDiagnostics(h, "setup", async () => {
      await kubeProxy.waitForOutput(/do not fit[^\n]*/, 60_000);
      await waitForIpvs(
        topo,
        kubeProxy,
        (v) => virtualServer(v, "TCP", "198.51.100.10:80")?.reals.length === 1,
        "web's virtual server",
        30_000,
      );
      // The sync's last write: its sets are in place once this is.
      await waitForRules(
        topo,
        kubeProxy,
        (r) => r.nat.includes("-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT"),
        "the first sync's iptables rules",
        30_000,
      );
    });
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(() => tearDownHarness(h), E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "the wide Service is held out and named; web serves; a Service made later lands; the wide one lands once it fits",
    async () => {
      const topo = h.topo!;
      const told = h.kubeProxy!.stderr().match(/^E\d{4} .*do not fit.*$/m)?.[0] ?? "";
      expect(told).toContain(
        `service="default/wide" ipset="${WIDE_SET}" membersAtLeast=${WIDE_MEMBERS} maxelem=65536`,
      );
      expect(wideServers(await waitForIpvs(topo, h.kubeProxy, () => true, "a read"))).toBe(0);
      expect(await entries(h, WIDE_SET)).toBe(0);
      expect(await entries(h, "KUBE-CLUSTER-IP")).toBe(1);
      const web = await probe(topo, "client", {
        target: "198.51.100.10:80",
        count: 5,
        timeoutMs: CONNECT_MS,
      });
      expect(web.ok, describeSummary(web)).toBe(true);
      const heldOutHealth = await pollHealth(
        h,
        HC_PORT,
        (r) => r.status !== undefined,
        "the wide Service's health check",
      );
      expect(heldOutHealth.status, describeHttp(heldOutHealth)).toBe(503);
      expect(localEndpoints(heldOutHealth.body)).toBe(0);

      writeStateFile(h.stateFile!, renderState(NODE, [WEB, wide(128, 513), LATER]));
      await waitForIpvs(
        topo,
        h.kubeProxy,
        (v) => virtualServer(v, "TCP", "198.51.100.30:80")?.reals.length === 1,
        "the later Service's virtual server",
        30_000,
      );

      writeStateFile(h.stateFile!, renderState(NODE, [WEB, wide(2, 2), LATER]));
      const v = await waitForIpvs(
        topo,
        h.kubeProxy,
        (x) => wideServers(x) === 6,
        "the wide Service, shrunk",
        30_000,
      );
      expect(virtualServer(v, "TCP", "192.0.2.129:1001")).toBeDefined();
      // A partial sync writes IPVS first and the sets after it.
      await until(`${WIDE_SET}'s 4 members`, async () => (await entries(h, WIDE_SET)) === 4, scaled(30_000));
      await h.kubeProxy!.waitForOutput(/fit again/, 30_000);
      const servedHealth = await pollHealth(
        h,
        HC_PORT,
        (r) => r.status === 200,
        "the wide Service's health check to answer 200",
      );
      expect(localEndpoints(servedHealth.body)).toBe(1);
      // One report of the Service held out, and no failed sync.
      expect(unexpectedErrorLines(h.kubeProxy!)).toEqual([told]);
    },
    scaled(180_000),
  );
});

// Dual-stack (the guest's kernel serves both families): a LoadBalancer whose IPv6 source ranges
// overfill KUBE-6-LOAD-BALANCER-SOURCE-CID is held out of the IPv6 family only. Its IPv4 side is
// programmed, yet the one health check server (fed by both families) answers 503: a load
// balancer cannot be told which family to send, and IPv6 traffic would find nothing here.
const DUAL_HC_PORT = 32101;
const dual = (v6Ranges: number): ServiceSpec => ({
  name: "dual",
  type: "LoadBalancer",
  clusterIP: "198.51.100.40",
  clusterIPv6: "2001:db8:2::40",
  loadBalancerIPs: ["192.0.2.140", "2001:db8:3::40"],
  loadBalancerSourceRanges: [
    ADDR.clientNet,
    ...Array.from(
      { length: v6Ranges },
      (_, i) => `2001:db8:9::${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}/128`,
    ),
  ],
  externalTrafficPolicy: "Local",
  healthCheckNodePort: DUAL_HC_PORT,
  ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: 30140 }],
  endpoints: [{ ip: "203.0.113.11" }],
});

describe("ipvs mode, dual-stack: a Service held out in its second family only", () => {
  const h: Harness = { extraDiagnostics: ipvsDiagnostics };

  beforeAll(async () => {
    const topo = await createTopology({ pods: PODS });
    h.topo = topo;
    h.dir = tempDir("kpts-ipvs-dual-");
    h.stateFile = join(h.dir, "state.yaml");
    writeStateFile(h.stateFile, renderState(NODE, [WEB, dual(65_537)]));
    h.kubeProxy = startKubeProxy(topo, { stateFile: h.stateFile, mode: "ipvs" });
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(() => tearDownHarness(h), E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "its IPv4 side is programmed, its health check answers 503 until the IPv6 side fits, then 200",
    async () => {
      const topo = h.topo!;
      const kubeProxy = h.kubeProxy!;
      await kubeProxy.waitForOutput(/Proxying IP families[^\n]*IPv4,IPv6/, 60_000);
      await kubeProxy.waitForOutput(/do not fit[^\n]*/, 60_000);
      const told = kubeProxy.stderr().match(/^E\d{4} .*do not fit.*$/m)?.[0] ?? "";
      expect(told).toContain('service="default/dual" ipset="KUBE-6-LOAD-BALANCER-SOURCE-CID"');
      await waitForIpvs(
        topo,
        kubeProxy,
        (v) => virtualServer(v, "TCP", "192.0.2.140:80")?.reals.length === 1,
        "the IPv4 load balancer's virtual server",
        30_000,
      );
      const v = await waitForIpvs(topo, kubeProxy, () => true, "a read");
      expect(virtualServer(v, "TCP", "[2001:db8:3::40]:80")).toBeUndefined();
      const heldOut = await pollHealth(h, DUAL_HC_PORT, (r) => r.status !== undefined, "the health check");
      expect(heldOut.status, describeHttp(heldOut)).toBe(503);
      expect(localEndpoints(heldOut.body)).toBe(0);

      writeStateFile(h.stateFile!, renderState(NODE, [WEB, dual(1)]));
      await waitForIpvs(
        topo,
        kubeProxy,
        (x) => virtualServer(x, "TCP", "[2001:db8:3::40]:80") !== undefined,
        "the IPv6 load balancer's virtual server",
        30_000,
      );
      const served = await pollHealth(
        h,
        DUAL_HC_PORT,
        (r) => r.status === 200,
        "the health check to answer 200",
      );
      expect(localEndpoints(served.body)).toBe(1);
      expect(unexpectedErrorLines(kubeProxy)).toEqual([told]);
    },
    scaled(180_000),
  );
});
