import { describe, expect, test } from "bun:test";
import { defaultProxyConfig } from "../../src/config/defaults.ts";
import type { ProxyConfig } from "../../src/config/types.ts";
import { portRangeError, validateConfig } from "../../src/config/validate.ts";

type Mutation = (c: ProxyConfig) => void;

function issuesAfter(mutate: Mutation) {
  const config = defaultProxyConfig();
  mutate(config);
  return validateConfig(config);
}

describe("validateConfig", () => {
  test("the defaults are valid", () => {
    expect(validateConfig(defaultProxyConfig())).toEqual([]);
  });

  const invalid: [string, Mutation, { path: string; value: unknown; message: string }][] = [
    [
      "masquerade bit above 31",
      (c) => {
        c.iptables.masqueradeBit = 40;
      },
      { path: "iptables.masqueradeBit", value: 40, message: "must be within [0, 31]" },
    ],
    [
      "negative masquerade bit",
      (c) => {
        c.iptables.masqueradeBit = -1;
      },
      { path: "iptables.masqueradeBit", value: -1, message: "must be within [0, 31]" },
    ],
    [
      "zero iptables sync period",
      (c) => {
        c.iptables.syncPeriod = 0;
        c.iptables.minSyncPeriod = 0;
      },
      { path: "iptables.syncPeriod", value: "0s", message: "must be greater than 0" },
    ],
    [
      "negative iptables min sync",
      (c) => {
        c.iptables.minSyncPeriod = -1_000;
      },
      { path: "iptables.minSyncPeriod", value: "-1s", message: "must be greater than or equal to 0" },
    ],
    [
      "iptables min sync above sync",
      (c) => {
        c.iptables.minSyncPeriod = 60_000;
      },
      {
        path: "iptables.syncPeriod",
        value: "30s",
        message: "must be greater than or equal to iptables.minSyncPeriod (1m0s)",
      },
    ],
    [
      "ipvs min sync above sync",
      (c) => {
        c.ipvs.syncPeriod = 5_000;
        c.ipvs.minSyncPeriod = 10_000;
      },
      {
        path: "ipvs.syncPeriod",
        value: "5s",
        message: "must be greater than or equal to ipvs.minSyncPeriod (10s)",
      },
    ],
    [
      "zero ipvs sync period",
      (c) => {
        c.ipvs.syncPeriod = 0;
      },
      { path: "ipvs.syncPeriod", value: "0s", message: "must be greater than 0" },
    ],
    [
      "negative ipvs tcp timeout",
      (c) => {
        c.ipvs.tcpTimeout = -5_000;
      },
      { path: "ipvs.tcpTimeout", value: "-5s", message: "must be greater than or equal to 0" },
    ],
    [
      "unknown scheduler",
      (c) => {
        c.ipvs.scheduler = "bogus";
      },
      {
        path: "ipvs.scheduler",
        value: "bogus",
        message: "must be one of rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed, nq, mh or empty (rr)",
      },
    ],
    [
      "bad exclude CIDR",
      (c) => {
        c.ipvs.excludeCIDRs = ["198.51.100.0/24", "198.51.100.0"];
      },
      {
        path: "ipvs.excludeCIDRs[1]",
        value: "198.51.100.0",
        message: "must be a valid CIDR (e.g. 198.51.100.0/24)",
      },
    ],
    [
      "negative conntrack max per core",
      (c) => {
        c.conntrack.maxPerCore = -1;
      },
      { path: "conntrack.maxPerCore", value: -1, message: "must be greater than or equal to 0" },
    ],
    [
      "negative conntrack min",
      (c) => {
        c.conntrack.min = -1;
      },
      { path: "conntrack.min", value: -1, message: "must be greater than or equal to 0" },
    ],
    [
      "negative established timeout",
      (c) => {
        c.conntrack.tcpEstablishedTimeout = -1;
      },
      {
        path: "conntrack.tcpEstablishedTimeout",
        value: "-1ms",
        message: "must be greater than or equal to 0",
      },
    ],
    [
      "negative udp stream timeout",
      (c) => {
        c.conntrack.udpStreamTimeout = -60_000;
      },
      { path: "conntrack.udpStreamTimeout", value: "-1m0s", message: "must be greater than or equal to 0" },
    ],
    [
      "kernelspace mode",
      (c) => {
        c.mode = "kernelspace";
      },
      { path: "mode", value: "kernelspace", message: "proxy mode kernelspace is only available on Windows" },
    ],
    [
      "unknown mode",
      (c) => {
        Object.assign(c, { mode: "userspace" });
      },
      {
        path: "mode",
        value: "userspace",
        message: 'must be "iptables", "ipvs", "nftables" or empty (empty means iptables)',
      },
    ],
    [
      "negative burst",
      (c) => {
        c.clientConnection.burst = -1;
      },
      { path: "clientConnection.burst", value: -1, message: "must be greater than or equal to 0" },
    ],
    [
      "oom score too low",
      (c) => {
        c.oomScoreAdj = -1001;
      },
      { path: "oomScoreAdj", value: -1001, message: "must be within [-1000, 1000]" },
    ],
    [
      "oom score too high",
      (c) => {
        c.oomScoreAdj = 1001;
      },
      { path: "oomScoreAdj", value: 1001, message: "must be within [-1000, 1000]" },
    ],
    [
      "zero config sync period",
      (c) => {
        c.configSyncPeriod = 0;
      },
      { path: "configSyncPeriod", value: "0s", message: "must be greater than 0" },
    ],
    [
      "bind address not an IP",
      (c) => {
        c.bindAddress = "node-a";
      },
      { path: "bindAddress", value: "node-a", message: "must be an IP address" },
    ],
    [
      "healthz without port",
      (c) => {
        c.healthzBindAddress = "192.0.2.1";
      },
      {
        path: "healthzBindAddress",
        value: "192.0.2.1",
        message: "must be IP:port (missing port in address)",
      },
    ],
    [
      "healthz host not an IP",
      (c) => {
        c.healthzBindAddress = "localhost:10256";
      },
      { path: "healthzBindAddress", value: "localhost:10256", message: 'host "localhost" must be an IP' },
    ],
    [
      "metrics port out of range",
      (c) => {
        c.metricsBindAddress = "127.0.0.1:70000";
      },
      {
        path: "metricsBindAddress",
        value: "127.0.0.1:70000",
        message: 'port "70000" must be a number in 1..65535',
      },
    ],
    [
      "bad cluster CIDR",
      (c) => {
        c.clusterCIDRs = ["192.0.2.0/33"];
      },
      {
        path: "clusterCIDR",
        value: "192.0.2.0/33",
        message: "must be a valid CIDR (e.g. 192.0.2.0/24 or 2001:db8::/48)",
      },
    ],
    [
      "two IPv4 cluster CIDRs",
      (c) => {
        c.clusterCIDRs = ["192.0.2.0/24", "198.51.100.0/24"];
      },
      {
        path: "clusterCIDR",
        value: "192.0.2.0/24,198.51.100.0/24",
        message: "two CIDRs must be one IPv4 and one IPv6 (a dual-stack pair)",
      },
    ],
    [
      "three cluster CIDRs",
      (c) => {
        c.clusterCIDRs = ["192.0.2.0/24", "2001:db8::/48", "198.51.100.0/24"];
      },
      {
        path: "clusterCIDR",
        value: "192.0.2.0/24,2001:db8::/48,198.51.100.0/24",
        message: "must be one CIDR, or two (one IPv4 and one IPv6) separated by a comma",
      },
    ],
    [
      "bad nodeport address",
      (c) => {
        c.nodePortAddresses = ["203.0.113.0/24", "eth0"];
      },
      {
        path: "nodePortAddresses[1]",
        value: "eth0",
        message: 'must be a valid CIDR (e.g. 192.0.2.0/24) or the single keyword "primary"',
      },
    ],
    [
      "primary mixed with CIDRs",
      (c) => {
        c.nodePortAddresses = ["primary", "203.0.113.0/24"];
      },
      { path: "nodePortAddresses[0]", value: "primary", message: '"primary" cannot be combined with CIDRs' },
    ],
    [
      "bad port range",
      (c) => {
        c.portRange = "300-200";
      },
      { path: "portRange", value: "300-200", message: "the end port must not be lower than the start port" },
    ],
    [
      "hidden metrics for an old version",
      (c) => {
        c.showHiddenMetricsForVersion = "1.28";
      },
      {
        path: "showHiddenMetricsForVersion",
        value: "1.28",
        message: 'must be empty or "1.30" (the previous minor release)',
      },
    ],
    [
      "unknown local mode",
      (c) => {
        Object.assign(c, { detectLocalMode: "PodCIDR" });
      },
      {
        path: "detectLocalMode",
        value: "PodCIDR",
        message: "must be one of ClusterCIDR, NodeCIDR, BridgeInterface, InterfaceNamePrefix or empty",
      },
    ],
    [
      "bridge mode without bridge",
      (c) => {
        c.detectLocalMode = "BridgeInterface";
      },
      {
        path: "detectLocal.bridgeInterface",
        value: "",
        message: "must be set when detectLocalMode is BridgeInterface",
      },
    ],
    [
      "prefix mode without prefix",
      (c) => {
        c.detectLocalMode = "InterfaceNamePrefix";
      },
      {
        path: "detectLocal.interfaceNamePrefix",
        value: "",
        message: "must be set when detectLocalMode is InterfaceNamePrefix",
      },
    ],
    [
      "unknown log format",
      (c) => {
        Object.assign(c.logging, { format: "xml" });
      },
      { path: "logging.format", value: "xml", message: 'must be "text" or "json"' },
    ],
    [
      "zero flush frequency",
      (c) => {
        c.logging.flushFrequency = 0;
      },
      { path: "logging.flushFrequency", value: "0s", message: "must be greater than 0" },
    ],
    [
      "vmodule with json",
      (c) => {
        c.logging.format = "json";
        c.logging.vmodule = "iptables=4";
      },
      { path: "logging.vmodule", value: "iptables=4", message: "only works with the text log format" },
    ],
    [
      "vmodule without level",
      (c) => {
        c.logging.vmodule = "iptables";
      },
      {
        path: "logging.vmodule",
        value: "iptables",
        message: 'entry "iptables" must have the form pattern=N',
      },
    ],
    [
      "split stream without gate",
      (c) => {
        c.logging.options.text.splitStream = true;
      },
      {
        path: "logging.options.text.splitStream",
        value: true,
        message: "requires the LoggingAlphaOptions feature gate",
      },
    ],
    [
      "info buffer without gate",
      (c) => {
        c.logging.options.json.infoBufferSize = "64Ki";
      },
      {
        path: "logging.options.json.infoBufferSize",
        value: "64Ki",
        message: "requires the LoggingAlphaOptions feature gate",
      },
    ],
  ];
  test.each(invalid)("%s is reported", (_name, mutate, expected) => {
    expect(issuesAfter(mutate)).toEqual([expected]);
  });

  const valid: [string, Mutation][] = [
    [
      "ipvs mode",
      (c) => {
        c.mode = "ipvs";
      },
    ],
    [
      "every scheduler",
      (c) => {
        c.ipvs.scheduler = "mh";
      },
    ],
    [
      "dual-stack cluster CIDRs",
      (c) => {
        c.clusterCIDRs = ["192.0.2.0/24", "2001:db8:42::/56"];
      },
    ],
    [
      "primary alone",
      (c) => {
        c.nodePortAddresses = ["primary"];
      },
    ],
    [
      "disabled health and metrics servers",
      (c) => {
        c.healthzBindAddress = "";
        c.metricsBindAddress = "";
      },
    ],
    [
      "IPv6 server addresses",
      (c) => {
        c.healthzBindAddress = "[2001:db8::1]:10256";
        c.bindAddress = "2001:db8::1";
      },
    ],
    [
      "zero min sync period",
      (c) => {
        c.iptables.minSyncPeriod = 0;
      },
    ],
    [
      "previous-minor hidden metrics",
      (c) => {
        c.showHiddenMetricsForVersion = "1.30";
      },
    ],
    [
      "split stream with the gate",
      (c) => {
        c.featureGates.LoggingAlphaOptions = true;
        c.logging.options.text.splitStream = true;
      },
    ],
    [
      "bridge mode with a bridge",
      (c) => {
        c.detectLocalMode = "BridgeInterface";
        c.detectLocal.bridgeInterface = "cbr0";
      },
    ],
    [
      "negative qps (no client-side limit upstream)",
      (c) => {
        c.clientConnection.qps = -1;
      },
    ],
  ];
  test.each(valid)("%s is accepted", (_name, mutate) => {
    expect(issuesAfter(mutate)).toEqual([]);
  });

  test("every problem is reported together, not just the first", () => {
    const issues = issuesAfter((c) => {
      c.iptables.masqueradeBit = 40;
      c.ipvs.scheduler = "bogus";
      c.clusterCIDRs = ["192.0.2.0/33"];
      c.mode = "kernelspace";
      c.oomScoreAdj = 2000;
    });
    expect(issues.map((i) => i.path).sort()).toEqual(
      ["clusterCIDR", "iptables.masqueradeBit", "ipvs.scheduler", "mode", "oomScoreAdj"].sort(),
    );
  });

  test("issues carry the origin the lookup gives for their path", () => {
    const config = defaultProxyConfig();
    config.iptables.masqueradeBit = 99;
    const issues = validateConfig(config, (path) =>
      path === "iptables.masqueradeBit" ? { flag: "--iptables-masquerade-bit" } : {},
    );
    expect(issues).toEqual([
      {
        path: "iptables.masqueradeBit",
        value: 99,
        message: "must be within [0, 31]",
        flag: "--iptables-masquerade-bit",
      },
    ]);
  });
});

