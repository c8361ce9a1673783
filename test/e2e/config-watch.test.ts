// A real run of dist/kube-proxy-ts with --config, in a throwaway network namespace: rewriting the
// file with the same content changes nothing, new content (or a vanished file) ends the run with
// exit 1 and upstream's "content ... was updated" error, so the DaemonSet restarts it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/binary.ts";
import { diagnostics, hasServiceRule, kubeProxyArgv, waitForRules } from "../support/e2e-kubeproxy.ts";
import { createTopology, type Daemon, type Topology } from "../support/netns.ts";

const STATE = `
apiVersion: v1
kind: Node
metadata: { name: node-a }
status:
  addresses: [{ type: InternalIP, address: 192.0.2.10 }]
---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: default }
spec:
  clusterIP: 198.51.100.10
  clusterIPs: [198.51.100.10]
  ports: [{ name: http, port: 80, protocol: TCP }]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  namespace: default
  labels: { kubernetes.io/service-name: web }
addressType: IPv4
ports: [{ name: http, port: 8080, protocol: TCP }]
endpoints:
  - addresses: [203.0.113.11]
    conditions: { ready: true }
    nodeName: node-a
`;

const CONFIG = (syncPeriod: string) =>
  `apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nconfigSyncPeriod: ${syncPeriod}\n`;

const UPDATED = "content of the proxy server's configuration file was updated";

describe("--config is watched during a real run", () => {
  let topo: Topology;
  const dir = tempDir("kpts-cfgwatch-");
  const stateFile = join(dir, "state.yaml");
  writeFileSync(stateFile, STATE);

  beforeAll(async () => {
    topo = await createTopology({ pods: [], client: false });
  }, 60_000);

  afterAll(async () => {
    await topo?.destroy();
  }, 60_000);

  /** Starts the proxy on `configFile` and waits until it has synced its rules (-v=2 logs that). */
  async function start(configFile: string): Promise<Daemon> {
    const daemon = topo.spawnDaemon(
      "node",
      kubeProxyArgv({ stateFile, extraArgs: ["--config", configFile] }),
    );
    try {
      await daemon.waitForOutput(/SyncProxyRules complete/, 30_000);
    } catch (err) {
      throw new Error(`${err}\n${await diagnostics(topo, daemon)}`);
    }
    await waitForRules(
      topo,
      daemon,
      (v) => hasServiceRule(v.nat, "default/web:http cluster IP"),
      "web rules",
    );
    return daemon;
  }

  /** The exit code within `ms`, or undefined if the daemon is still running then. */
  function exitWithin(daemon: Daemon, ms: number): Promise<number | undefined> {
    return Promise.race([daemon.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), ms))]);
  }

  test("same content keeps it running; new content makes it exit 1 with the reason", async () => {
    const configFile = join(dir, "config.yaml");
    writeFileSync(configFile, CONFIG("15m0s"));
    const daemon = await start(configFile);
    try {
      // What a ConfigMap resync or `touch` does: the bytes stay the same.
      writeFileSync(configFile, CONFIG("15m0s"));
      expect(await exitWithin(daemon, 4000)).toBeUndefined();

      // An editor's save: new content renamed over the file.
      writeFileSync(join(dir, "config.yaml.new"), CONFIG("10m0s"));
      renameSync(join(dir, "config.yaml.new"), configFile);
      const code = await exitWithin(daemon, 20_000);
      if (code !== 1) throw new Error(`expected exit 1, got ${code}\n${await diagnostics(topo, daemon)}`);
      expect(daemon.stderr()).toContain(UPDATED);
      // Rules stay in place when it exits, as on SIGTERM.
      const nat = await topo.must("node", ["iptables-nft-save", "-t", "nat"]);
      const legacy = await topo.run("node", ["iptables-legacy-save", "-t", "nat"]);
      expect(hasServiceRule(nat + legacy.stdout, "default/web:http cluster IP")).toBe(true);
    } finally {
      await daemon.kill();
    }
  }, 90_000);

  test("a config file that vanishes while the proxy starts up ends the run with exit 1", async () => {
    const configFile = join(dir, "gone.yaml");
    writeFileSync(configFile, CONFIG("15m0s"));
    // Removed once it has been read, whether or not the first sync has finished by then: a stop
    // during the first sync must still end the process.
    const daemon = topo.spawnDaemon(
      "node",
      kubeProxyArgv({ stateFile, extraArgs: ["--config", configFile] }),
    );
    try {
      await daemon.waitForOutput(/Reading cluster state/, 30_000);
      rmSync(configFile);
      const code = await exitWithin(daemon, 20_000);
      if (code !== 1) throw new Error(`expected exit 1, got ${code}\n${await diagnostics(topo, daemon)}`);
      expect(daemon.stderr()).toContain("configuration file was removed or cannot be read");
    } finally {
      await daemon.kill();
    }
  }, 90_000);
});
