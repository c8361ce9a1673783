// The mode registry: the names it derives, that configuration validation accepts exactly the
// modes it lists, and that each mode's sync periods are its own section of the configuration.
import { describe, expect, test } from "bun:test";
import { defaultProxyConfig } from "../../src/config/defaults.ts";
import type { ProxyMode } from "../../src/config/types.ts";
import { validateConfig } from "../../src/config/validate.ts";
import { MODE_NAMES, MODES, modeForConfig, modeNamed } from "../../src/modes/registry.ts";

const CONFIG_MODES: ProxyMode[] = ["iptables", "ipvs", "nftables", "kernelspace"];

describe("mode registry", () => {
  test("lists iptables, ipvs and nftables, in --cleanup order", () => {
    expect(MODE_NAMES).toEqual(["iptables", "ipvs", "nftables"]);
    expect(MODES.map((m) => m.name)).toEqual([...MODE_NAMES]);
  });

  test("validation accepts exactly the modes the registry runs", () => {
    for (const mode of CONFIG_MODES) {
      const config = { ...defaultProxyConfig(), mode };
      const modeIssues = validateConfig(config).filter((i) => i.path === "mode");
      expect({ mode, accepted: modeIssues.length === 0 }).toEqual({
        mode,
        accepted: (MODE_NAMES as readonly string[]).includes(mode),
      });
    }
  });

  test("a validated configuration finds its mode; each mode syncs on its own periods", () => {
    const config = defaultProxyConfig();
    config.iptables.syncPeriod = 30_000;
    config.ipvs.syncPeriod = 90_000;
    expect(modeForConfig({ mode: "ipvs" }).name).toBe("ipvs");
    expect(modeForConfig({ mode: "iptables" }).name).toBe("iptables");
    expect(modeNamed("iptables").periods(config).syncPeriod).toBe(30_000);
    expect(modeNamed("ipvs").periods(config).syncPeriod).toBe(90_000);
  });

  test("ipvs and nftables have prerequisites; only ipvs kernel settings and a part of the dry-run report", () => {
    expect(MODES.filter((m) => m.prerequisites).map((m) => m.name)).toEqual(["ipvs", "nftables"]);
    expect(MODES.filter((m) => m.sysctls).map((m) => m.name)).toEqual(["ipvs"]);
    expect(modeNamed("ipvs").dryRunReport?.(undefined)).toEqual({ ipvs: { virtualServers: [] } });
    expect(modeNamed("nftables").dryRunReport).toBeUndefined();
    expect(modeNamed("iptables").dryRunReport).toBeUndefined();
  });
});
