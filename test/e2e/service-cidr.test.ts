// ServiceCIDRs in nftables mode, on the real kernel: dist/kube-proxy-ts runs with
// --proxy-mode=nftables in the node namespace of a netns topology against the fake API server,
// which the test gives a networking.k8s.io/v1 ServiceCIDR and takes it away again over the watch.
// cluster-ips-check must gain `ip daddr { <CIDRs> } drop` ("Drop traffic to unallocated
// ClusterIPs") while the object exists, and lose it after.
//
// The observable: a witness table of the test's own in the node namespace rejects (TCP reset)
// forwarded traffic to one unallocated ClusterIP at forward priority 10, after kube-proxy's
// filter-forward (priority 0). While kube-proxy does not drop that traffic the client sees
// "refused" from the witness; once kube-proxy drops it first, the client's connect times out.
// Nothing leaves the test's namespaces (unrouted service addresses end in the node's sink veth).
//
// Run as root (iproute2, nft installed):
// `node_modules/.bin/bun test --timeout 60000 test/e2e/service-cidr.test.ts`.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { type ApiHarness, setUpApiRun, tearDownApiRun } from "../support/e2e-api-harness.ts";
import type { NodeSpec, ServiceSpec } from "../support/e2e-cluster.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest } from "../support/e2e-harness.ts";
import { NODE_NAME, waitForView } from "../support/e2e-kubeproxy.ts";
import { nftDiagnostics } from "../support/e2e-nft.ts";
import { describeSummary, probe } from "../support/e2e-traffic.ts";
import type { KObject } from "../support/fake-apiserver.ts";
import { scaled } from "../support/kernel-vm.ts";
import { ADDR, type PodSpec, type Topology } from "../support/netns.ts";

const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const PODS: PodSpec[] = [{ name: "sc1", ip: "203.0.113.61" }];
const WEB: ServiceSpec = {
  name: "web",
  clusterIP: "198.51.100.61",
  ports: [{ name: "http", port: 80, targetPort: 8080 }],
  endpoints: [{ ip: "203.0.113.61" }],
};
/** Inside the ServiceCIDR, held by no Service. */
const UNALLOCATED = "198.51.100.99";
const V6_CIDR = "2001:db8:42::/112";
const SERVICE_CIDR: KObject = {
  apiVersion: "networking.k8s.io/v1",
  kind: "ServiceCIDR",
  metadata: { name: "kubernetes" },
  spec: { cidrs: [ADDR.serviceNet, V6_CIDR] },
};
const DROP_COMMENT = "Drop traffic to unallocated ClusterIPs";
const WITNESS_TABLE = "kpts-e2e-witness";

/** The witness: forwarded TCP to UNALLOCATED:80 that reaches priority 10 is counted and reset. */
const WITNESS_RULES = `table ip ${WITNESS_TABLE} {
  chain forward {
    type filter hook forward priority 10; policy accept;
    ip daddr ${UNALLOCATED} tcp dport 80 counter reject with tcp reset
  }
}
`;

/** `nft list chain FAMILY kube-proxy cluster-ips-check` in the node namespace ("" if absent). */
async function clusterIPsCheck(topo: Topology, family: "ip" | "ip6" = "ip"): Promise<string> {
  const r = await topo.run("node", ["nft", "list", "chain", family, "kube-proxy", "cluster-ips-check"], {
    timeoutMs: 10_000,
  });
  return r.code === 0 ? r.stdout : "";
}

function dropRule(chain: string): string | undefined {
  return chain.split("\n").find((l) => l.includes(DROP_COMMENT));
}

async function waitForCheckChain(
  h: ApiHarness,
  ready: (chain: string) => boolean,
  what: string,
): Promise<string> {
  return waitForView({ read: () => clusterIPsCheck(h.topo!), render: (c) => c }, h.kubeProxy, ready, what);
}

/** How many packets reached the witness rule (past kube-proxy's filter-forward). */
async function witnessPackets(h: ApiHarness): Promise<number> {
  const out = await h.topo!.must("node", ["nft", "list", "chain", "ip", WITNESS_TABLE, "forward"], {
    timeoutMs: 10_000,
  });
  const m = /counter packets (\d+)/.exec(out);
  if (!m) throw new Error(`no counter in the witness chain:\n${out}`);
  return Number(m[1]);
}

