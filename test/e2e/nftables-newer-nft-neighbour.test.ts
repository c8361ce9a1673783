// Another program on the node uses a newer nft (trixie's 1.1.3, which writes set metadata that
// nft before 1.1.4 crashes on) and creates a set of its own while the built binary runs in
// nftables mode with the host's nft (bookworm's 1.0.6): upstream's kubernetes#136786. Every nft
// run of the proxy then dies with SIGSEGV. What must hold: the Services already in the kernel keep
// answering, the error says what happened, and once the other program's set is gone the pending
// change lands. The other program's nft comes from test/support/image-nft.ts (built on first use,
// which is why the set-up has room for it).
//
// Run as root: `node_modules/.bin/bun test test/e2e/nftables-newer-nft-neighbour.test.ts`.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import {
  type ApiHarness,
  createService,
  httpService,
  setUpApiRun,
  tearDownApiRun,
  waitForAnswer,
} from "../support/e2e-api-harness.ts";
import type { NodeSpec, ServiceSpec } from "../support/e2e-cluster.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest } from "../support/e2e-harness.ts";
import { NODE_NAME } from "../support/e2e-kubeproxy.ts";
import { probe } from "../support/e2e-traffic.ts";
import { suiteNftProgram } from "../support/image-nft.ts";
import { scaled } from "../support/kernel-vm.ts";
import { ADDR, type PodSpec } from "../support/netns.ts";

const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const PODS: PodSpec[] = [{ name: "web1", ip: "203.0.113.31" }];
const web = (name: string, clusterIP: string): ServiceSpec => httpService(name, clusterIP, "203.0.113.31");
const FIRST = web("first", "198.51.100.51");
const SECOND = web("second", "198.51.100.52");
/** The newer nft's table: one plain set is enough to crash nft 1.0.6. */
const OTHER_TABLE = "add table ip othertool\nadd set ip othertool watched { type ipv4_addr ; }\n";
/** Room for building trixie's root (scripts/build-rootfs) when no earlier run did. */
const ROOT_BUILD_MS = scaled(10 * 60_000);

describe("nftables mode: another program with a newer nft creates a set", () => {
  const h: ApiHarness = {};
  const LIMIT_MS = scaled(30_000);
  let newerNft = "";

  beforeAll(async () => {
    newerNft = suiteNftProgram("trixie");
    await setUpApiRun(h, { node: NODE, pods: PODS, client: true, services: [FIRST], mode: "nftables" });
    await waitForAnswer(h, FIRST, LIMIT_MS);
  }, E2E_TEST_TIMEOUT_MS + ROOT_BUILD_MS);

  afterAll(() => tearDownApiRun(h), E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "the proxy's nft crashes and says why, the Services in the kernel keep answering, and the change lands once the set is gone",
    async () => {
      await h.topo!.must("node", [newerNft, "-f", "-"], { stdin: OTHER_TABLE, timeoutMs: 10_000 });
      createService(h, SECOND);
      await h.kubeProxy!.waitForOutput(/nft crashed \(SIGSEGV\); nft older than 1\.1\.4/, LIMIT_MS);
      // What the kernel holds still carries traffic while every sync fails.
      const held = await probe(h.topo!, "client", {
        target: `${FIRST.clusterIP}:80`,
        count: 3,
        timeoutMs: 1000,
      });
      expect(held.okCount, JSON.stringify(held.errors)).toBe(3);
      await h.topo!.must("node", [newerNft, "delete", "table", "ip", "othertool"], { timeoutMs: 10_000 });
      await waitForAnswer(h, SECOND, LIMIT_MS);
      await waitForAnswer(h, FIRST, LIMIT_MS);
    },
    LIMIT_MS * 4 + 30_000,
  );
});
