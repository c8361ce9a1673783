import { describe, expect, test } from "bun:test";
import { FLAGS, findFlag } from "../../src/cli/flags.ts";
import { formatDefault, renderFlagReferenceMarkdown, renderHelp } from "../../src/cli/help.ts";
import { resolveCommandLine } from "../../src/cli/index.ts";
import type { FlagSpec } from "../../src/cli/types.ts";
import { defaultProxyConfig } from "../../src/config/defaults.ts";
import { formatGoDuration } from "../../src/config/duration.ts";
import {
  KUBE_PROXY_TS_ONLY_FLAGS,
  UPSTREAM_V1_31_HELP_FLAGS,
  UPSTREAM_V1_31_HIDDEN_FLAGS,
} from "../support/upstream-flags.ts";

/** The default written the way a user would pass it on the command line. */
function defaultText(spec: FlagSpec): string {
  const value = spec.default;
  if (spec.kind === "duration") return formatGoDuration(value as number);
  if (Array.isArray(value)) return value.join(",");
  if (typeof value === "object") return "";
  return String(value);
}

describe("flag table", () => {
  test("has every upstream flag plus ours, and nothing else", () => {
    expect(FLAGS.map((spec) => spec.name).sort()).toEqual(
      [...UPSTREAM_V1_31_HELP_FLAGS, ...UPSTREAM_V1_31_HIDDEN_FLAGS, ...KUBE_PROXY_TS_ONLY_FLAGS].sort(),
    );
  });

  test("the aliases --mode and --port-range resolve to the upstream flags", () => {
    expect(findFlag("mode")?.name).toBe("proxy-mode");
    expect(findFlag("port-range")?.name).toBe("proxy-port-range");
    expect(findFlag("log_flush_frequency")?.name).toBe("log-flush-frequency");
  });

  test("names, aliases and shorthands are unique", () => {
    const names = FLAGS.flatMap((spec) => [spec.name, ...spec.aliases]);
    expect(new Set(names).size).toBe(names.length);
    const shorthands = FLAGS.flatMap((spec) => (spec.shorthand ? [spec.shorthand] : []));
    expect(new Set(shorthands).size).toBe(shorthands.length);
  });

  test("every entry has help text, a target, and run options name their key", () => {
    for (const spec of FLAGS) {
      expect(spec.help.length).toBeGreaterThan(10);
      expect(spec.config).not.toBe("");
      if (spec.config === "runOption") expect(spec.run).toBeDefined();
    }
  });

  test.each(FLAGS.map((spec) => [spec.name, spec] as const))(
    "--%s given its documented default leaves the default config unchanged",
    (name, spec) => {
      const result = resolveCommandLine([`--${name}=${defaultText(spec)}`], () => "");
      if (result.kind === "error") throw new Error(JSON.stringify(result.errors));
      if (result.kind === "run") expect(result.config).toEqual(defaultProxyConfig());
      else expect(["help", "version"]).not.toContain(result.kind);
    },
  );

  test("upstream defaults appear as upstream documents them", () => {
    const shown = (name: string) => formatDefault(findFlag(name) as FlagSpec);
    expect(shown("config-sync-period")).toBe("15m0s");
    expect(shown("conntrack-tcp-timeout-established")).toBe("24h0m0s");
    expect(shown("conntrack-tcp-timeout-close-wait")).toBe("1h0m0s");
    expect(shown("iptables-sync-period")).toBe("30s");
    expect(shown("iptables-min-sync-period")).toBe("1s");
    expect(shown("conntrack-max-per-core")).toBe("32768");
    expect(shown("conntrack-min")).toBe("131072");
    expect(shown("oom-score-adj")).toBe("-999");
    expect(shown("iptables-masquerade-bit")).toBe("14");
    expect(shown("kube-api-content-type")).toBe("application/vnd.kubernetes.protobuf");
    expect(shown("healthz-bind-address")).toBe("0.0.0.0:10256");
    expect(shown("metrics-bind-address")).toBe("127.0.0.1:10249");
    expect(shown("ipvs-min-sync-period")).toBe("");
  });
});

describe("--help", () => {
  const help = renderHelp();

  test.each(FLAGS.filter((spec) => !spec.hidden).map((spec) => [spec.name, spec] as const))(
    "lists --%s with its type",
    (name, spec) => {
      const label = new RegExp(`^ {2}(-\\w, | {4})(--[\\w-]+, )*--${name}( |,|$)`);
      const line = help.split("\n").find((l) => label.test(l));
      expect(line).toBeDefined();
      if (spec.typeName) expect(line).toContain(spec.typeName);
    },
  );

  test("hides deprecated flags, as pflag does", () => {
    for (const spec of FLAGS.filter((s) => s.hidden)) expect(help).not.toContain(`--${spec.name}`);
  });

  test("shows defaults, shorthands, the gate list and the precedence paragraph; no aliases", () => {
    expect(help).toContain("(default 30s)");
    expect(help).toContain('(default "0.0.0.0:10256")');
    expect(help).toContain("-v, --v int");
    expect(help).toContain("--proxy-mode ProxyMode");
    expect(help).not.toContain("--mode ");
    expect(help).not.toContain("--port-range");
    expect(help).toContain("ComponentStatusz=true|false (BETA - default=true)");
    expect(help).toContain("AllAlpha=true|false (ALPHA - default=false)");
    expect(help).not.toContain("KubeProxyDrainingTerminatingNodes=");
    expect(help).toContain("Precedence:");
    expect(help).toContain("explicit flag here always wins");
  });
});

describe("README flag reference", () => {
  const markdown = renderFlagReferenceMarkdown();

  test("has a row for every flag, hidden ones included", () => {
    for (const spec of FLAGS) expect(markdown).toContain(`\`--${spec.name}\``);
  });

  test("names config fields and notes deprecation", () => {
    expect(markdown).toContain("| Flag | Type | Default | Config field | Description |");
    expect(markdown).toContain("`iptables.syncPeriod`");
    expect(markdown).toContain("port of `healthzBindAddress`");
    expect(markdown).toMatch(/`--healthz-port`.*Deprecated: use --healthz-bind-address instead\./);
    expect(markdown).toContain("### Config file");
  });

  test("examples use documentation address ranges only", () => {
    const addresses = markdown.match(/\b\d{1,3}(\.\d{1,3}){3}\b/g) ?? [];
    for (const address of addresses) {
      expect(address).toMatch(/^(192\.0\.2|198\.51\.100|203\.0\.113)\.|^0\.0\.0\.0$|^127\.0\.0\.1$/);
    }
  });
});
