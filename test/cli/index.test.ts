import { describe, expect, test } from "bun:test";
import { formatIssues, resolveCommandLine, serializeConfig } from "../../src/cli/index.ts";
import type { CommandLine } from "../../src/cli/types.ts";
import { defaultProxyConfig } from "../../src/config/defaults.ts";
import { fixture } from "../config/fixture.ts";

/** A readFile that serves fixtures by name and fails like the filesystem for anything else. */
function files(extra: Record<string, string> = {}): (path: string) => string {
  return (path) => {
    if (path in extra) return extra[path] as string;
    try {
      return fixture(path);
    } catch {
      throw new Error(`ENOENT: no such file or directory, open '${path}'`);
    }
  };
}

function run(argv: string[], read = files()): Extract<CommandLine, { kind: "run" }> {
  const result = resolveCommandLine(argv, read);
  if (result.kind !== "run") throw new Error(`expected run, got ${JSON.stringify(result)}`);
  return result;
}

function errors(argv: string[], read = files()) {
  const result = resolveCommandLine(argv, read);
  if (result.kind !== "error") throw new Error(`expected error, got ${result.kind}`);
  return result.errors;
}

describe("resolveCommandLine", () => {
  test.each([[["--help"]], [["-h"]], [["--cleanup", "-h"]], [["--bogus", "--help"]]])(
    "%p shows help",
    (argv) => {
      const result = resolveCommandLine(argv, files());
      expect(result.kind).toBe("help");
      if (result.kind === "help") expect(result.text).toContain("Usage:");
    },
  );

  test.each([
    [["--version"], false],
    [["--version=true"], false],
    [["--version=raw"], true],
  ] as const)("%p prints the version (raw: %p)", (argv, raw) => {
    expect(resolveCommandLine(argv, files())).toEqual({ kind: "version", raw });
  });

  test("--version=false runs normally", () => {
    expect(run(["--version=false"]).kind).toBe("run");
  });

  test("no arguments run with the defaults and default run options", () => {
    const result = run([]);
    expect(result.config).toEqual(defaultProxyConfig());
    expect(result.run).toEqual({
      flagValues: expect.any(Object),
      dryRun: false,
      output: "text",
      cleanup: false,
      initOnly: false,
      iptablesBackend: "auto",
    });
    expect(result.overrides).toEqual([]);
    expect(result.notices).toEqual([
      "clientConnection.contentType asks for protobuf, but this build's API client speaks JSON; requests use application/json",
    ]);
    expect(result.warnings).toEqual([]);
    expect(result.explicitFlags).toEqual([]);
  });

  test("run options come from their flags", () => {
    const result = run([
      "--dry-run",
      "--output=json",
      "--state=cluster.yaml",
      "--dump-state",
      "dump.yaml",
      "--cleanup",
      "--init-only",
      "--write-config-to=/tmp/out.yaml",
      "--iptables-backend=nft",
      "--master=https://192.0.2.1:6443",
    ]);
    expect(result.run).toEqual({
      flagValues: expect.any(Object),
      dryRun: true,
      output: "json",
      stateFiles: ["cluster.yaml"],
      dumpStateFile: "dump.yaml",
      cleanup: true,
      initOnly: true,
      writeConfigTo: "/tmp/out.yaml",
      iptablesBackend: "nft",
      master: "https://192.0.2.1:6443",
    });
  });

  test("--state may be repeated for a replay; each use is one file, commas and all", () => {
    expect(run(["--dry-run", "--state", "a.yaml", "--state=b,c.yaml"]).run.stateFiles).toEqual([
      "a.yaml",
      "b,c.yaml",
    ]);
    const refused = resolveCommandLine(["--state", "a.yaml", "--state", "b.yaml"], files());
    expect(refused.kind).toBe("error");
    if (refused.kind === "error") {
      expect(refused.errors[0]?.flag).toBe("--state");
      expect(refused.errors[0]?.message).toContain("only --dry-run");
    }
  });

  test("logging flags land in config.logging", () => {
    const { config } = run(["-v=4", "--vmodule=iptables=5,ipvs=2", "--logging-format=text"]);
    expect(config.logging).toMatchObject({ verbosity: 4, vmodule: "iptables=5,ipvs=2", format: "text" });
    expect(run(["--logging-format=json"]).config.logging.format).toBe("json");
  });

  test("an explicit flag overrides the --config file and the override is reported", () => {
    const result = run(["--config=minimal.yaml", "--mode=iptables", "-v=3", "--iptables-sync-period=1m"]);
    expect(result.run.configFile).toBe("minimal.yaml");
    expect(result.config.mode).toBe("iptables");
    expect(result.config.iptables.syncPeriod).toBe(60_000);
    expect(result.config.ipvs.scheduler).toBe("rr"); // from the file
    expect(result.overrides).toEqual([
      { flag: "--mode", path: "mode", fileValue: "ipvs", flagValue: "iptables" },
      { flag: "--iptables-sync-period", path: "iptables.syncPeriod", fileValue: "20s", flagValue: "1m0s" },
    ]);
    expect(result.explicitFlags).toEqual(["config", "proxy-mode", "v", "iptables-sync-period"]);
  });

  test("the three-mistake file is reported as exactly three lines", () => {
    const errs = errors(["--config", "three-mistakes.yaml"]);
    expect(errs).toHaveLength(3);
    expect(formatIssues(errs).split("\n")).toEqual([
      "iptables.masqueradeBit: 40: must be within [0, 31] (three-mistakes.yaml:4)",
      'ipvs.scheduler: "bogus": must be one of rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed, nq, mh or empty (rr) (three-mistakes.yaml:6)',
      'clusterCIDR: "192.0.2.0/33": must be a valid CIDR (e.g. 192.0.2.0/24 or 2001:db8::/48) (three-mistakes.yaml:7)',
    ]);
  });

  test("flag, file and argument problems are all reported together", () => {
    const errs = errors([
      "--config=three-mistakes.yaml",
      "--iptables-sync-period=30",
      "--bogus",
      "stray",
      "--",
      "extra",
    ]);
    expect(errs.map((e) => e.flag ?? e.path)).toEqual([
      "--iptables-sync-period",
      "--bogus",
      "",
      "iptables.masqueradeBit",
      "ipvs.scheduler",
      "clusterCIDR",
    ]);
    expect(errs[2]).toMatchObject({ value: ["extra"] });
  });

  test("--proxy-mode=nftables is accepted", () => {
    const r = resolveCommandLine(["--proxy-mode=nftables"], files());
    expect(r.kind === "run" && r.config.mode).toBe("nftables");
  });

  test("an unreadable --config file is an error naming the flag and path", () => {
    const errs = errors(["--config=/nonexistent/kube-proxy.yaml"]);
    expect(errs).toEqual([
      {
        path: "",
        flag: "--config",
        value: "/nonexistent/kube-proxy.yaml",
        message:
          "cannot read the file: ENOENT: no such file or directory, open '/nonexistent/kube-proxy.yaml'",
      },
    ]);
    expect(formatIssues(errs)).toBe(
      `--config: "/nonexistent/kube-proxy.yaml": cannot read the file: ENOENT: no such file or directory, open '/nonexistent/kube-proxy.yaml'`,
    );
  });

  test("a YAML syntax error is reported with file and line", () => {
    expect(formatIssues(errors(["--config=syntax-error.yaml"]))).toStartWith(
      "syntax-error.yaml:5: YAML syntax error:",
    );
  });

  test("notices collect deprecations and the protobuf content type", () => {
    const result = run([
      "--healthz-port=10256",
      "--kube-api-content-type=application/vnd.kubernetes.protobuf",
    ]);
    expect(result.notices).toHaveLength(2);
    expect(result.notices[0]).toContain("--healthz-port is deprecated");
    expect(result.notices[1]).toContain("speaks JSON");
  });

  test("--write-config-to output, read back through --config, gives the same config", () => {
    const first = run([
      "--config=full.yaml",
      "--v=6",
      "--ipvs-tcp-timeout=90s",
      "--write-config-to=/tmp/out.yaml",
    ]);
    const written = serializeConfig(first.config);
    const second = run(["--config=written.yaml"], files({ "written.yaml": written }));
    expect(second.config).toEqual(first.config);
  });
});
