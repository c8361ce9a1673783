// The v1.37 feature-gate table and how a featureGates map is judged: unknown and lock-violating
// names are errors (with their flag or file line), GA/deprecated settings warn, AllAlpha/AllBeta
// fill in unset gates, and the gates that change validation (nftables mode, log options) do.
import { describe, expect, test } from "bun:test";
import {
  DEFAULT_FEATURE_GATES,
  effectiveFeatureGates,
  featureEnabled,
  featureGateProblems,
  featureGateWarnings,
  isKnownFeatureGate,
  KNOWN_FEATURE_GATES,
  knownFeatureGateLines,
} from "../../src/config/feature-gates.ts";
import { formatIssues } from "../../src/config/issues.ts";
import { loadConfig } from "../../src/config/load.ts";

const HEADER = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";

describe("the v1.37 gate table", () => {
  test.each([
    ["NFTablesProxyMode", { default: true, stage: "GA", locked: true }],
    ["PreferSameTrafficDistribution", { default: true, stage: "GA", locked: true }],
    ["MultiCIDRServiceAllocator", { default: true, stage: "GA", locked: true }],
    ["KubeProxyIPVS", { default: true, stage: "DEPRECATED", locked: false }],
    ["KubeProxyNFTablesLocalhostNodePorts", { default: false, stage: "ALPHA", locked: false }],
    ["AllowServiceExternalIPs", { default: true, stage: "GA", locked: false }],
    ["ComponentFlagz", { default: true, stage: "BETA", locked: false }],
    ["ComponentStatusz", { default: true, stage: "BETA", locked: false }],
    ["NativeHistograms", { default: true, stage: "BETA", locked: false }],
    ["LoggingAlphaOptions", { default: false, stage: "ALPHA", locked: false }],
    ["LoggingBetaOptions", { default: true, stage: "BETA", locked: false }],
    ["ContextualLogging", { default: true, stage: "BETA", locked: false }],
    ["WatchListClient", { default: true, stage: "BETA", locked: false }],
    ["DisableNodeKubeProxyVersion", { default: true, stage: "DEPRECATED", locked: true }],
    ["InformerResourceVersion", { default: true, stage: "GA", locked: false }],
    ["AllAlpha", { default: false, stage: "ALPHA", locked: false }],
    ["AllBeta", { default: false, stage: "BETA", locked: false }],
  ] as const)("%s", (name, spec) => {
    expect(KNOWN_FEATURE_GATES.get(name)).toEqual(spec);
  });

  test("names are unique and gates removed before 1.37 are unknown, as upstream", () => {
    // 251 gates plus AllAlpha and AllBeta: a duplicate name would lower the count.
    expect(KNOWN_FEATURE_GATES.size).toBe(253);
    expect(isKnownFeatureGate("CustomCPUCFSQuotaPeriod")).toBe(true);
    for (const gone of [
      "Bogus",
      "TopologyAwareHints",
      "ServiceTrafficDistribution",
      "LoadBalancerIPMode",
      "KubeProxyDrainingTerminatingNodes",
      "ComponentSLIs",
      "",
    ]) {
      expect(isKnownFeatureGate(gone)).toBe(false);
    }
  });

  test("the help list is sorted and leaves out GA and deprecated gates, as upstream's does", () => {
    const lines = knownFeatureGateLines();
    expect(lines).toEqual([...lines].sort());
    expect(lines).toContain("ComponentStatusz=true|false (BETA - default=true)");
    expect(lines.some((l) => l.startsWith("NFTablesProxyMode="))).toBe(false);
    expect(lines.some((l) => l.startsWith("KubeProxyIPVS="))).toBe(false);
  });
});

describe("featureGateProblems", () => {
  test("an unknown name is an error naming it", () => {
    expect(featureGateProblems({ Bogus: true })).toEqual([
      { name: "Bogus", value: true, message: "unrecognized feature gate: Bogus" },
    ]);
  });
  test("a locked gate may only be set to its default", () => {
    expect(featureGateProblems({ NFTablesProxyMode: true })).toEqual([]);
    expect(featureGateProblems({ NFTablesProxyMode: false })).toEqual([
      {
        name: "NFTablesProxyMode",
        value: false,
        message: "cannot set feature gate NFTablesProxyMode to false, feature is locked to true",
      },
    ]);
  });
  test("every problem is listed, not only the first", () => {
    expect(featureGateProblems({ A: true, NFTablesProxyMode: false, B: false })).toHaveLength(3);
  });
  test("an enabled gate whose dependency is off is refused (1.35+), naming what is off", () => {
    expect(featureGateProblems({ AtomicFIFO: false })).toContainEqual({
      name: "NodeControllerLeaseCircuitBreaker",
      value: true,
      message:
        "NodeControllerLeaseCircuitBreaker is enabled, but depends on features that are disabled: [AtomicFIFO]",
    });
    expect(featureGateProblems({ AllAlpha: true }).map((p) => p.name)).toContain("WorkloadWithJob");
    expect(featureGateProblems({ AllAlpha: true, AllBeta: true })).toEqual([]);
    expect(featureGateProblems({})).toEqual([]);
  });
  test("dependencies are judged only when every setting was accepted", () => {
    expect(featureGateProblems({ AtomicFIFO: false, Bogus: true })).toEqual([
      { name: "Bogus", value: true, message: "unrecognized feature gate: Bogus" },
    ]);
  });
});

