// End-to-end checks of the compiled binary: what an operator types, what they get back.
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureBinary, runBinary, tempDir } from "../support/binary.ts";

const kernelHasIpvs = existsSync("/proc/net/ip_vs");

describe("dist/kube-proxy-ts", () => {
  test("--version prints version, git commit and runtime", () => {
    const r = runBinary(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^kube-proxy-ts v\d+\.\d+\.\d+ \(git commit [0-9a-f]{7,}(-dirty)?, built .*runtime bun \d/,
    );
    // The upstream release whose behaviour is the reference: 1.37 (1.31 is end of life).
    expect(r.stdout).toContain("compatible with kube-proxy v1.37)");
  });

  test("--help lists upstream flags and ours", () => {
    const r = runBinary(["--help"]);
    expect(r.code).toBe(0);
    for (const flag of [
      "--proxy-mode",
      "--ipvs-scheduler",
      "--iptables-masquerade-bit",
      "--dry-run",
      "--state",
    ]) {
      expect(r.stdout).toContain(flag);
    }
  });

  test(`--proxy-mode=ipvs --dry-run --output=json: the real kernel check (IPVS in kernel: ${kernelHasIpvs})`, () => {
    const r = runBinary(["--proxy-mode=ipvs", "--dry-run", "--output=json"]);
    const report = JSON.parse(r.stdout);
    expect(report.mode).toBe("ipvs");
    const modules = report.checks.find((c: { name: string }) => c.name === "ipvs kernel modules");
    if (kernelHasIpvs) {
      expect(modules.detail).not.toContain("missing required kernel modules: ip_vs,");
    } else {
      expect(r.code).toBe(3);
      expect(modules.ok).toBe(false);
      expect(modules.detail).toContain(
        "missing required kernel modules: ip_vs, ip_vs_rr, ip_vs_wrr, ip_vs_sh",
      );
    }
    expect(Array.isArray(report.commands)).toBe(true);
    // The full plan is printed whatever the verdict.
    expect(report.ipvs.virtualServers).toContainEqual(
      expect.objectContaining({
        address: "198.51.100.10",
        port: 80,
        protocol: "TCP",
        scheduler: "rr",
        timeout: 10800,
      }),
    );
    expect(report.commands.map((c: { argv: string[] }) => c.argv[0])).toEqual(
      expect.arrayContaining(["ipset", "ipvsadm", "ip"]),
    );
  });

  test("--dry-run --state examples/cluster.yaml --output=json lists every service port with its endpoints", () => {
    const r = runBinary(["--dry-run", "--state", "examples/cluster.yaml", "--output=json"]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.mode).toBe("iptables");
    expect(report.services.map((s: { name: string }) => s.name)).toEqual([
      "default/pending:grpc",
      "default/shop:http",
      "default/web:http",
      "ingress/ingress:https",
      "kube-system/dns:dns",
      "kube-system/dns:dns-tcp",
      "monitoring/metrics:metrics",
    ]);
    const ingress = report.services.find((s: { name: string }) => s.name === "ingress/ingress:https");
    expect(ingress).toMatchObject({
      type: "LoadBalancer",
      externalIPs: ["192.0.2.100"],
      loadBalancerIPs: ["192.0.2.200"],
      loadBalancerSourceRanges: ["203.0.113.128/25"],
      externalTrafficPolicy: "Local",
      healthCheckNodePort: 32000,
    });
    const metrics = report.services.find((s: { name: string }) => s.name === "monitoring/metrics:metrics");
    expect(metrics.endpoints).toContainEqual({
      endpoint: "203.0.113.110:9100",
      node: "node-b",
      local: false,
      ready: false,
      serving: true,
      terminating: true,
    });
    expect(report.notes).toContain("node node-a");
  });

  test("a HostState that provides the modules and ipset makes the ipvs smoke check pass (exit 0)", () => {
    const dir = tempDir();
    const state = join(dir, "state.yaml");
    writeFileSync(
      state,
      `${readFileSync("examples/cluster.yaml", "utf8")}---
apiVersion: kube-proxy-ts/v1
kind: HostState
kernelVersion: 6.1.0
modules: [ip_vs, ip_vs_rr, ip_vs_wrr, ip_vs_sh, nf_conntrack]
ipsetVersion: v7.17
`,
    );
    const r = runBinary(["--mode=ipvs", "--dry-run", "--state", state, "--output=json"]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.checks.every((c: { ok: boolean }) => c.ok)).toBe(true);
    expect(report.commands).toContainEqual({ argv: ["sysctl", "-w", "net.ipv4.vs.conntrack=1"] });
    expect(report.checks.find((c: { name: string }) => c.name === "cluster state").detail).toContain(
      "6 Services",
    );
  });

  test("ipvs smoke check: missing modules exit 3 with the full plan; a HostState providing them exits 0 with the same plan", () => {
    const without = runBinary([
      "--mode=ipvs",
      "--dry-run",
      "--state",
      "examples/cluster.yaml",
      "--output=json",
    ]);
    const dir = tempDir();
    const state = join(dir, "state.yaml");
    writeFileSync(
      state,
      `${readFileSync("examples/cluster.yaml", "utf8")}---
apiVersion: kube-proxy-ts/v1
kind: HostState
modules: [ip_vs, ip_vs_rr, ip_vs_wrr, ip_vs_sh, nf_conntrack]
ipsetVersion: v7.17
`,
    );
    const withModules = runBinary(["--mode=ipvs", "--dry-run", "--state", state, "--output=json"]);
    const a = JSON.parse(without.stdout);
    const b = JSON.parse(withModules.stdout);
    if (!kernelHasIpvs) {
      expect(without.code).toBe(3);
      expect(a.checks.find((c: { name: string }) => c.name === "ipvs kernel modules").detail).toContain(
        "ip_vs",
      );
    }
    expect(withModules.code).toBe(0);
    expect(b.ipvs).toEqual(a.ipvs);
    expect(b.commands).toEqual(a.commands);
    expect(b.ipvs.virtualServers.length).toBeGreaterThan(5);
  });

  test("--config with three mistakes exits 1 and names all three fields", () => {
    const dir = tempDir();
    const file = join(dir, "bad.yaml");
    writeFileSync(
      file,
      [
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1",
        "kind: KubeProxyConfiguration",
        "mode: ipvs",
        "iptables:",
        "  masqueradeBit: 40",
        "ipvs:",
        "  scheduler: bogus",
        "clusterCIDR: 198.51.100.0/33",
        "",
      ].join("\n"),
    );
    const r = runBinary(["--config", file]);
    expect(r.code).toBe(1);
    for (const needle of [
      "iptables.masqueradeBit",
      "40",
      "ipvs.scheduler",
      "bogus",
      "clusterCIDR",
      "198.51.100.0/33",
    ]) {
      expect(r.stderr).toContain(needle);
    }
  });

  test("--write-config-to writes the effective config, which loads back", () => {
    const dir = tempDir();
    const out = join(dir, "effective.yaml");
    const r = runBinary(["--ipvs-scheduler=lc", "--iptables-sync-period=1m30s", `--write-config-to=${out}`]);
    expect(r.code).toBe(0);
    const text = readFileSync(out, "utf8");
    expect(text).toContain("kind: KubeProxyConfiguration");
    expect(text).toContain("scheduler: lc");
    expect(text).toContain("syncPeriod: 1m30s");
    const again = runBinary(["--config", out, "--write-config-to", join(dir, "again.yaml")]);
    expect(again.code).toBe(0);
    expect(readFileSync(join(dir, "again.yaml"), "utf8")).toBe(text);
  });

  test("an unknown flag exits 1 and names it", () => {
    const r = runBinary(["--no-such-flag=1"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("--no-such-flag");
  });
});

describe("the binary's environment is the one it was started with", () => {
  test(".env and bunfig.toml in the working directory are not read", () => {
    const dir = tempDir("kpts-dotenv-");
    writeFileSync(join(dir, ".env"), "KUBECONFIG=/nonexistent/kubeconfig-from-dotenv\n");
    writeFileSync(join(dir, "bunfig.toml"), 'preload = ["./nonexistent-preload.ts"]\n');
    const env = { ...process.env };
    delete env.KUBECONFIG;
    delete env.KUBERNETES_SERVICE_HOST;
    const r = spawnSync(ensureBinary(), ["--dry-run", "--output=json"], {
      cwd: dir,
      env,
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(r.stdout + r.stderr).not.toContain("kubeconfig-from-dotenv");
    expect(r.stderr).not.toContain("nonexistent-preload");
    // The embedded example was used: no kubeconfig came from anywhere.
    expect(r.stdout).toContain("examples/cluster.yaml (embedded)");
  });
});
