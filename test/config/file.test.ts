import { describe, expect, test } from "bun:test";
import { parseConfigFile } from "../../src/config/file.ts";
import { loadConfig } from "../../src/config/load.ts";
import { fixture } from "./fixture.ts";

const HEADER = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";

function load(name: string, text = fixture(name)) {
  return loadConfig({ file: { name, text }, settings: [] });
}

describe("config file loading", () => {
  test("a YAML file with every field set loads with no issues", () => {
    const result = load("full.yaml");
    expect(result.issues).toEqual([]);
    const c = result.config;
    expect(c?.mode).toBe("ipvs");
    expect(c?.hostnameOverride).toBe("node-a.example");
    expect(c?.clientConnection).toEqual({
      kubeconfig: "/var/lib/kube-proxy/kubeconfig.conf",
      acceptContentTypes: "application/json",
      contentType: "application/json",
      qps: 7.5,
      burst: 20,
    });
    expect(c?.ipvs).toEqual({
      syncPeriod: 90_000,
      minSyncPeriod: 500,
      scheduler: "wrr",
      excludeCIDRs: ["198.51.100.0/24", "2001:db8:ff::/64"],
      strictARP: true,
      tcpTimeout: 900_000,
      tcpFinTimeout: 120_000,
      udpTimeout: 60_000,
    });
    expect(c?.logging.vmodule).toBe("iptables=5,ipvs=2");
    expect(c?.logging.options.text).toEqual({ splitStream: true, infoBufferSize: "64Ki" });
    expect(c?.clusterCIDRs).toEqual(["192.0.2.0/24", "2001:db8:42::/56"]);
    expect(c?.conntrack.tcpEstablishedTimeout).toBe(43_200_000);
    expect(c?.winkernel.networkName).toBe("l2bridge");
    expect(c?.windowsRunAsService).toBe(true);
  });

  test("the JSON form of the same file loads to the same config", () => {
    const yaml = load("full.yaml");
    const json = load("full.json");
    expect(json.issues).toEqual([]);
    expect(json.config).toEqual(yaml.config as NonNullable<typeof yaml.config>);
  });

  test("an unknown field is ignored as upstream's lenient decoding does, and warned about with path, value, file and line", () => {
    const result = load("unknown-field.yaml");
    expect(result.issues).toEqual([]);
    expect(result.config?.iptables.syncPeriod).toBe(30_000);
    expect(result.warnings).toEqual([
      `iptables.minSyncPeriodd: "2s": unknown field, ignored (unknown-field.yaml:6)`,
    ]);
  });

  test("a file with three mistakes yields exactly three issues naming each path and value", () => {
    const issues = load("three-mistakes.yaml").issues;
    expect(issues).toHaveLength(3);
    expect(issues.map(({ path, value, line }) => ({ path, value, line }))).toEqual([
      { path: "iptables.masqueradeBit", value: 40, line: 4 },
      { path: "ipvs.scheduler", value: "bogus", line: 6 },
      { path: "clusterCIDR", value: "192.0.2.0/33", line: 7 },
    ]);
    expect(issues.every((issue) => issue.file === "three-mistakes.yaml")).toBe(true);
  });

  test("a YAML syntax error names the file and the line", () => {
    const result = load("syntax-error.yaml");
    expect(result.config).toBeUndefined();
    expect(result.issues.length).toBeGreaterThan(0);
    expect(result.issues[0]).toMatchObject({ path: "", file: "syntax-error.yaml", line: 5 });
    expect(result.issues[0]?.message).toStartWith("YAML syntax error:");
  });

  const problems: [string, string, { path: string; value: unknown; message: string }][] = [
    [
      "wrong apiVersion",
      "apiVersion: v1\nkind: KubeProxyConfiguration\n",
      { path: "apiVersion", value: "v1", message: 'must be "kubeproxy.config.k8s.io/v1alpha1"' },
    ],
    [
      "missing kind",
      "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n",
      { path: "kind", value: undefined, message: 'required; must be "KubeProxyConfiguration"' },
    ],
    [
      "string for an integer",
      `${HEADER}oomScoreAdj: "-500"\n`,
      { path: "oomScoreAdj", value: "-500", message: "must be a number" },
    ],
    [
      "fraction for an integer",
      `${HEADER}clientConnection:\n  burst: 1.5\n`,
      { path: "clientConnection.burst", value: 1.5, message: "must be an integer" },
    ],
    [
      "number for a duration",
      `${HEADER}configSyncPeriod: 30\n`,
      { path: "configSyncPeriod", value: 30, message: 'must be a duration string such as "30s"' },
    ],
    [
      "duration without unit",
      `${HEADER}iptables:\n  syncPeriod: "30"\n`,
      {
        path: "iptables.syncPeriod",
        value: "30",
        message: "invalid duration: missing unit (use ns, us, ms, s, m or h, e.g. 30s)",
      },
    ],
    [
      "string for a boolean",
      `${HEADER}enableProfiling: maybe\n`,
      { path: "enableProfiling", value: "maybe", message: "must be a boolean (true or false)" },
    ],
    [
      "int32 overflow",
      `${HEADER}conntrack:\n  min: 3000000000\n`,
      { path: "conntrack.min", value: 3000000000, message: "must fit in a signed 32-bit integer" },
    ],
    [
      "negative verbosity",
      `${HEADER}logging:\n  verbosity: -1\n`,
      { path: "logging.verbosity", value: -1, message: "must not be negative" },
    ],
    [
      "non-bool feature gate",
      `${HEADER}featureGates:\n  Foo: 1\n`,
      { path: "featureGates.Foo", value: 1, message: "must be a boolean (true or false)" },
    ],
    [
      "list item not a string",
      `${HEADER}nodePortAddresses: [203.0.113.0/24, 7]\n`,
      { path: "nodePortAddresses[1]", value: 7, message: "must be a string" },
    ],
    [
      "top level is a list",
      "- a\n- b\n",
      { path: "", value: ["a", "b"], message: "expected a KubeProxyConfiguration mapping at the top level" },
    ],
    [
      "empty file",
      "",
      { path: "", value: undefined, message: "file is empty; expected a KubeProxyConfiguration document" },
    ],
  ];
  test.each(problems)("%s is reported", (_name, text, expected) => {
    expect(load("c.yaml", text).issues).toEqual([expect.objectContaining(expected)]);
  });

  test("decoding continues past a bad field, so later validation problems are reported too", () => {
    const text = `${HEADER}enableProfiling: maybe\noomScoreAdj: 5000\nbogus: 1\n`;
    const result = load("c.yaml", text);
    expect(result.issues.map((issue) => issue.path).sort()).toEqual(["enableProfiling", "oomScoreAdj"]);
    expect(result.warnings).toEqual([`bogus: 1: unknown field, ignored (c.yaml:5)`]);
  });

  test("null counts as absent, so the default applies", () => {
    const config = load("c.yaml", `${HEADER}oomScoreAdj: null\niptables:\n  masqueradeBit:\n`).config;
    expect(config?.oomScoreAdj).toBe(-999);
    expect(config?.iptables.masqueradeBit).toBe(14);
  });

  test("YAML 1.1 booleans (yes/on) decode as booleans, as with upstream's go-yaml", () => {
    const config = load("c.yaml", `${HEADER}enableProfiling: yes\nipvs:\n  strictARP: on\n`).config;
    expect(config?.enableProfiling).toBe(true);
    expect(config?.ipvs.strictARP).toBe(true);
  });

  test("a duplicate key is a syntax error with its line", () => {
    const issues = load("c.yaml", `${HEADER}mode: ipvs\nmode: iptables\n`).issues;
    expect(issues).toEqual([expect.objectContaining({ file: "c.yaml", line: 4 })]);
  });

  test("logging.flushFrequency accepts a duration string or integer nanoseconds", () => {
    expect(load("c.yaml", `${HEADER}logging:\n  flushFrequency: 2s\n`).config?.logging.flushFrequency).toBe(
      2_000,
    );
    expect(
      load("c.yaml", `${HEADER}logging:\n  flushFrequency: 3000000000\n`).config?.logging.flushFrequency,
    ).toBe(3_000);
  });

  test("lineOf finds nested and list values", () => {
    const parsed = parseConfigFile("full.yaml", fixture("full.yaml"));
    expect(parsed.lineOf("ipvs.excludeCIDRs[1]")).toBe(48);
    expect(parsed.lineOf("mode")).toBe(35);
    expect(parsed.lineOf("nope")).toBeUndefined();
    expect(parsed.layer.ipvs?.scheduler).toBe("wrr");
  });
});
