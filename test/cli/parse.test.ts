import { describe, expect, test } from "bun:test";
import { parseArgs } from "../../src/cli/parse.ts";

describe("pflag syntax", () => {
  const accepted: [string, string[], string, unknown][] = [
    ["--flag=value", ["--proxy-mode=ipvs"], "proxy-mode", "ipvs"],
    ["--flag value", ["--proxy-mode", "ipvs"], "proxy-mode", "ipvs"],
    ["alias --mode", ["--mode=ipvs"], "proxy-mode", "ipvs"],
    ["bare bool", ["--masquerade-all"], "masquerade-all", true],
    ["bool=false", ["--iptables-localhost-nodeports=false"], "iptables-localhost-nodeports", false],
    ["bool=true", ["--cleanup=true"], "cleanup", true],
    ["-v=4", ["-v=4"], "v", 4],
    ["-v 4", ["-v", "4"], "v", 4],
    ["-v4", ["-v4"], "v", 4],
    ["--v=4", ["--v=4"], "v", 4],
    ["--v 4", ["--v", "4"], "v", 4],
    ["-h", ["-h"], "help", true],
    ["duration 30s", ["--iptables-sync-period=30s"], "iptables-sync-period", 30_000],
    ["duration 1m30s", ["--iptables-sync-period", "1m30s"], "iptables-sync-period", 90_000],
    ["duration 500ms", ["--iptables-min-sync-period=500ms"], "iptables-min-sync-period", 500],
    ["duration 1h", ["--config-sync-period=1h"], "config-sync-period", 3_600_000],
    [
      "duration 2h45m",
      ["--conntrack-tcp-timeout-established=2h45m"],
      "conntrack-tcp-timeout-established",
      9_900_000,
    ],
    ["duration 0s", ["--ipvs-min-sync-period=0s"], "ipvs-min-sync-period", 0],
    ["duration 0", ["--ipvs-min-sync-period=0"], "ipvs-min-sync-period", 0],
    ["duration 1.5s", ["--ipvs-udp-timeout=1.5s"], "ipvs-udp-timeout", 1_500],
    [
      "cidr list",
      ["--nodeport-addresses=192.0.2.0/24,2001:db8::/32"],
      "nodeport-addresses",
      ["192.0.2.0/24", "2001:db8::/32"],
    ],
    ["exclude cidrs", ["--ipvs-exclude-cidrs", "198.51.100.0/24"], "ipvs-exclude-cidrs", ["198.51.100.0/24"]],
    [
      "cluster cidr stays one string",
      ["--cluster-cidr=192.0.2.0/24,2001:db8:42::/56"],
      "cluster-cidr",
      "192.0.2.0/24,2001:db8:42::/56",
    ],
    ["feature gates map", ["--feature-gates=A=true,B=false"], "feature-gates", { A: true, B: false }],
    ["underscores normalise", ["--log_flush_frequency=2s"], "log-flush-frequency", 2_000],
    ["empty value", ["--hostname-override="], "hostname-override", ""],
    ["value starting with a dash", ["--oom-score-adj", "-500"], "oom-score-adj", -500],
    ["--version alone", ["--version"], "version", "true"],
    ["--version=raw", ["--version=raw"], "version", "raw"],
    ["float", ["--kube-api-qps=7.5"], "kube-api-qps", 7.5],
    ["int with base prefix", ["--iptables-masquerade-bit=0x0e"], "iptables-masquerade-bit", 14],
  ];
  test.each(accepted)("%s", (_name, argv, flag, value) => {
    const parsed = parseArgs(argv);
    expect(parsed.issues).toEqual([]);
    expect(parsed.positional).toEqual([]);
    expect(parsed.values.get(flag)).toEqual(value as never);
  });

  test("a bare bool flag does not consume the next argument", () => {
    const parsed = parseArgs(["--cleanup", "--proxy-mode", "ipvs", "--masquerade-all", "--v=2"]);
    expect(parsed.issues).toEqual([]);
    expect(Object.fromEntries(parsed.values)).toEqual({
      cleanup: true,
      "proxy-mode": "ipvs",
      "masquerade-all": true,
      v: 2,
    });
  });

  test("a bare bool followed by a word leaves the word as a stray argument", () => {
    const parsed = parseArgs(["--cleanup", "false"]);
    expect(parsed.values.get("cleanup")).toBe(true);
    expect(parsed.positional).toEqual(["false"]);
  });

  test("--version does not consume the next argument either", () => {
    const parsed = parseArgs(["--version", "--v=3"]);
    expect(parsed.values.get("version")).toBe("true");
    expect(parsed.values.get("v")).toBe(3);
  });

  test("-- ends flag parsing", () => {
    const parsed = parseArgs(["--v=1", "--", "--cleanup"]);
    expect(parsed.values.has("cleanup")).toBe(false);
    expect(parsed.positional).toEqual(["--cleanup"]);
  });

  test("combined shorthands: -hv3", () => {
    const parsed = parseArgs(["-hv3"]);
    expect(parsed.values.get("help")).toBe(true);
    expect(parsed.values.get("v")).toBe(3);
  });

  test("repeated flags: lists append, maps merge, scalars take the last", () => {
    const parsed = parseArgs([
      "--nodeport-addresses=192.0.2.0/24",
      "--nodeport-addresses=198.51.100.0/24",
      "--feature-gates=A=true",
      "--feature-gates=B=false",
      "--v=2",
      "--v=5",
    ]);
    expect(parsed.values.get("nodeport-addresses")).toEqual(["192.0.2.0/24", "198.51.100.0/24"]);
    expect(parsed.values.get("feature-gates")).toEqual({ A: true, B: false });
    expect(parsed.values.get("v")).toBe(5);
  });

  test("explicitly given flags are tracked in first-seen order with their spelling", () => {
    const parsed = parseArgs(["--mode=ipvs", "-v", "2", "--cleanup", "--mode=iptables"]);
    expect(parsed.order).toEqual(["proxy-mode", "v", "cleanup"]);
    expect(parsed.spelled.get("proxy-mode")).toBe("--mode");
    expect(parsed.spelled.get("v")).toBe("-v");
    expect(parsed.values.has("masquerade-all")).toBe(false);
  });
});

