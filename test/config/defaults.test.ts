import { describe, expect, test } from "bun:test";
import { defaultProxyConfig, resolveConfig } from "../../src/config/defaults.ts";
import { loadConfig } from "../../src/config/load.ts";
import type { ProxyConfig } from "../../src/config/types.ts";

const HEADER = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";

/** Upstream v1.31's defaults (SetDefaults_KubeProxyConfiguration plus Linux platform defaults). */
const UPSTREAM_DEFAULTS: ProxyConfig = {
  featureGates: {},
  clientConnection: {
    kubeconfig: "",
    acceptContentTypes: "",
    contentType: "application/vnd.kubernetes.protobuf",
    qps: 5,
    burst: 10,
  },
  logging: {
    format: "text",
    flushFrequency: 5_000,
    verbosity: 0,
    vmodule: "",
    options: {
      text: { splitStream: false, infoBufferSize: "0" },
      json: { splitStream: false, infoBufferSize: "0" },
    },
  },
  hostnameOverride: "",
  bindAddress: "0.0.0.0",
  healthzBindAddress: "0.0.0.0:10256",
  metricsBindAddress: "127.0.0.1:10249",
  bindAddressHardFail: false,
  enableProfiling: false,
  showHiddenMetricsForVersion: "",
  mode: "iptables",
  iptables: {
    masqueradeBit: 14,
    masqueradeAll: false,
    localhostNodePorts: true,
    syncPeriod: 30_000,
    minSyncPeriod: 1_000,
  },
  ipvs: {
    syncPeriod: 30_000,
    minSyncPeriod: 0,
    scheduler: "",
    excludeCIDRs: [],
    strictARP: false,
    tcpTimeout: 0,
    tcpFinTimeout: 0,
    udpTimeout: 0,
  },
  nftables: { masqueradeBit: 14, masqueradeAll: false, syncPeriod: 30_000, minSyncPeriod: 1_000 },
  winkernel: {
    networkName: "",
    sourceVip: "",
    enableDSR: false,
    rootHnsEndpointName: "",
    forwardHealthCheckVip: false,
  },
  detectLocalMode: "ClusterCIDR",
  detectLocal: { bridgeInterface: "", interfaceNamePrefix: "" },
  clusterCIDRs: [],
  nodePortAddresses: [],
  oomScoreAdj: -999,
  conntrack: {
    maxPerCore: 32_768,
    min: 131_072,
    tcpEstablishedTimeout: 86_400_000,
    tcpCloseWaitTimeout: 3_600_000,
    tcpBeLiberal: false,
    udpTimeout: 0,
    udpStreamTimeout: 0,
  },
  configSyncPeriod: 900_000,
  portRange: "",
  windowsRunAsService: false,
};

describe("defaults", () => {
  test("the default ProxyConfig equals upstream v1.31's", () => {
    expect(defaultProxyConfig()).toEqual(UPSTREAM_DEFAULTS);
  });

  test("no file and no flags loads to the defaults without issues", () => {
    const result = loadConfig({ settings: [] });
    expect(result.issues).toEqual([]);
    expect(result.config).toEqual(UPSTREAM_DEFAULTS);
  });

  test("an empty-but-valid file also loads to the defaults", () => {
    expect(loadConfig({ file: { name: "empty.yaml", text: HEADER }, settings: [] }).config).toEqual(
      UPSTREAM_DEFAULTS,
    );
  });

  const addressCases: [string, string, string][] = [
    ["192.0.2.10", "0.0.0.0:10256", "127.0.0.1:10249"],
    ["2001:db8::10", "[::]:10256", "[::1]:10249"],
    ["::", "[::]:10256", "[::1]:10249"],
  ];
  test.each(addressCases)(
    "bindAddress %p from the file gives healthz %p and metrics %p",
    (bind, healthz, metrics) => {
      const result = loadConfig({
        file: { name: "c.yaml", text: `${HEADER}bindAddress: "${bind}"\n` },
        settings: [],
      });
      expect(result.config).toMatchObject({
        bindAddress: bind,
        healthzBindAddress: healthz,
        metricsBindAddress: metrics,
      });
    },
  );

  test.each(addressCases)(
    "bindAddress %p from a flag gives healthz %p and metrics %p",
    (bind, healthz, metrics) => {
      const result = loadConfig({ settings: [{ flag: "--bind-address", path: "bindAddress", value: bind }] });
      expect(result.config).toMatchObject({ healthzBindAddress: healthz, metricsBindAddress: metrics });
    },
  );

  test("a bare IP as server address gets the standard port appended", () => {
    const config = resolveConfig({ healthzBindAddress: "2001:db8::1", metricsBindAddress: "192.0.2.1" });
    expect(config.healthzBindAddress).toBe("[2001:db8::1]:10256");
    expect(config.metricsBindAddress).toBe("192.0.2.1:10249");
  });

  test("zero values in the file mean 'default', as upstream's non-pointer fields do", () => {
    const text = `${HEADER}iptables:\n  syncPeriod: 0s\n  minSyncPeriod: 0s\nclientConnection:\n  qps: 0\n  burst: 0\nconfigSyncPeriod: 0s\n`;
    const config = loadConfig({ file: { name: "c.yaml", text }, settings: [] }).config;
    expect(config?.iptables).toMatchObject({ syncPeriod: 30_000, minSyncPeriod: 1_000 });
    expect(config?.clientConnection).toMatchObject({ qps: 5, burst: 10 });
    expect(config?.configSyncPeriod).toBe(900_000);
  });

  test("zero in a pointer field of the file is kept (conntrack.maxPerCore: 0 leaves the limit alone)", () => {
    const text = `${HEADER}conntrack:\n  maxPerCore: 0\n  min: 0\noomScoreAdj: 0\niptables:\n  masqueradeBit: 0\n`;
    const config = loadConfig({ file: { name: "c.yaml", text }, settings: [] }).config;
    expect(config?.conntrack).toMatchObject({ maxPerCore: 0, min: 0 });
    expect(config?.oomScoreAdj).toBe(0);
    expect(config?.iptables.masqueradeBit).toBe(0);
  });

  test("an explicit zero flag is kept, as upstream applies flags after defaulting", () => {
    const config = loadConfig({
      settings: [{ flag: "--iptables-min-sync-period", path: "iptables.minSyncPeriod", value: 0 }],
    }).config;
    expect(config?.iptables.minSyncPeriod).toBe(0);
  });

  test("mode and detectLocalMode resolve empty strings to the Linux defaults", () => {
    const config = loadConfig({
      file: { name: "c.yaml", text: `${HEADER}mode: ""\ndetectLocalMode: ""\n` },
      settings: [],
    });
    expect(config.config).toMatchObject({ mode: "iptables", detectLocalMode: "ClusterCIDR" });
  });
});
