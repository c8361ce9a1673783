// The image, built and run with podman: scripts/build-image makes it (FROM scratch, the root
// from scripts/build-rootfs) into a podman store this file owns; then the image prints its
// version, runs the ipvs smoke check, runs for real in iptables mode inside a node namespace
// of a netns topology (its rules carry traffic from a client namespace to backend pods), and
// its --cleanup leaves only kubelet's chains. It has no shell, and its files match the
// allow-list in image-allow-list.txt.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureBinary, tempDir } from "../support/binary.ts";
import { renderState, type ServiceSpec, servicePortName, writeStateFile } from "../support/e2e-cluster.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest, type Harness, tearDownHarness } from "../support/e2e-harness.ts";
import { hasServiceRule, kubeProxyArgv, NODE_NAME, waitForRules } from "../support/e2e-kubeproxy.ts";
import { probeOnce, startServer } from "../support/e2e-traffic.ts";
import { scaled } from "../support/kernel-vm.ts";
import { ADDR, createTopology, type PodSpec } from "../support/netns.ts";

const REPO = join(import.meta.dir, "..", "..");
const VERSION = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).version as string;
const IMAGE = `localhost/kube-proxy-ts:${VERSION}`;
const BUILD_TIMEOUT_MS = scaled(15 * 60_000);

const work = tempDir("kpts-image-");
const podmanRoot = join(work, "podman");
const archive = join(work, "image.tar");
let built: { code: number; stdout: string; stderr: string } | undefined;

