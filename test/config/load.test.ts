import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config/load.ts";
import { fixture } from "./fixture.ts";

const HEADER = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";
const minimal = { name: "minimal.yaml", text: fixture("minimal.yaml") };

describe("precedence: defaults < file < explicit flags", () => {
  test("a file value beats the default; an untouched field keeps its default", () => {
    const config = loadConfig({ file: minimal, settings: [] }).config;
    expect(config?.iptables.syncPeriod).toBe(20_000);
    expect(config?.iptables.minSyncPeriod).toBe(1_000);
  });

  test("an explicit flag beats the file and the override is recorded", () => {
    const result = loadConfig({
      file: minimal,
      settings: [
        { flag: "--iptables-sync-period", path: "iptables.syncPeriod", value: 45_000 },
        { flag: "--proxy-mode", path: "mode", value: "iptables" },
        { flag: "--ipvs-scheduler", path: "ipvs.scheduler", value: "rr" }, // same as the file: no override
        { flag: "--masquerade-all", path: "iptables.masqueradeAll", value: true }, // not in the file
      ],
    });
    expect(result.issues).toEqual([]);
    expect(result.config).toMatchObject({
      mode: "iptables",
      iptables: { syncPeriod: 45_000, masqueradeAll: true },
    });
    expect(result.overrides).toEqual([
      { flag: "--iptables-sync-period", path: "iptables.syncPeriod", fileValue: "20s", flagValue: "45s" },
      { flag: "--proxy-mode", path: "mode", fileValue: "ipvs", flagValue: "iptables" },
    ]);
  });

  test("feature gates merge key by key, the flag winning on shared keys", () => {
    const text = `${HEADER}featureGates:\n  AllAlpha: false\n  AllBeta: true\n`;
    const result = loadConfig({
      file: { name: "c.yaml", text },
      settings: [
        {
          flag: "--feature-gates",
          path: "featureGates",
          value: { AllBeta: false, LoggingAlphaOptions: true },
        },
      ],
    });
    expect(result.config?.featureGates).toEqual({
      AllAlpha: false,
      AllBeta: false,
      LoggingAlphaOptions: true,
    });
    expect(result.overrides).toEqual([
      {
        flag: "--feature-gates",
        path: "featureGates",
        fileValue: { AllAlpha: false, AllBeta: true },
        flagValue: { AllBeta: false, LoggingAlphaOptions: true },
      },
    ]);
  });

  test("a list flag replaces the file's list", () => {
    const text = `${HEADER}nodePortAddresses: [198.51.100.0/24]\n`;
    const result = loadConfig({
      file: { name: "c.yaml", text },
      settings: [{ flag: "--nodeport-addresses", path: "nodePortAddresses", value: ["203.0.113.0/24"] }],
    });
    expect(result.config?.nodePortAddresses).toEqual(["203.0.113.0/24"]);
    expect(result.overrides).toHaveLength(1);
  });

  test("a flag-origin issue names the flag, a file-origin issue names file and line", () => {
    const text = `${HEADER}oomScoreAdj: 5000\n`;
    const result = loadConfig({
      file: { name: "c.yaml", text },
      settings: [{ flag: "--iptables-masquerade-bit", path: "iptables.masqueradeBit", value: 32 }],
    });
    expect(result.config).toBeUndefined();
    expect(result.issues).toEqual([
      {
        path: "iptables.masqueradeBit",
        value: 32,
        message: "must be within [0, 31]",
        flag: "--iptables-masquerade-bit",
      },
      { path: "oomScoreAdj", value: 5000, message: "must be within [-1000, 1000]", file: "c.yaml", line: 3 },
    ]);
  });

  test("a flag fixing a bad file value makes the config valid", () => {
    const result = loadConfig({
      file: { name: "c.yaml", text: `${HEADER}oomScoreAdj: 5000\n` },
      settings: [{ flag: "--oom-score-adj", path: "oomScoreAdj", value: -900 }],
    });
    expect(result.issues).toEqual([]);
    expect(result.config?.oomScoreAdj).toBe(-900);
  });

  test("mode nftables in the file is accepted (NFTablesProxyMode is on by default)", () => {
    const result = loadConfig({
      file: { name: "nftables.yaml", text: fixture("nftables.yaml") },
      settings: [],
    });
    expect(result.issues).toEqual([]);
    expect(result.config?.mode).toBe("nftables");
  });
});

