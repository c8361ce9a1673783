// `explain` agrees with real traffic in ipvs mode, in the kernel VM (test/vm/kernel-vm.test.ts
// runs this file there): the shared Service cases' topology (test/support/e2e-service-cases.ts)
// with the daemon in ipvs mode, and for each case the built binary's `explain`, run in the node
// namespace against the live iptables rules, ipsets and IPVS table, must give the verdict and
// endpoints the probes observe (test/support/e2e-explain.ts).
//
// By hand: scripts/kernel-vm -- bash -c 'modprobe nf_conntrack &&
//   node_modules/.bin/bun test --timeout 600000 ./test/vm/ipvs-explain.vm.ts'

import { afterAll, beforeAll, describe } from "bun:test";
import { join } from "node:path";
import { tempDir } from "../support/binary.ts";
import { renderState, writeStateFile } from "../support/e2e-cluster.ts";
import { agrees, CASES } from "../support/e2e-explain.ts";
import {
  E2E_TEST_TIMEOUT_MS,
  e2eTest,
  type Harness,
  harnessDiagnostics,
  tearDownHarness,
} from "../support/e2e-harness.ts";
import { ipvsDiagnostics, virtualServer, waitForIpvs } from "../support/e2e-ipvs.ts";
import { startKubeProxy, waitForRules } from "../support/e2e-kubeproxy.ts";
import { ALL, NODE, PODS } from "../support/e2e-service-cases.ts";
import { startServer } from "../support/e2e-traffic.ts";
import { requireKernelVm } from "../support/kernel-vm.ts";
import { ADDR, createTopology } from "../support/netns.ts";

requireKernelVm("ipvs-explain.vm.ts");

describe("ipvs mode: explain on the live node agrees with the traffic", () => {
  const h: Harness = { extraDiagnostics: ipvsDiagnostics };

  beforeAll(async () => {
    h.topo = await createTopology({ pods: PODS, client2: true });
    await Promise.all(PODS.map((p) => startServer(h.topo!, p.name, { tcp: [8080], udp: [5353] })));
    h.dir = tempDir("kpts-ipvs-explain-");
    h.stateFile = join(h.dir, "state.yaml");
    writeStateFile(h.stateFile, renderState(NODE, ALL));
    h.kubeProxy = startKubeProxy(h.topo, { stateFile: h.stateFile, mode: "ipvs" });
    try {
      await waitForIpvs(
        h.topo,
        h.kubeProxy,
        (v) =>
          virtualServer(v, "TCP", "198.51.100.10:80")?.reals.length === 3 &&
          virtualServer(v, "UDP", "198.51.100.10:53")?.reals.length === 3 &&
          virtualServer(v, "TCP", `${ADDR.node}:30082`)?.reals.length === 1 &&
          virtualServer(v, "TCP", "198.51.100.16:80") !== undefined,
        "the first sync's virtual servers",
        30_000,
      );
      await waitForRules(
        h.topo,
        h.kubeProxy,
        (r) =>
          r.nat.includes("-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT") &&
          /-A KUBE-IPVS-FILTER .*KUBE-IPVS-IPS dst -j REJECT/.test(r.filter),
        "the first sync's iptables rules",
        30_000,
      );
    } catch (err) {
      console.error(`\n===== diagnostics (setup) =====\n${await harnessDiagnostics(h)}`);
      throw err;
    }
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await tearDownHarness(h);
  }, E2E_TEST_TIMEOUT_MS);

  for (const c of CASES) {
    e2eTest(h, `${c.name}: ${c.from} -> ${c.target}/${c.proto ?? "tcp"}`, () => agrees(h, "ipvs", c));
  }
});
