// Replay (--dry-run with several --state) against the live path, in every mode: the built
// binary replays a sequence of snapshots; in this process the same mode is built as for a real
// run and driven the way a real run with --state is (the file source re-reads the file and
// delivers the differences, the sync controller's loop syncs on its own), on the same simulated
// host, its clock stepped as the replay steps it. Each step must produce the same commands on
// both sides. Step 1 of the replay also holds what a run does before its first sync (sysctls,
// leftover cleanup): its sync's commands come last.

import { afterAll, describe, expect, test } from "bun:test";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { detectNodeIPs } from "../../src/app/node-ips.ts";
import { REPLAY_STEP_MS } from "../../src/app/replay.ts";
import { createSimulatedHost } from "../../src/app/simulated-host.ts";
import { defaultProxyConfig } from "../../src/config/defaults.ts";
import { effectiveFeatureGates } from "../../src/config/feature-gates.ts";
import type { ProxyConfig } from "../../src/config/types.ts";
import { stdinPieces } from "../../src/exec/dry-run.ts";
import { createStateFileSource } from "../../src/k8s/state-file-source.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { buildIptablesMode } from "../../src/modes/iptables/build.ts";
import { buildIpvsMode } from "../../src/modes/ipvs/build.ts";
import { buildNftablesMode } from "../../src/modes/nftables/build.ts";
import type { ModeBuildOptions } from "../../src/modes/types.ts";
import { createMetrics } from "../../src/proxy/metrics/metrics.ts";
import type { Proxier } from "../../src/proxy/proxier.ts";
import { SyncController } from "../../src/proxy/sync-controller.ts";
import { steppedClock } from "../../src/util/clock.ts";
import { runBinaryAsync, tempDir } from "../support/binary.ts";
import { scaled } from "../support/kernel-vm.ts";
import { waitFor } from "../support/wait.ts";

const EXAMPLE = join(import.meta.dir, "..", "..", "examples", "cluster.yaml");
const NODE = "node-a";

// biome-ignore lint/suspicious/noExplicitAny: snapshot documents are edited as plain YAML data
type Doc = any;

function exampleDocs(): Doc[] {
  return parseAllDocuments(require("node:fs").readFileSync(EXAMPLE, "utf8")).map((d) => d.toJS());
}

const named = (docs: Doc[], kind: string, name: string) =>
  docs.find((d) => d.kind === kind && d.metadata?.name === name);

/** The cluster moving on: an endpoint goes, a Service goes and another comes, an endpoint ends. */
function snapshots(): Doc[][] {
  const s1 = exampleDocs();
  const s2 = structuredClone(s1);
  named(s2, "EndpointSlice", "web-abc12").endpoints.pop();
  const s3 = structuredClone(s2).filter(
    (d: Doc) => !(d.metadata?.name === "shop" || d.metadata?.name === "shop-9f8d7"),
  );
  s3.push(
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "api", namespace: "default" },
      spec: {
        type: "ClusterIP",
        clusterIP: "198.51.100.60",
        clusterIPs: ["198.51.100.60"],
        ipFamilies: ["IPv4"],
        ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }],
      },
    },
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: "api-1", namespace: "default", labels: { "kubernetes.io/service-name": "api" } },
      addressType: "IPv4",
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
      endpoints: [
        { addresses: ["203.0.113.21"], conditions: { ready: true }, nodeName: NODE },
        { addresses: ["203.0.113.22"], conditions: { ready: true }, nodeName: "node-b" },
      ],
    },
  );
  const s4 = structuredClone(s3);
  const dns = named(s4, "EndpointSlice", "dns-x7k2p");
  dns.endpoints[0].conditions = { ready: false, serving: true, terminating: true };
  // Unchanged objects: the daemon runs no sync, and neither does the replay.
  const s5 = structuredClone(s4);
  return [s1, s2, s3, s4, s5];
}

const render = (docs: Doc[]) => docs.map((d) => stringify(d)).join("---\n");

interface Command {
  readonly argv: readonly string[];
  readonly stdin?: string;
}