describe("deprecated port flags", () => {
  const cases: [string, { healthz?: string; port: number }, string][] = [
    ["replace the default address's port", { port: 12345 }, "0.0.0.0:12345"],
    ["disable the server with 0", { port: 0 }, ""],
    [
      "combine with an explicit address that has no port",
      { healthz: "192.0.2.1", port: 8080 },
      "192.0.2.1:8080",
    ],
    [
      "keep the port of an explicit address that has one",
      { healthz: "192.0.2.1:9000", port: 8080 },
      "192.0.2.1:9000",
    ],
  ];
  test.each(cases)("--healthz-port: %s", (_name, input, expected) => {
    const settings = input.healthz
      ? [{ flag: "--healthz-bind-address", path: "healthzBindAddress", value: input.healthz }]
      : [];
    const result = loadConfig({
      settings,
      ports: [{ flag: "--healthz-port", path: "healthzBindAddress", port: input.port }],
    });
    expect(result.issues).toEqual([]);
    expect(result.config?.healthzBindAddress).toBe(expected);
  });

  test("the port flag says when it is ignored", () => {
    const result = loadConfig({
      settings: [{ flag: "--healthz-bind-address", path: "healthzBindAddress", value: "192.0.2.1:9000" }],
      ports: [{ flag: "--healthz-port", path: "healthzBindAddress", port: 8080 }],
    });
    expect(result.notices).toContain(
      "--healthz-port is ignored because --healthz-bind-address already names a port",
    );
  });

  test("--metrics-port follows an IPv6 bind address", () => {
    const result = loadConfig({
      settings: [{ flag: "--bind-address", path: "bindAddress", value: "2001:db8::1" }],
      ports: [{ flag: "--metrics-port", path: "metricsBindAddress", port: 9100 }],
    });
    expect(result.config?.metricsBindAddress).toBe("[::1]:9100");
  });

  test("a port flag replacing a file address is recorded as an override", () => {
    const result = loadConfig({
      file: { name: "c.yaml", text: `${HEADER}metricsBindAddress: 192.0.2.1:10249\n` },
      settings: [],
      ports: [{ flag: "--metrics-port", path: "metricsBindAddress", port: 9100 }],
    });
    expect(result.config?.metricsBindAddress).toBe("192.0.2.1:9100");
    expect(result.overrides).toEqual([
      {
        flag: "--metrics-port",
        path: "metricsBindAddress",
        fileValue: "192.0.2.1:10249",
        flagValue: "192.0.2.1:9100",
      },
    ]);
  });
});

describe("notices and normalisation", () => {
  test("an explicitly configured protobuf content type gets a one-line notice", () => {
    const result = loadConfig({
      settings: [
        {
          flag: "--kube-api-content-type",
          path: "clientConnection.contentType",
          value: "application/vnd.kubernetes.protobuf",
        },
      ],
    });
    expect(result.notices).toHaveLength(1);
    expect(result.notices[0]).toContain("JSON");
    expect(result.config?.clientConnection.contentType).toBe("application/vnd.kubernetes.protobuf");
  });

  test("the default (protobuf) content type is accepted and noted once: the JS client speaks JSON", () => {
    expect(loadConfig({ settings: [] }).notices).toEqual([
      "clientConnection.contentType asks for protobuf, but this build's API client speaks JSON; requests use application/json",
    ]);
  });

  test("hostnameOverride is trimmed and lower-cased; a blank one is an error", () => {
    const ok = loadConfig({
      settings: [{ flag: "--hostname-override", path: "hostnameOverride", value: " Node-A " }],
    });
    expect(ok.config?.hostnameOverride).toBe("node-a");
    const blank = loadConfig({
      settings: [{ flag: "--hostname-override", path: "hostnameOverride", value: "   " }],
    });
    expect(blank.issues).toEqual([
      { path: "hostnameOverride", value: "   ", message: "must not be blank", flag: "--hostname-override" },
    ]);
  });

  test("IPv6 fixture: server addresses follow the IPv6 bind address", () => {
    const config = loadConfig({
      file: { name: "ipv6.yaml", text: fixture("ipv6.yaml") },
      settings: [],
    }).config;
    expect(config).toMatchObject({
      bindAddress: "2001:db8::10",
      healthzBindAddress: "[::]:10256",
      metricsBindAddress: "[::1]:10249",
      clusterCIDRs: ["2001:db8:42::/56"],
    });
  });
});