describe("errors name the flag and the value", () => {
  const rejected: [string, string[], { path: string; flag: string; value: unknown; message: string }][] = [
    ["unknown flag", ["--bogus=1"], { path: "", flag: "--bogus", value: "1", message: "unknown flag" }],
    [
      "misspelt flag",
      ["--proxy-mod=ipvs"],
      { path: "", flag: "--proxy-mod", value: "ipvs", message: "unknown flag (did you mean --proxy-mode?)" },
    ],
    [
      "missing value",
      ["--kubeconfig"],
      {
        path: "clientConnection.kubeconfig",
        flag: "--kubeconfig",
        value: undefined,
        message: "needs a value",
      },
    ],
    [
      "missing -v value",
      ["-v"],
      { path: "logging.verbosity", flag: "-v", value: undefined, message: "needs a value" },
    ],
    [
      "duration without unit",
      ["--iptables-sync-period=30"],
      {
        path: "iptables.syncPeriod",
        flag: "--iptables-sync-period",
        value: "30",
        message: "invalid duration: missing unit (use ns, us, ms, s, m or h, e.g. 30s)",
      },
    ],
    [
      "bad duration unit",
      ["--config-sync-period", "5 minutes"],
      {
        path: "configSyncPeriod",
        flag: "--config-sync-period",
        value: "5 minutes",
        message: 'invalid duration: unknown unit " minutes"',
      },
    ],
    [
      "bad bool",
      ["--masquerade-all=yes"],
      {
        path: "iptables.masqueradeAll",
        flag: "--masquerade-all",
        value: "yes",
        message: "must be true or false",
      },
    ],
    [
      "bad int",
      ["--oom-score-adj=low"],
      { path: "oomScoreAdj", flag: "--oom-score-adj", value: "low", message: "must be an integer" },
    ],
    [
      "bad -v",
      ["-v=loud"],
      { path: "logging.verbosity", flag: "-v", value: "loud", message: "must be an integer" },
    ],
    [
      "bad float",
      ["--kube-api-qps=fast"],
      { path: "clientConnection.qps", flag: "--kube-api-qps", value: "fast", message: "must be a number" },
    ],
    [
      "bad choice",
      ["--output=yaml"],
      { path: "", flag: "--output", value: "yaml", message: "must be one of text, json, dot" },
    ],
    [
      "unknown shorthand",
      ["-x"],
      { path: "", flag: "-x", value: "-x", message: "unknown shorthand flag in -x" },
    ],
  ];
  test.each(rejected)("%s", (_name, argv, issue) => {
    expect(parseArgs(argv).issues).toEqual([issue]);
  });

  test("every bad flag is reported, not just the first", () => {
    const parsed = parseArgs(["--bogus", "--iptables-sync-period=30", "--masquerade-all=maybe", "--v=2"]);
    expect(parsed.issues.map((i) => i.flag)).toEqual([
      "--bogus",
      "--iptables-sync-period",
      "--masquerade-all",
    ]);
    expect(parsed.values.get("v")).toBe(2);
  });

  test("an unknown flag's separate value is not reported again as a stray argument", () => {
    const parsed = parseArgs(["--bogus", "value", "--v=1"]);
    expect(parsed.issues).toHaveLength(1);
    expect(parsed.positional).toEqual([]);
  });
});

describe("notices", () => {
  test("deprecated flags say so once", () => {
    const parsed = parseArgs(["--healthz-port=1234", "--healthz-port=1235", "--metrics-port=0"]);
    expect(parsed.notices).toEqual([
      "flag --healthz-port is deprecated: use --healthz-bind-address instead",
      "flag --metrics-port is deprecated: use --metrics-bind-address instead",
    ]);
  });

  test.each([
    "--log-file=/tmp/x",
    "--log-dir=/tmp",
    "--logtostderr=false",
    "--alsologtostderr",
    "--log-file-max-size=10",
    "--log-backtrace-at=a.go:1",
    "--one-output",
    "--skip-headers",
    "--skip-log-headers",
    "--stderrthreshold=1",
    "--add-dir-header",
  ])("klog's removed flag %s is an unknown flag, as in upstream v1.31", (arg) => {
    const parsed = parseArgs([arg]);
    const name = arg.split("=")[0];
    expect(parsed.issues).toEqual([
      expect.objectContaining({ flag: name, message: expect.stringMatching(/^unknown flag/) }),
    ]);
  });
});
