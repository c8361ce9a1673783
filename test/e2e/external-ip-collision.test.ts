// The CVE-2020-8554 class on the real kernel: any namespace may list another Service's ClusterIP
// in spec.externalIPs. dist/kube-proxy-ts runs against the fake API server (iptables, then
// nftables mode) with a kube-dns-like Service and two hostile Services, `aaa/evil` and
// `zzz/evil`, whose externalIPs hold the DNS ClusterIP on the same port and protocol (53/UDP).
// The names are chosen so that, were the modes left to themselves, iptables (rules sorted by
// name, first match) would pick aaa and nftables (last map element) zzz. DNS must keep reaching
// its own endpoint, the hostile Services keep their own ClusterIPs, and each gets a Warning
// Event naming the field and the address.
//
// Run as root: `node_modules/.bin/bun test --timeout 60000 test/e2e/external-ip-collision.test.ts`.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { type ApiHarness, setUpApiRun, tearDownApiRun } from "../support/e2e-api-harness.ts";
import type { NodeSpec, ServiceSpec } from "../support/e2e-cluster.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest } from "../support/e2e-harness.ts";
import { type E2eProxyMode, NODE_NAME } from "../support/e2e-kubeproxy.ts";
import { nftDiagnostics } from "../support/e2e-nft.ts";
import { describeSummary, probe } from "../support/e2e-traffic.ts";
import { ADDR, type PodSpec } from "../support/netns.ts";
import { waitFor } from "../support/wait.ts";

const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const PODS: PodSpec[] = [
  { name: "dns1", ip: "203.0.113.21" },
  { name: "evil1", ip: "203.0.113.22" },
  { name: "evil2", ip: "203.0.113.23" },
];
const DNS_IP = "198.51.100.53";
const udp53 = [{ name: "dns", port: 53, targetPort: 5353, protocol: "UDP" as const }];
const DNS: ServiceSpec = {
  name: "kube-dns",
  namespace: "kube-system",
  clusterIP: DNS_IP,
  ports: udp53,
  endpoints: [{ ip: "203.0.113.21" }],
};
const evil = (namespace: string, clusterIP: string, pod: string): ServiceSpec => ({
  name: "evil",
  namespace,
  clusterIP,
  externalIPs: [DNS_IP],
  ports: udp53,
  endpoints: [{ ip: pod }],
});
const EVIL_A = evil("aaa", "198.51.100.54", "203.0.113.22");
const EVIL_Z = evil("zzz", "198.51.100.55", "203.0.113.23");

/** Which pods answered `count` UDP probes from the client to ip:53. */
async function answeredBy(h: ApiHarness, ip: string, count = 8): Promise<Record<string, number>> {
  const s = await probe(h.topo!, "client", { proto: "udp", target: `${ip}:53`, count, intervalMs: 20 });
  if (s.okCount !== count) throw new Error(`UDP ${ip}:53: ${describeSummary(s)}`);
  return s.backends;
}

for (const mode of ["iptables", "nftables"] as E2eProxyMode[]) {
  describe(`${mode} mode: an externalIP equal to another Service's ClusterIP takes none of its traffic`, () => {
    const h: ApiHarness = mode === "nftables" ? { extraDiagnostics: nftDiagnostics } : {};

    beforeAll(async () => {
      await setUpApiRun(h, {
        node: NODE,
        pods: PODS,
        servers: { udp: [5353] },
        client: true,
        services: [EVIL_A, DNS, EVIL_Z],
        mode,
      });
    }, E2E_TEST_TIMEOUT_MS);

    afterAll(async () => {
      await tearDownApiRun(h);
    }, E2E_TEST_TIMEOUT_MS);

    e2eTest(
      h,
      "DNS reaches only its own endpoint; the hostile Services keep their own ClusterIPs",
      async () => {
        expect(await answeredBy(h, DNS_IP)).toEqual({ dns1: 8 });
        expect(await answeredBy(h, EVIL_A.clusterIP, 2)).toEqual({ evil1: 2 });
        expect(await answeredBy(h, EVIL_Z.clusterIP, 2)).toEqual({ evil2: 2 });
      },
    );

    e2eTest(
      h,
      "each hostile Service gets a Warning Event naming spec.externalIPs and the address",
      async () => {
        const conflicts = () =>
          h.api!.server.postedEvents.filter(
            (e) => (e as { reason?: string }).reason === "KubeProxyAddressConflict",
          );
        await waitFor(() => conflicts().length >= 2, 20_000, "two KubeProxyAddressConflict events");
        const about = conflicts().map((e) => {
          const o = e as {
            regarding?: { namespace?: string };
            involvedObject?: { namespace?: string };
            note?: string;
            message?: string;
          };
          return { ns: (o.regarding ?? o.involvedObject)?.namespace, text: o.note ?? o.message ?? "" };
        });
        expect(about.map((a) => a.ns).sort()).toEqual(["aaa", "zzz"]);
        for (const a of about) {
          expect(a.text).toContain("spec.externalIPs");
          expect(a.text).toContain(DNS_IP);
          expect(a.text).toContain("kube-system/kube-dns");
        }
      },
    );
  });
}
