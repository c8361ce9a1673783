import { describe, expect, test } from "bun:test";
import { parse } from "yaml";
import { defaultProxyConfig } from "../../src/config/defaults.ts";
import { loadConfig } from "../../src/config/load.ts";
import type { ProxyConfig } from "../../src/config/types.ts";
import { lossyFields, serializeConfig } from "../../src/config/write.ts";
import { fixture } from "./fixture.ts";

function reload(text: string): ProxyConfig | undefined {
  const result = loadConfig({ file: { name: "written.yaml", text }, settings: [] });
  expect(result.issues).toEqual([]);
  return result.config;
}

describe("serializeConfig (--write-config-to)", () => {
  test("the defaults round-trip through the loader", () => {
    const config = defaultProxyConfig();
    expect(reload(serializeConfig(config))).toEqual(config);
  });

  test("a config with every field set round-trips through the loader", () => {
    const config = loadConfig({
      file: { name: "full.yaml", text: fixture("full.yaml") },
      settings: [],
    }).config;
    if (!config) throw new Error("fixture should load");
    expect(reload(serializeConfig(config))).toEqual(config);
  });

  test("file plus flag overrides round-trip to the same effective config", () => {
    const config = loadConfig({
      file: { name: "minimal.yaml", text: fixture("minimal.yaml") },
      settings: [
        { flag: "--ipvs-tcp-timeout", path: "ipvs.tcpTimeout", value: 1_500 },
        { flag: "--v", path: "logging.verbosity", value: 4 },
        { flag: "--vmodule", path: "logging.vmodule", value: [{ filePattern: "ipvs", verbosity: 6 }] },
      ],
    }).config;
    if (!config) throw new Error("should load");
    expect(reload(serializeConfig(config))).toEqual(config);
  });

  test("durations are written as Go prints them, with v1alpha1 identity fields", () => {
    const doc = parse(serializeConfig(defaultProxyConfig())) as Record<
      string,
      Record<string, unknown> | string
    >;
    expect(doc.apiVersion).toBe("kubeproxy.config.k8s.io/v1alpha1");
    expect(doc.kind).toBe("KubeProxyConfiguration");
    expect(doc.configSyncPeriod).toBe("15m0s");
    expect(doc.conntrack).toMatchObject({ tcpEstablishedTimeout: "24h0m0s", tcpCloseWaitTimeout: "1h0m0s" });
    expect(doc.iptables).toMatchObject({ syncPeriod: "30s", minSyncPeriod: "1s" });
    expect(doc.ipvs).toMatchObject({ syncPeriod: "30s", minSyncPeriod: "0s" });
    expect(doc.mode).toBe("iptables");
  });

  test("keys are sorted like upstream's encoder output", () => {
    const keys = Object.keys(parse(serializeConfig(defaultProxyConfig())) as object);
    expect(keys).toEqual([...keys].sort());
  });

  test("lossyFields names zero values v1alpha1 would read back as defaults", () => {
    const config = defaultProxyConfig();
    expect(lossyFields(config)).toEqual([]);
    config.iptables.minSyncPeriod = 0;
    config.healthzBindAddress = "";
    expect(lossyFields(config)).toEqual(["healthzBindAddress", "iptables.minSyncPeriod"]);
  });
});
