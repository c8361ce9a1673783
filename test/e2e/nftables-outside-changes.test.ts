// Another program changes the nftables ruleset between two syncs of the built binary (nftables
// mode, fake API server, real kernel in a netns): it adds a table of its own and deletes one of
// kube-proxy's objects (the whole `ip kube-proxy` table, or one Service's chain and its
// service-ips element). The next change must still land, the other Services keep working, and
// the other program's table is left as it was. A deleted table comes back with that change (the
// partial sync into it fails, and the retry is a full sync that lists the kernel first); a
// deleted chain of an unchanged Service comes back at the next full sync, which the next drift
// check asks for (every 5 minutes by default; test/e2e/drift.test.ts shows it) and upstream
// leaves to its hourly one; this test does not wait for either. Each case runs twice: with changes sent over netlink (the
// default) and with everything through nft (KPTS_NFT_NETLINK=0).
//
// Last, another program that uses a newer nft (trixie's 1.1.3, built on first use by
// test/support/image-nft.ts) creates a set while the proxy runs with the host's nft (bookworm's
// 1.0.6): nft before 1.1.4 crashes on such sets (upstream's kubernetes#136786). A change still
// lands, as partial syncs go over netlink without nft; a full sync runs nft, which dies with
// SIGSEGV: the Services in the kernel must keep answering, the error must say what happened, and
// the syncs must succeed again once that set is gone.
//
// Run as root: `node_modules/.bin/bun test test/e2e/nftables-outside-changes.test.ts`.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import {
  type ApiHarness,
  createService,
  httpService,
  setUpApiRun,
  tearDownApiRun,
  waitForAnswer,
} from "../support/e2e-api-harness.ts";
import { type NodeSpec, nodeObject, type ServiceSpec } from "../support/e2e-cluster.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest } from "../support/e2e-harness.ts";
import { NODE_NAME } from "../support/e2e-kubeproxy.ts";
import { nftDiagnostics, nftTables } from "../support/e2e-nft.ts";
import { probe } from "../support/e2e-traffic.ts";
import type { KObject } from "../support/fake-apiserver.ts";
import { suiteNftProgram } from "../support/image-nft.ts";
import { scaled } from "../support/kernel-vm.ts";
import { ADDR, type PodSpec } from "../support/netns.ts";

const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const PODS: PodSpec[] = [{ name: "web1", ip: "203.0.113.31" }];
const web = (name: string, clusterIP: string): ServiceSpec => httpService(name, clusterIP, "203.0.113.31");
const FIRST = web("first", "198.51.100.41");
const SECOND = web("second", "198.51.100.42");

/** The other program's table: a filter chain on input that only counts. */
const OTHER_TABLE = [
  "add table inet othertool",
  "add chain inet othertool watch { type filter hook input priority 10; policy accept; }",
  'add rule inet othertool watch counter comment "not kube-proxy\'s"',
].join("\n");

async function nft(h: ApiHarness, script: string): Promise<void> {
  await h.topo!.must("node", ["nft", "-f", "-"], { stdin: `${script}\n`, timeoutMs: 10_000 });
}