describe("featureGateWarnings", () => {
  test("GA and deprecated gates warn that they will be removed; others do not", () => {
    expect(
      featureGateWarnings({
        NFTablesProxyMode: true,
        AllowServiceExternalIPs: false,
        KubeProxyIPVS: true,
        ComponentFlagz: false,
        AllAlpha: true,
        Bogus: true,
      }),
    ).toEqual([
      "Setting GA feature gate NFTablesProxyMode=true. It will be removed in a future release.",
      "Setting GA feature gate AllowServiceExternalIPs=false. It will be removed in a future release.",
      "Setting deprecated feature gate KubeProxyIPVS=true. It will be removed in a future release.",
    ]);
  });
});

describe("effective gate values", () => {
  test("defaults when nothing is set", () => {
    expect(DEFAULT_FEATURE_GATES.enabled("PreferSameTrafficDistribution")).toBe(true);
    expect(DEFAULT_FEATURE_GATES.enabled("LoggingAlphaOptions")).toBe(false);
    expect(featureEnabled(DEFAULT_FEATURE_GATES, "KubeProxyIPVS")).toBe(true);
  });
  test("an explicit setting wins", () => {
    const gates = effectiveFeatureGates({ KubeProxyIPVS: false, LoggingAlphaOptions: true });
    expect(featureEnabled(gates, "KubeProxyIPVS")).toBe(false);
    expect(featureEnabled(gates, "LoggingAlphaOptions")).toBe(true);
  });
  test("AllAlpha and AllBeta set every unset gate of their stage, and nothing else", () => {
    const gates = effectiveFeatureGates({ AllAlpha: true, AllBeta: false, ComponentFlagz: true });
    expect(gates.enabled("LoggingAlphaOptions")).toBe(true);
    expect(gates.enabled("KubeProxyNFTablesLocalhostNodePorts")).toBe(true);
    expect(gates.enabled("ComponentStatusz")).toBe(false);
    expect(gates.enabled("ComponentFlagz")).toBe(true);
    expect(gates.enabled("NFTablesProxyMode")).toBe(true);
    expect(gates.enabled("KubeProxyIPVS")).toBe(true);
    expect(gates.enabled("AllAlpha")).toBe(true);
    expect(gates.enabled("AllBeta")).toBe(false);
  });
});

describe("validation of the loaded configuration", () => {
  test("an unknown gate from the file names its line; one from the flag names the flag", () => {
    const r = loadConfig({
      file: { name: "kp.yaml", text: `${HEADER}featureGates:\n  ComponentFlagz: true\n  Bogus: true\n` },
      settings: [{ flag: "--feature-gates", path: "featureGates", value: { Bogus2: false } }],
    });
    expect(r.config).toBeUndefined();
    expect(formatIssues(r.issues)).toBe(
      [
        "featureGates.Bogus: true: unrecognized feature gate: Bogus (kp.yaml:5)",
        "featureGates.Bogus2: false: unrecognized feature gate: Bogus2 (flag --feature-gates)",
      ].join("\n"),
    );
  });

  test("a locked gate set against its lock is an error", () => {
    const r = loadConfig({
      settings: [
        {
          flag: "--feature-gates",
          path: "featureGates",
          value: { NFTablesProxyMode: false },
        },
      ],
    });
    expect(r.issues).toEqual([
      expect.objectContaining({
        path: "featureGates.NFTablesProxyMode",
        flag: "--feature-gates",
        message: expect.stringContaining("feature is locked to true"),
      }),
    ]);
  });

  test("mode ipvs needs KubeProxyIPVS (deprecated, on by default); nftables is always there", () => {
    const off = loadConfig({
      settings: [
        { flag: "--proxy-mode", path: "mode", value: "ipvs" },
        { flag: "--feature-gates", path: "featureGates", value: { KubeProxyIPVS: false } },
      ],
    });
    expect(off.issues).toEqual([
      expect.objectContaining({ path: "mode", message: expect.stringContaining("KubeProxyIPVS") }),
    ]);
    expect(loadConfig({ settings: [{ flag: "--proxy-mode", path: "mode", value: "ipvs" }] }).issues).toEqual(
      [],
    );
    const on = loadConfig({ settings: [{ flag: "--proxy-mode", path: "mode", value: "nftables" }] });
    expect(on.issues).toEqual([]);
  });

  test("an enabled gate with a disabled dependency fails the load (1.35+)", () => {
    const r = loadConfig({
      settings: [{ flag: "--feature-gates", path: "featureGates", value: { AllAlpha: true } }],
    });
    expect(r.config).toBeUndefined();
    expect(formatIssues(r.issues)).toContain("depends on features that are disabled: [GenericWorkload]");
  });

  test("the json log format needs LoggingBetaOptions (on by default)", () => {
    const json = { flag: "--logging-format", path: "logging.format", value: "json" };
    expect(loadConfig({ settings: [json] }).issues).toEqual([]);
    const off = loadConfig({
      settings: [json, { flag: "--feature-gates", path: "featureGates", value: { AllBeta: false } }],
    });
    expect(off.issues).toEqual([
      expect.objectContaining({
        path: "logging.format",
        message: "requires the LoggingBetaOptions feature gate",
      }),
    ]);
  });

  test("the alpha log options follow the effective LoggingAlphaOptions, AllAlpha included", () => {
    const split = { flag: "--log-text-split-stream", path: "logging.options.text.splitStream", value: true };
    expect(loadConfig({ settings: [split] }).issues).toHaveLength(1);
    const all = { flag: "--feature-gates", path: "featureGates", value: { AllAlpha: true, AllBeta: true } };
    expect(loadConfig({ settings: [split, all] }).issues).toEqual([]);
  });
});
