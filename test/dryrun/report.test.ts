import { describe, expect, test } from "bun:test";
import {
  type DryRunReport,
  dryRunExitCode,
  renderJson,
  renderText,
  shellQuote,
} from "../../src/dryrun/report.ts";

const base: DryRunReport = {
  mode: "ipvs",
  checks: [
    { name: "ipvs kernel modules", ok: false, detail: "missing required kernel modules: ip_vs, ip_vs_rr" },
    { name: "ipset version", ok: true, detail: "ipset 7.17" },
  ],
  commands: [
    { argv: ["sysctl", "-w", "net.ipv4.ip_forward=1"] },
    { argv: ["ipset", "restore", "-exist"], stdin: "create KUBE-CLUSTER-IP hash:ip,port\n" },
  ],
  ipvs: {
    virtualServers: [
      {
        address: "198.51.100.10",
        port: 80,
        protocol: "TCP",
        scheduler: "rr",
        flags: [],
        timeout: 0,
        realServers: [{ address: "203.0.113.11", port: 8080, weight: 1 }],
      },
    ],
  },
  services: [
    {
      name: "default/web:http",
      type: "ClusterIP",
      protocol: "TCP",
      port: 80,
      clusterIPs: ["198.51.100.10"],
      sessionAffinity: { timeoutSeconds: 10800 },
      externalTrafficPolicy: "Cluster",
      internalTrafficPolicy: "Cluster",
      endpoints: [
        {
          endpoint: "203.0.113.11:8080",
          node: "node-a",
          local: true,
          ready: true,
          serving: true,
          terminating: false,
        },
      ],
    },
    {
      name: "default/pending:grpc",
      type: "ClusterIP",
      protocol: "TCP",
      port: 9000,
      clusterIPs: ["198.51.100.50"],
      externalTrafficPolicy: "Cluster",
      internalTrafficPolicy: "Cluster",
      endpoints: [],
    },
  ],
  notes: ["cluster state: embedded example"],
};

describe("dry-run report", () => {
  test("exit code is 3 when any check fails, 0 when all pass", () => {
    expect(dryRunExitCode(base)).toBe(3);
    expect(dryRunExitCode({ ...base, checks: base.checks.map((c) => ({ ...c, ok: true })) })).toBe(0);
  });

  test("JSON follows the DESIGN.md contract", () => {
    const parsed = JSON.parse(renderJson(base));
    expect(parsed.mode).toBe("ipvs");
    expect(parsed.checks).toEqual(base.checks);
    expect(parsed.commands[0]).toEqual({ argv: ["sysctl", "-w", "net.ipv4.ip_forward=1"] });
    expect(parsed.commands[1].stdin).toBe("create KUBE-CLUSTER-IP hash:ip,port\n");
    expect(parsed.ipvs.virtualServers[0].realServers[0].port).toBe(8080);
    expect(parsed.services.map((s: { name: string }) => s.name)).toEqual([
      "default/web:http",
      "default/pending:grpc",
    ]);
  });

  test("text shows failed checks, commands with heredoc stdin, and the verdict", () => {
    const text = renderText(base);
    expect(text).toContain("[FAIL] ipvs kernel modules: missing required kernel modules: ip_vs, ip_vs_rr");
    expect(text).toContain("[ OK ] ipset version");
    expect(text).toContain("ipset restore -exist <<'EOF'\ncreate KUBE-CLUSTER-IP hash:ip,port\nEOF");
    expect(text).toContain("TCP 198.51.100.10:80 rr");
    expect(text).toContain("exit 3");
    expect(text).toContain("default/web:http ClusterIP TCP 198.51.100.10:80 (affinity ClientIP 10800s)");
    expect(text).toContain("-> 203.0.113.11:8080 on node-a (local) ready");
    expect(text).toContain(
      "default/pending:grpc ClusterIP TCP 198.51.100.50:9000\n    (no endpoints: traffic is rejected)",
    );
  });

  test("shell quoting", () => {
    expect(shellQuote("net.ipv4.ip_forward=1")).toBe("net.ipv4.ip_forward=1");
    expect(shellQuote("a b")).toBe("'a b'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
  });
});