const dir = tempDir("kpts-replay-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const steps = snapshots();
const files = steps.map((docs, i) => {
  const f = join(dir, `step${i + 1}.yaml`);
  writeFileSync(f, render(docs));
  return f;
});

async function replayed(mode: string): Promise<Command[][]> {
  const args = [
    "--dry-run",
    "--output=json",
    `--proxy-mode=${mode}`,
    ...files.flatMap((f) => ["--state", f]),
  ];
  const r = await runBinaryAsync(args, { timeoutMs: 60_000 });
  expect(r.stderr).not.toContain("panic");
  expect(r.code).toBe(0);
  const out = JSON.parse(r.stdout) as { steps: { commands: Command[]; notes: string[] }[] };
  expect(out.steps).toHaveLength(files.length);
  return out.steps.map((s) => s.commands);
}

type Builder = (o: ModeBuildOptions) => Promise<{ proxier: Proxier }>;
const BUILDERS: Record<string, Builder> = {
  iptables: (o) => buildIptablesMode(o),
  // Without the netlink writers: this process must never write to the host's kernel.
  nftables: (o) => buildNftablesMode(o),
  ipvs: (o) => buildIpvsMode(o),
};

/** The live path over the simulated host: a running controller fed by the --state file source. */
async function live(mode: string): Promise<Command[][]> {
  const config: ProxyConfig = defaultProxyConfig();
  config.mode = mode as ProxyConfig["mode"];
  config.hostnameOverride = NODE;
  const node = named(steps[0]!, "Node", NODE);
  const rawIPs: string[] = node.status.addresses
    .filter((a: Doc) => a.type === "InternalIP")
    .map((a: Doc) => a.address);
  const host = await createSimulatedHost(undefined, rawIPs);
  // Time as the replay takes it: each snapshot REPLAY_STEP_MS after the one before.
  const time = steppedClock();
  const featureGates = effectiveFeatureGates(config.featureGates);
  const built = await BUILDERS[mode]!({
    exec: host.exec,
    config,
    featureGates,
    metrics: createMetrics(),
    log: nullLogger,
    nodeName: NODE,
    nodeIPs: (await detectNodeIPs(config.bindAddress, () => rawIPs, nullLogger)).ips,
    sysctl: host.sysctl,
    backend: "auto",
    clock: time.clock,
  });
  const controller = new SyncController({
    nodeName: NODE,
    proxier: built.proxier,
    minSyncPeriodMs: 0,
    syncPeriodMs: 3_600_000,
    logger: nullLogger,
    featureGates,
  });
  const stateFile = join(dir, `live-${mode}.yaml`);
  const publish = (i: number) => {
    // Replaced in one rename, so the source never reads half a file.
    writeFileSync(`${stateFile}.new`, render(steps[i]!));
    renameSync(`${stateFile}.new`, stateFile);
  };
  publish(0);
  const source = createStateFileSource({ path: stateFile, nodeName: NODE, logger: nullLogger, pollMs: 20 });
  const out: Command[][] = [];
  let taken = 0;
  const take = () => {
    const commands = host.recorder.commands.slice(taken).map((c) => {
      const pieces = stdinPieces(c);
      return pieces === undefined ? { argv: c.argv } : { argv: c.argv, stdin: pieces.join("") };
    });
    taken = host.recorder.commands.length;
    out.push(commands);
  };
  // Everything before the first sync (the build's own writes) is not part of a sync's commands.
  taken = host.recorder.commands.length;
  controller.start();
  await source.start(controller);
  try {
    await waitFor(() => controller.syncCount === 1, scaled(20_000), `${mode}: the first sync`);
    take();
    for (let i = 1; i < steps.length; i++) {
      const before = controller.syncCount;
      time.advance(REPLAY_STEP_MS);
      publish(i);
      if (i === steps.length - 1) {
        // Nothing changed: give the source time to see the file and show that no sync follows.
        const seen = Date.now() + scaled(500);
        await waitFor(() => Date.now() > seen, scaled(5_000), "the unchanged file to be read");
        expect(controller.syncCount).toBe(before);
        take();
        continue;
      }
      await waitFor(
        () => controller.syncCount > before,
        scaled(20_000),
        `${mode}: the sync of step ${i + 1}`,
      );
      take();
    }
  } finally {
    await source.stop();
    await controller.stop();
  }
  return out;
}

describe("replay equals the live path, step by step", () => {
  for (const mode of ["iptables", "nftables", "ipvs"]) {
    test(
      mode,
      async () => {
        const [fromReplay, fromLive] = await Promise.all([replayed(mode), live(mode)]);
        expect(fromLive).toHaveLength(fromReplay.length);
        // Step 1: the replay's commands end with the live first sync's.
        const first = fromLive[0]!;
        expect(first.length).toBeGreaterThan(0);
        expect(fromReplay[0]!.slice(-first.length)).toEqual(first);
        for (let i = 1; i < fromReplay.length; i++) {
          expect({ step: i + 1, commands: fromReplay[i] }).toEqual({ step: i + 1, commands: fromLive[i] });
        }
        // The steps are partial syncs that change something, and the last changes nothing.
        for (let i = 1; i < 4; i++) expect(fromReplay[i]!.length).toBeGreaterThan(0);
        expect(fromReplay[4]).toEqual([]);
      },
      scaled(120_000),
    );
  }
});

describe("replay as an operator runs it", () => {
  test(
    "the text report shows each step, and a step without changes runs no sync",
    async () => {
      const args = ["--dry-run", "--proxy-mode=nftables", ...files.flatMap((f) => ["--state", f])];
      const r = await runBinaryAsync(args, { timeoutMs: 60_000 });
      expect(r.code).toBe(0);
      for (let i = 1; i <= files.length; i++)
        expect(r.stdout).toContain(`=== Step ${i} of ${files.length}: ${files[i - 1]} ===`);
      expect(r.stdout).toContain("(full sync on the simulated host)");
      expect(r.stdout).toContain("no sync: nothing a sync reads changed");
      // Step 2 deletes the endpoint that left, and only touches web's chains.
      const step2 = r.stdout.slice(r.stdout.indexOf("=== Step 2"), r.stdout.indexOf("=== Step 3"));
      const commands = step2.slice(step2.indexOf("Commands that a real run would execute"));
      expect(commands).toContain("203.0.113.71");
      expect(commands).not.toContain("kube-system/dns");
    },
    scaled(60_000),
  );

  test(
    "the first step starts from the snapshot's HostState: what is stale there is removed",
    async () => {
      const hostState = {
        apiVersion: "kube-proxy-ts/v1",
        kind: "HostState",
        ipvsSave: "-A -t 198.51.100.99:80 -s rr\n-a -t 198.51.100.99:80 -r 203.0.113.99:80 -m -w 1\n",
      };
      const seeded = join(dir, "seeded.yaml");
      writeFileSync(seeded, `${render(steps[0]!)}---\n${stringify(hostState)}`);
      const args = [
        "--dry-run",
        "--output=json",
        "--proxy-mode=ipvs",
        "--state",
        seeded,
        "--state",
        files[1]!,
      ];
      const r = await runBinaryAsync(args, { timeoutMs: 60_000 });
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout) as { steps: { commands: Command[] }[] };
      const ipvsInput = (cmds: Command[]) =>
        cmds
          .filter((c) => c.argv[0] === "ipvsadm")
          .map((c) => c.stdin)
          .join("");
      expect(ipvsInput(out.steps[0]!.commands)).toContain("-D -t 198.51.100.99:80");
      expect(ipvsInput(out.steps[1]!.commands)).not.toContain("198.51.100.99");
    },
    scaled(60_000),
  );

  test(
    "several --state without --dry-run is refused, naming the flag",
    async () => {
      const r = await runBinaryAsync(["--state", files[0]!, "--state", files[1]!], { timeoutMs: 30_000 });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("--state");
      expect(r.stderr).toContain("only --dry-run");
    },
    scaled(60_000),
  );
});