/** One connect attempt's outcome from the client to `ip`:80 ("ok", "refused", "timeout", ...). */
async function connectOutcome(h: ApiHarness, ip: string): Promise<string> {
  const s = await probe(h.topo!, "client", { target: `${ip}:80`, count: 1, timeoutMs: scaled(1500) });
  const r = s.results[0];
  return r?.ok ? `ok ${r.reply?.pod}` : (r?.error ?? describeSummary(s));
}

describe("nftables mode: ServiceCIDRs from the API drop traffic to unallocated ClusterIPs", () => {
  const h: ApiHarness = { extraDiagnostics: nftDiagnostics };

  beforeAll(async () => {
    await setUpApiRun(h, { node: NODE, pods: PODS, client: true, services: [WEB], mode: "nftables" });
    await h.topo!.must("node", ["nft", "-f", "-"], { stdin: WITNESS_RULES, timeoutMs: 10_000 });
    await waitForCheckChain(h, (c) => c.includes("Reject traffic to invalid ports"), "cluster-ips-check");
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await tearDownApiRun(h);
  }, E2E_TEST_TIMEOUT_MS);

  e2eTest(h, "no ServiceCIDR: no drop rule, and an unallocated ClusterIP reaches the witness", async () => {
    const chain = await clusterIPsCheck(h.topo!);
    expect(dropRule(chain), chain).toBeUndefined();
    expect(await connectOutcome(h, UNALLOCATED)).toBe("refused");
    expect(await connectOutcome(h, WEB.clusterIP)).toBe("ok sc1");
  });

  e2eTest(
    h,
    "ServiceCIDR created: the drop rule appears; unallocated times out, allocated works",
    async () => {
      h.api!.server.create("ServiceCIDR", SERVICE_CIDR);
      const chain = await waitForCheckChain(
        h,
        (c) => dropRule(c)?.includes(ADDR.serviceNet) ?? false,
        `the drop rule for ${ADDR.serviceNet}`,
      );
      const rule = dropRule(chain)!;
      expect(rule, chain).toMatch(/ip daddr .*198\.51\.100\.0\/24.* drop comment/);
      expect(rule, "IPv4's chain holds IPv4's CIDRs only").not.toContain("2001:db8");
      // The drop follows the reject of a ClusterIP's unused ports, as upstream orders them.
      const lines = chain.split("\n");
      expect(
        lines.findIndex((l) => l.includes("@cluster-ips reject")),
        chain,
      ).toBeLessThan(lines.indexOf(rule));

      const before = await witnessPackets(h);
      expect(await connectOutcome(h, UNALLOCATED)).toBe("timeout");
      expect(await witnessPackets(h), "packets past kube-proxy's forward hook").toBe(before);
      expect(await connectOutcome(h, WEB.clusterIP)).toBe("ok sc1");

      // Where the node is proxied dual-stack, IPv6's chain gets IPv6's CIDR only.
      const v6 = await clusterIPsCheck(h.topo!, "ip6");
      if (v6 !== "") {
        const v6Rule = await waitForView(
          { read: () => clusterIPsCheck(h.topo!, "ip6"), render: (c) => c },
          h.kubeProxy,
          (c) => dropRule(c)?.includes(V6_CIDR) ?? false,
          `IPv6's drop rule for ${V6_CIDR}`,
        );
        expect(dropRule(v6Rule), v6Rule).not.toContain("198.51.100");
      }
    },
  );

  e2eTest(h, "ServiceCIDR deleted: the drop rule is gone, and the witness answers again", async () => {
    h.api!.server.delete("ServiceCIDR", SERVICE_CIDR);
    const chain = await waitForCheckChain(
      h,
      (c) => c !== "" && dropRule(c) === undefined,
      "the drop rule to go",
    );
    expect(chain).toContain("@cluster-ips reject");
    expect(await connectOutcome(h, UNALLOCATED)).toBe("refused");
    expect(await connectOutcome(h, WEB.clusterIP)).toBe("ok sc1");
  });
});