describe("portRangeError", () => {
  test.each(["", "8080", "30000-32767", "8080+10", " 100-200 "])("%p is a valid port range", (text) => {
    expect(portRangeError(text)).toBeUndefined();
  });
  test.each(["x", "1-2-3", "70000", "100-99", "65530+10", "-5"])("%p is not", (text) => {
    expect(portRangeError(text)).toBeString();
  });
});

describe("interface names (detectLocal.bridgeInterface, detectLocal.interfaceNamePrefix)", () => {
  const bridge = (name: string) =>
    issuesAfter((c) => {
      c.detectLocalMode = "BridgeInterface";
      c.detectLocal.bridgeInterface = name;
    });
  const prefix = (name: string) =>
    issuesAfter((c) => {
      c.detectLocalMode = "InterfaceNamePrefix";
      c.detectLocal.interfaceNamePrefix = name;
    });

  test.each(["cbr0", "cni0", "br-1a2b3c4d5e6f", "docker0", "eth0.100", "x".repeat(15), "é".repeat(7)])(
    "bridge %p is accepted",
    (name) => expect(bridge(name)).toEqual([]),
  );
  test.each(["veth", "cali", "lxc", "gke", "x".repeat(14)])("prefix %p is accepted", (name) =>
    expect(prefix(name)).toEqual([]),
  );

  const bad: [string, string, string][] = [
    ["16 bytes", "x".repeat(16), "at most 15 bytes"],
    ["16 bytes of UTF-8 in 8 characters", "é".repeat(8), "at most 15 bytes"],
    ["a slash", "a/b", "'/' or ':'"],
    ["a colon", "eth0:1", "'/' or ':'"],
    ["a space", "cbr 0", "whitespace"],
    ["a newline", "cbr0\n-A X", "whitespace"],
    ["a tab", "\tcbr0", "whitespace"],
    ["a control character", "cbr\u00010", "control characters"],
    ["a dot", ".", '"." or ".."'],
    ["two dots", "..", '"." or ".."'],
    ["an iptables wildcard", "cbr+", "wildcards"],
    ["an nft wildcard", "cbr*", "wildcards"],
    ["a quote", 'cbr"0', "quotes"],
    ["a backslash", "cbr\\0", "backslashes"],
  ];

  test.each(bad)("a bridge with %s is refused, naming field and value", (_what, name, message) => {
    const issues = bridge(name);
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ path: "detectLocal.bridgeInterface", value: name });
    expect(issues[0]!.message).toContain(message);
  });

  test.each(bad.filter(([what]) => !what.startsWith("16 bytes")))(
    "a prefix with %s is refused, naming field and value",
    (_what, name, message) => {
      const issues = prefix(name);
      expect(issues).toHaveLength(1);
      expect(issues[0]).toMatchObject({ path: "detectLocal.interfaceNamePrefix", value: name });
      expect(issues[0]!.message).toContain(message);
    },
  );

  test("a prefix leaves room for the wildcard the match appends: at most 14 bytes", () => {
    const issues = prefix("x".repeat(15));
    expect(issues).toHaveLength(1);
    expect(issues[0]!.message).toContain("at most 14 bytes");
  });

  test("a name the selected mode does not use is not checked, as upstream", () => {
    expect(
      issuesAfter((c) => {
        c.detectLocalMode = "ClusterCIDR";
        c.detectLocal.bridgeInterface = "a b/c";
        c.detectLocal.interfaceNamePrefix = "x+";
      }),
    ).toEqual([]);
  });
});