/** Waits until `s` answers; the ruleset is in the error when it does not. */
async function answers(h: ApiHarness, s: ServiceSpec, limitMs: number): Promise<void> {
  try {
    await waitForAnswer(h, s, limitMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await nftDiagnostics(h.topo!)}`);
  }
}

/**
 * Past the start's full syncs (a second one may follow the Node's first sight): a Service
 * created now lands by a partial sync, and no full sync is pending after it.
 */
async function settleIntoPartialSyncs(h: ApiHarness, limitMs: number): Promise<void> {
  const zero = web("zero", "198.51.100.40");
  createService(h, zero);
  await h.kubeProxy!.waitForOutput(/"Syncing nftables rules" ipFamily="IPv4" fullSync=false/, limitMs);
  await answers(h, zero, limitMs);
}

/** The service chain `service-ips` sends `s`'s ClusterIP to (read from the kernel). */
async function serviceChainOf(h: ApiHarness, s: ServiceSpec): Promise<string> {
  const map = await h.topo!.must("node", ["nft", "list", "map", "ip", "kube-proxy", "service-ips"], {
    timeoutMs: 10_000,
  });
  const m = new RegExp(`${s.clusterIP.replaceAll(".", "\\.")} \\. tcp \\. 80 : goto (\\S+)`).exec(map);
  if (!m) throw new Error(`no service-ips element for ${s.clusterIP}:\n${map}`);
  return m[1]!.replace(/,$/, "");
}

interface Interference {
  readonly what: string;
  /** What the other program does to kube-proxy's tables, besides adding its own. */
  readonly run: (h: ApiHarness) => Promise<void>;
  /** The Services that must answer after the change. */
  readonly answering: readonly ServiceSpec[];
}

const INTERFERENCES: readonly Interference[] = [
  {
    what: "deletes the whole ip kube-proxy table",
    run: (h) => nft(h, "delete table ip kube-proxy"),
    answering: [FIRST, SECOND],
  },
  {
    what: "deletes one Service's chain and its service-ips element",
    run: deleteSecondServiceChain,
    answering: [FIRST],
  },
];

async function deleteSecondServiceChain(h: ApiHarness): Promise<void> {
  const chain = await serviceChainOf(h, SECOND);
  await nft(
    h,
    [
      `delete element ip kube-proxy service-ips { ${SECOND.clusterIP} . tcp . 80 }`,
      `flush chain ip kube-proxy ${chain}`,
      `delete chain ip kube-proxy ${chain}`,
    ].join("\n"),
  );
}

/** Partial syncs over netlink (the default), and everything through nft (KPTS_NFT_NETLINK=0). */
const WRITERS = [
  { writer: "netlink", env: {} },
  { writer: "nft", env: { KPTS_NFT_NETLINK: "0" } },
] as const;

for (const { what, run, answering } of INTERFERENCES)
  for (const { writer, env } of WRITERS)
    describe(`nftables mode (changes through ${writer}): another program adds a table and ${what}`, () => {
      const h: ApiHarness = {};
      const LIMIT_MS = scaled(30_000);

      beforeAll(async () => {
        await setUpApiRun(h, {
          node: NODE,
          pods: PODS,
          client: true,
          services: [FIRST, SECOND],
          mode: "nftables",
          env,
        });
        await answers(h, FIRST, LIMIT_MS);
        await answers(h, SECOND, LIMIT_MS);
      }, E2E_TEST_TIMEOUT_MS);

      afterAll(() => tearDownApiRun(h), E2E_TEST_TIMEOUT_MS);

      e2eTest(
        h,
        "the next change lands, the other Services keep working, the other table stays",
        async () => {
          const tablesBefore = await nftTables(h.topo!);
          await nft(h, OTHER_TABLE);
          await run(h);
          const otherBefore = await h.topo!.must("node", ["nft", "list", "table", "inet", "othertool"]);
          // The change after the interference: a new Service.
          const third = web("third", "198.51.100.43");
          createService(h, third);
          await answers(h, third, LIMIT_MS);
          for (const s of answering) await answers(h, s, LIMIT_MS);
          expect(await nftTables(h.topo!)).toEqual([...tablesBefore, "table inet othertool"].sort());
          const otherAfter = await h.topo!.must("node", ["nft", "list", "table", "inet", "othertool"]);
          expect(otherAfter.replace(/packets \d+ bytes \d+/g, "")).toBe(
            otherBefore.replace(/packets \d+ bytes \d+/g, ""),
          );
          // The change went the way this run writes changes (sent, or refused as a netlink batch).
          const sentOverNetlink = /Sent nftables transaction over netlink|nft \(netlink batch\)/.test(
            h.kubeProxy!.stderr(),
          );
          expect(sentOverNetlink).toBe(writer === "netlink");
        },
        LIMIT_MS * 4 + 30_000,
      );
    });

/** The newer nft's table: one plain set is enough to crash nft 1.0.6. */
const NEWER_NFT_TABLE = "add table ip othertool\nadd set ip othertool watched { type ipv4_addr ; }\n";
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
    await settleIntoPartialSyncs(h, LIMIT_MS);
    await h.kubeProxy!.waitForOutput(/Sent nftables transaction over netlink.* thread="worker"/, LIMIT_MS);
  }, E2E_TEST_TIMEOUT_MS + ROOT_BUILD_MS);

  afterAll(() => tearDownApiRun(h), E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "a change still lands (over netlink); a full sync's nft crashes and says why, the Services keep answering, and it lands once the set is gone",
    async () => {
      await h.topo!.must("node", [newerNft, "-f", "-"], { stdin: NEWER_NFT_TABLE, timeoutMs: 10_000 });
      // A partial sync does not run nft: the change lands although nft would crash.
      createService(h, SECOND);
      await waitForAnswer(h, SECOND, LIMIT_MS);
      // A full sync (the Node's labels changed) runs nft, which crashes.
      h.api!.server.update(
        "Node",
        nodeObject({ ...NODE, labels: { "e2e.kube-proxy-ts/resync": "1" } }) as KObject,
      );
      await h.kubeProxy!.waitForOutput(/nft crashed \(SIGSEGV\); nft older than 1\.1\.4/, LIMIT_MS);
      // What the kernel holds still carries traffic while every sync fails.
      for (const s of [FIRST, SECOND]) {
        const held = await probe(h.topo!, "client", {
          target: `${s.clusterIP}:80`,
          count: 3,
          timeoutMs: 1000,
        });
        expect(held.okCount, JSON.stringify(held.errors)).toBe(3);
      }
      await h.topo!.must("node", [newerNft, "delete", "table", "ip", "othertool"], { timeoutMs: 10_000 });
      const third = web("third", "198.51.100.43");
      createService(h, third);
      await waitForAnswer(h, third, LIMIT_MS);
      await waitForAnswer(h, FIRST, LIMIT_MS);
      await waitForAnswer(h, SECOND, LIMIT_MS);
    },
    LIMIT_MS * 6 + 30_000,
  );
});
