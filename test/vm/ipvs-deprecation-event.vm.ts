// Runs in the guest (see test/vm/kernel-vm.test.ts), whose kernel has IPVS: a real
// --proxy-mode=ipvs run of dist/kube-proxy-ts in a node namespace, fed by the fake API server
// (test/support/e2e-api-harness.ts), logs the deprecation at error level and posts, through the
// events.k8s.io/v1 API, a Warning Event on its Node: reason IPVSDeprecation, action
// StartKubeProxy, the deprecation message as its note. (The host's test/e2e/ipvs-deprecation.test.ts
// checks the same Event in --dry-run's report.)
//
// By hand: scripts/kernel-vm -- bash -c 'modprobe nf_conntrack &&
//   node_modules/.bin/bun test --timeout 600000 ./test/vm/ipvs-deprecation-event.vm.ts'
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { type ApiHarness, setUpApiRun, tearDownApiRun } from "../support/e2e-api-harness.ts";
import type { NodeSpec, ServiceSpec } from "../support/e2e-cluster.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest } from "../support/e2e-harness.ts";
import { ipvsDiagnostics } from "../support/e2e-ipvs.ts";
import { NODE_NAME } from "../support/e2e-kubeproxy.ts";
import { requireKernelVm, scaled } from "../support/kernel-vm.ts";
import { ADDR } from "../support/netns.ts";
import { waitFor } from "../support/wait.ts";

requireKernelVm("ipvs-deprecation-event.vm.ts");

const MESSAGE =
  "The ipvs proxier is now deprecated and may be removed in a future release. Please use 'nftables' instead.";
const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
/** Its endpoint has no pod: it only gives the run a virtual server to program. */
const WEB: ServiceSpec = {
  name: "web",
  clusterIP: "198.51.100.91",
  ports: [{ name: "http", port: 80, targetPort: 8080 }],
  endpoints: [{ ip: "203.0.113.91" }],
};

describe("ipvs mode posts its deprecation as a Warning Event on the Node", () => {
  const h: ApiHarness = { extraDiagnostics: ipvsDiagnostics };

  beforeAll(async () => {
    await setUpApiRun(h, { node: NODE, pods: [], services: [WEB], mode: "ipvs" });
  }, E2E_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await tearDownApiRun(h);
  }, E2E_TEST_TIMEOUT_MS);

  e2eTest(h, "the API server receives the IPVSDeprecation Event; stderr has the error line", async () => {
    const server = h.api!.server;
    const deprecations = () => server.postedEvents.filter((e) => e.reason === "IPVSDeprecation");
    await waitFor(
      () => deprecations().length > 0,
      scaled(10_000),
      `the IPVSDeprecation Event (posted: ${JSON.stringify(server.postedEvents)})`,
      100,
    );
    const events = deprecations();
    expect(events.length, JSON.stringify(events)).toBe(1);
    expect(events[0]).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      metadata: { namespace: "default" },
      type: "Warning",
      reason: "IPVSDeprecation",
      action: "StartKubeProxy",
      note: MESSAGE,
      reportingController: "kube-proxy",
      regarding: { kind: "Node", name: NODE_NAME },
    });
    const posts = server.requests.filter((r) => r.method === "POST" && r.kind === "Event");
    expect(posts.map((p) => p.path)).toContain("/apis/events.k8s.io/v1/namespaces/default/events");
    const errorLines = h
      .kubeProxy!.stderr()
      .split("\n")
      .filter((l) => /^E\d{4} /.test(l) && l.includes(MESSAGE));
    expect(errorLines.length, h.kubeProxy!.stderr()).toBe(1);
    // It is a warning, not a refusal: the run goes on in ipvs mode.
    expect(h.kubeProxy!.exitCode()).toBeUndefined();
  });
});