function podman(args: string[], timeoutMs = 120_000) {
  const r = spawnSync(join(REPO, "scripts", "podman"), args, {
    env: { ...process.env, KPTS_PODMAN_ROOT: podmanRoot },
    encoding: "utf8",
    timeout: scaled(timeoutMs),
    maxBuffer: 64 << 20,
  });
  return { code: r.status ?? -1, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

/** The argv of `podman run` in this file's store, with `podmanArgs` before the image. */
function podmanRunArgv(podmanArgs: string[], imageArgs: string[]): string[] {
  return [join(REPO, "scripts", "podman"), "run", "--rm", ...podmanArgs, IMAGE, ...imageArgs];
}

beforeAll(() => {
  ensureBinary();
  const r = spawnSync("bash", ["scripts/build-image", "--no-build", "--output", archive], {
    cwd: REPO,
    env: { ...process.env, KPTS_PODMAN_ROOT: podmanRoot },
    encoding: "utf8",
    timeout: BUILD_TIMEOUT_MS,
    maxBuffer: 64 << 20,
  });
  built = { code: r.status ?? -1, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
  if (built.code !== 0)
    throw new Error(`scripts/build-image exited ${built.code}:\n${built.stderr}\n${built.stdout}`);
}, BUILD_TIMEOUT_MS);

afterAll(() => {
  // Containers are gone (--rm); the store holds only this file's image.
  podman(["rm", "--all", "--force"]);
  podman(["rmi", "--all", "--force"]);
  rmSync(work, { recursive: true, force: true });
});

describe("scripts/build-image", () => {
  test("writes an OCI archive and prints the image's size; the image is in the store", () => {
    expect(existsSync(archive)).toBe(true);
    expect(built?.stdout).toMatch(/image size: [\d.]+ MB unpacked, archive .*: [\d.]+ MB/);
    expect(built?.stderr).toMatch(/size: [\d.]+ MB in \d+ files and \d+ symlinks/);
    const index = JSON.parse(
      spawnSync("tar", ["-xOf", archive, "index.json"], { encoding: "utf8" }).stdout,
    ) as { manifests: { mediaType: string }[] };
    expect(index.manifests[0]?.mediaType).toBe("application/vnd.oci.image.manifest.v1+json");
    expect(podman(["image", "exists", IMAGE]).code).toBe(0);
  });
});

describe("the image", () => {
  test("--version prints what the binary it holds prints", () => {
    const r = podman(["run", "--rm", "--network=none", IMAGE, "--version"]);
    expect(r.code).toBe(0);
    const host = spawnSync(ensureBinary(), ["--version"], { encoding: "utf8" }).stdout;
    expect(r.stdout).toBe(host);
    expect(r.stdout).toContain(`kube-proxy-ts v${VERSION} `);
  });

  test("has no shell: --entrypoint /bin/sh (or bash, busybox) cannot start", () => {
    for (const shell of ["/bin/sh", "/bin/bash", "/bin/busybox", "/usr/bin/env"]) {
      const r = podman(["run", "--rm", "--network=none", "--entrypoint", shell, IMAGE, "-c", "true"]);
      expect(r.code, `${shell}: ${r.stderr}`).not.toBe(0);
      expect(r.stderr).toMatch(/no such file or directory/);
    }
  });

  test("its files are exactly what image-allow-list.txt allows, and every listed program is there", () => {
    const index = JSON.parse(spawnSync("tar", ["-xOf", archive, "index.json"], { encoding: "utf8" }).stdout);
    const blob = (digest: string) => `blobs/sha256/${digest.replace(/^sha256:/, "")}`;
    const manifest = JSON.parse(
      spawnSync("tar", ["-xOf", archive, blob(index.manifests[0].digest)], { encoding: "utf8" }).stdout,
    ) as { layers: { digest: string }[] };
    const entries: string[] = [];
    for (const layer of manifest.layers) {
      const listing = spawnSync(
        "bash",
        ["-c", 'tar -xOf "$1" "$2" | tar -tzf -', "list", archive, blob(layer.digest)],
        { encoding: "utf8", maxBuffer: 16 << 20 },
      );
      expect(listing.status).toBe(0);
      entries.push(...listing.stdout.split("\n").filter(Boolean));
    }
    const paths = entries.map((e) => `/${e.replace(/^\.?\//, "")}`);
    const files = paths.filter((p) => !p.endsWith("/"));
    const dirs = paths.filter((p) => p.endsWith("/")).map((p) => p.slice(0, -1));

    const patterns = readFileSync(join(import.meta.dir, "image-allow-list.txt"), "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
    const toRegExp = (p: string) =>
      new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}$`);
    const allowed = patterns.map(toRegExp);
    expect(files.filter((f) => !allowed.some((re) => re.test(f)))).toEqual([]);
    const exact = patterns.filter((p) => !p.includes("*"));
    expect(exact.filter((p) => !files.includes(p))).toEqual([]);
    // Directories only hold allowed files, plus the mount points a runtime fills.
    const needed = new Set(["/proc", "/sys", "/dev", "/tmp", "/run"]);
    for (const f of files)
      for (let d = f.slice(0, f.lastIndexOf("/")); d; d = d.slice(0, d.lastIndexOf("/"))) needed.add(d);
    expect(dirs.filter((d) => d !== "" && !needed.has(d))).toEqual([]);
    for (const forbidden of ["/bin/sh", "/bin/bash", "/usr/bin/dpkg", "/usr/bin/apt", "/bin/ls", "/bin/cat"])
      expect(files).not.toContain(forbidden);
  });

  test("--mode=ipvs --dry-run --state examples/cluster.yaml: exit 3 on this kernel, 0 with a capable HostState; no tool missing", () => {
    const state = join(work, "capable.yaml");
    writeFileSync(
      state,
      `${readFileSync(join(REPO, "examples", "cluster.yaml"), "utf8")}---
apiVersion: kube-proxy-ts/v1
kind: HostState
modules: [ip_vs, ip_vs_rr, ip_vs_wrr, ip_vs_sh, nf_conntrack]
`,
    );
    const run = (file: string) =>
      podman([
        "run",
        "--rm",
        // The tools read the (empty) network namespace podman makes: they need CAP_NET_ADMIN,
        // as the DaemonSet's privileged container has it.
        "--privileged",
        "--network=none",
        "-v",
        `${file}:/state.yaml:ro`,
        IMAGE,
        "--mode=ipvs",
        "--dry-run",
        "--state",
        "/state.yaml",
        "--output=json",
      ]);
    const plain = run(join(REPO, "examples", "cluster.yaml"));
    const kernelHasIpvs = existsSync("/proc/net/ip_vs");
    expect(plain.code, plain.stderr).toBe(kernelHasIpvs ? 0 : 3);
    const report = JSON.parse(plain.stdout);
    const failed = report.checks.filter((c: { ok: boolean }) => !c.ok).map((c: { name: string }) => c.name);
    if (!kernelHasIpvs) expect(failed).toContain("ipvs kernel modules");
    // Every tool the plan needs is in the image: nothing is reported as not installed.
    expect(JSON.stringify(report.checks)).not.toContain("not installed");
    expect(report.ipvs.virtualServers.length).toBeGreaterThan(5);

    const capable = run(state);
    expect(capable.code, capable.stderr).toBe(0);
    const capableReport = JSON.parse(capable.stdout);
    expect(capableReport.checks.every((c: { ok: boolean }) => c.ok)).toBe(true);
    expect(capableReport.commands).toEqual(report.commands);
  });
});

// ---- a real run in a network namespace --------------------------------------------------------

const PODS: PodSpec[] = [
  { name: "p1", ip: "203.0.113.11" },
  { name: "p2", ip: "203.0.113.12" },
  { name: "p3", ip: "203.0.113.13" },
];
const WEB: ServiceSpec = {
  name: "web",
  type: "NodePort",
  clusterIP: "198.51.100.10",
  ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: 30080 }],
  externalTrafficPolicy: "Cluster",
  endpoints: [{ ip: "203.0.113.11" }, { ip: "203.0.113.12" }],
};

/** What kubelet puts on a node before any kube-proxy runs; --cleanup must leave it. */
const KUBELET_RULES = `*mangle
:KUBE-IPTABLES-HINT - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
COMMIT
*nat
:KUBE-KUBELET-CANARY - [0:0]
COMMIT
*filter
:KUBE-FIREWALL - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
-A INPUT -j KUBE-FIREWALL
-A OUTPUT -j KUBE-FIREWALL
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
COMMIT
`;
const KUBELET_CHAINS = ["KUBE-FIREWALL", "KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY"];

describe("the image in iptables mode, in a node namespace", () => {
  const h: Harness = {};
  const container = `kpts-image-${randomBytes(3).toString("hex")}`;
  let netnsPath = "";

  beforeAll(async () => {
    h.topo = await createTopology({ pods: PODS });
    await Promise.all(PODS.map((p) => startServer(h.topo!, p.name, { tcp: [8080] })));
    netnsPath = `/run/netns/${h.topo.nsName("node")}`;
    await h.topo.must("node", ["iptables-nft-restore", "--noflush"], { stdin: KUBELET_RULES });
    h.dir = join(work, "state");
    h.stateFile = join(h.dir, "state.yaml");
    spawnSync("mkdir", ["-p", h.dir]);
    writeStateFile(
      h.stateFile,
      renderState({ name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR }, [WEB]),
    );
    // As the DaemonSet runs it: privileged, the node's network, the host's xtables lock.
    if (!existsSync("/run/xtables.lock")) writeFileSync("/run/xtables.lock", "");
    const mounts = ["-v", `${h.dir}:/state:ro`, "-v", "/run/xtables.lock:/run/xtables.lock"];
    if (existsSync("/lib/modules")) mounts.push("-v", "/lib/modules:/lib/modules:ro");
    const args = kubeProxyArgv({ stateFile: "/state/state.yaml" }).slice(1);
    h.kubeProxy = h.topo.spawnHostDaemon(
      podmanRunArgv(["--name", container, "--privileged", `--network=ns:${netnsPath}`, ...mounts], args),
      { env: { KPTS_PODMAN_ROOT: podmanRoot } },
    );
    const comment = `${servicePortName(WEB, WEB.ports[0]!)} cluster IP`;
    await waitForRules(h.topo, h.kubeProxy, (v) => hasServiceRule(v.nat, comment), "the first sync", 60_000);
  }, E2E_TEST_TIMEOUT_MS * 2);

  afterAll(async () => {
    podman(["rm", "--force", "--time", "2", container]);
    await tearDownHarness(h);
  }, E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "its rules carry traffic: client -> NodePort and pod -> ClusterIP reach the backends",
    async () => {
      const topo = h.topo!;
      const viaNodePort = await probeOnce(topo, "client", { target: `${ADDR.node}:30080` });
      expect(viaNodePort.ok, JSON.stringify(viaNodePort)).toBe(true);
      expect(["p1", "p2"]).toContain(viaNodePort.reply!.pod);
      const viaClusterIP = await probeOnce(topo, "p3", { target: `${WEB.clusterIP}:80` });
      expect(viaClusterIP.ok, JSON.stringify(viaClusterIP)).toBe(true);
      expect(["p1", "p2"]).toContain(viaClusterIP.reply!.pod);
    },
  );

  e2eTest(h, "stopped, then --cleanup from the image leaves no KUBE chain but kubelet's", async () => {
    const topo = h.topo!;
    await h.kubeProxy!.kill(10_000);
    const cleanup = podman(["run", "--rm", "--privileged", `--network=ns:${netnsPath}`, IMAGE, "--cleanup"]);
    expect(cleanup.code, cleanup.stderr).toBe(0);
    const chains = new Set<string>();
    for (const save of [
      "iptables-nft-save",
      "ip6tables-nft-save",
      "iptables-legacy-save",
      "ip6tables-legacy-save",
    ]) {
      const r = await topo.run("node", [save], { timeoutMs: 10_000 });
      for (const m of r.stdout.matchAll(/^:(KUBE-\S+)/gm)) chains.add(`${save}: ${m[1]}`);
    }
    // Kubelet's chains stay where kubelet made them; KUBE-FIREWALL is kubelet's in every table
    // set (kube-proxy ensures it in both families, as upstream does, and never deletes it).
    for (const c of KUBELET_CHAINS) expect(chains).toContain(`iptables-nft-save: ${c}`);
    const others = [...chains].filter((c) => !KUBELET_CHAINS.includes(c.slice(c.indexOf(": ") + 2)));
    expect(others).toEqual([]);
  });
});
