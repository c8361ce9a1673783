// The v1.31 feature-gate table and how a featureGates map is judged: unknown and lock-violating
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

describe("the v1.31 gate table", () => {
  test.each([
    ["TopologyAwareHints", { default: true, stage: "BETA", locked: false }],
    ["ServiceTrafficDistribution", { default: true, stage: "BETA", locked: false }],
    ["LoadBalancerIPMode", { default: true, stage: "BETA", locked: false }],
    ["NFTablesProxyMode", { default: true, stage: "BETA", locked: false }],
    ["KubeProxyDrainingTerminatingNodes", { default: true, stage: "GA", locked: true }],
    ["LoggingAlphaOptions", { default: false, stage: "ALPHA", locked: false }],
    ["LoggingBetaOptions", { default: true, stage: "BETA", locked: false }],
    ["ContextualLogging", { default: true, stage: "BETA", locked: false }],
    ["WatchListClient", { default: false, stage: "BETA", locked: false }],
    ["ComponentSLIs", { default: true, stage: "BETA", locked: false }],
    ["ConsistentListFromCache", { default: true, stage: "BETA", locked: false }],
    ["DisableNodeKubeProxyVersion", { default: false, stage: "DEPRECATED", locked: false }],
    ["ExecProbeTimeout", { default: true, stage: "GA", locked: false }],
    ["AllAlpha", { default: false, stage: "ALPHA", locked: false }],
    ["AllBeta", { default: false, stage: "BETA", locked: false }],
  ] as const)("%s", (name, spec) => {
    expect(KNOWN_FEATURE_GATES.get(name)).toEqual(spec);
  });

  test("names are unique and only names upstream v1.31 knows are in it", () => {
    // 164 gates from the lists plus AllAlpha and AllBeta: a duplicate name would lower the count.
    expect(KNOWN_FEATURE_GATES.size).toBe(166);
    expect(isKnownFeatureGate("CustomCPUCFSQuotaPeriod")).toBe(true);
    for (const gone of ["Bogus", "PreferSameTrafficDistribution", "KubeletEnsureSecretPulledImages", ""]) {
      expect(isKnownFeatureGate(gone)).toBe(false);
    }
  });

  test("the help list is sorted and leaves out GA and deprecated gates, as upstream's does", () => {
    const lines = knownFeatureGateLines();
    expect(lines).toEqual([...lines].sort());
    expect(lines).toContain("NFTablesProxyMode=true|false (BETA - default=true)");
    expect(lines.some((l) => l.startsWith("KubeProxyDrainingTerminatingNodes="))).toBe(false);
    expect(lines.some((l) => l.startsWith("KMSv1="))).toBe(false);
  });
});

describe("featureGateProblems", () => {
  test("an unknown name is an error naming it", () => {
    expect(featureGateProblems({ Bogus: true })).toEqual([
      { name: "Bogus", value: true, message: "unrecognized feature gate: Bogus" },
    ]);
  });
  test("a locked gate may only be set to its default", () => {
    expect(featureGateProblems({ KubeProxyDrainingTerminatingNodes: true })).toEqual([]);
    expect(featureGateProblems({ KubeProxyDrainingTerminatingNodes: false })).toEqual([
      {
        name: "KubeProxyDrainingTerminatingNodes",
        value: false,
        message:
          "cannot set feature gate KubeProxyDrainingTerminatingNodes to false, feature is locked to true",
      },
    ]);
  });
  test("every problem is listed, not only the first", () => {
    expect(featureGateProblems({ A: true, TopologyAwareHints: false, B: false })).toHaveLength(2);
  });
});

describe("featureGateWarnings", () => {
  test("GA and deprecated gates warn that they will be removed; others do not", () => {
    expect(
      featureGateWarnings({
        KubeProxyDrainingTerminatingNodes: true,
        ExecProbeTimeout: false,
        DisableNodeKubeProxyVersion: true,
        TopologyAwareHints: false,
        AllAlpha: true,
        Bogus: true,
      }),
    ).toEqual([
      "Setting GA feature gate KubeProxyDrainingTerminatingNodes=true. It will be removed in a future release.",
      "Setting GA feature gate ExecProbeTimeout=false. It will be removed in a future release.",
      "Setting deprecated feature gate DisableNodeKubeProxyVersion=true. It will be removed in a future release.",
    ]);
  });
});

describe("effective gate values", () => {
  test("defaults when nothing is set", () => {
    expect(DEFAULT_FEATURE_GATES.enabled("TopologyAwareHints")).toBe(true);
    expect(DEFAULT_FEATURE_GATES.enabled("LoggingAlphaOptions")).toBe(false);
    expect(featureEnabled(DEFAULT_FEATURE_GATES, "NFTablesProxyMode")).toBe(true);
  });
  test("an explicit setting wins", () => {
    const gates = effectiveFeatureGates({ NFTablesProxyMode: false, LoggingAlphaOptions: true });
    expect(featureEnabled(gates, "NFTablesProxyMode")).toBe(false);
    expect(featureEnabled(gates, "LoggingAlphaOptions")).toBe(true);
  });
  test("AllAlpha and AllBeta set every unset gate of their stage, and nothing else", () => {
    const gates = effectiveFeatureGates({ AllAlpha: true, AllBeta: false, LoadBalancerIPMode: true });
    expect(gates.enabled("LoggingAlphaOptions")).toBe(true);
    expect(gates.enabled("WatchList")).toBe(true);
    expect(gates.enabled("TopologyAwareHints")).toBe(false);
    expect(gates.enabled("NFTablesProxyMode")).toBe(false);
    expect(gates.enabled("LoadBalancerIPMode")).toBe(true);
    expect(gates.enabled("KubeProxyDrainingTerminatingNodes")).toBe(true);
    expect(gates.enabled("DisableNodeKubeProxyVersion")).toBe(false);
    expect(gates.enabled("AllAlpha")).toBe(true);
    expect(gates.enabled("AllBeta")).toBe(false);
  });
});

describe("validation of the loaded configuration", () => {
  test("an unknown gate from the file names its line; one from the flag names the flag", () => {
    const r = loadConfig({
      file: { name: "kp.yaml", text: `${HEADER}featureGates:\n  TopologyAwareHints: true\n  Bogus: true\n` },
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
          value: { KubeProxyDrainingTerminatingNodes: false },
        },
      ],
    });
    expect(r.issues).toEqual([
      expect.objectContaining({
        path: "featureGates.KubeProxyDrainingTerminatingNodes",
        flag: "--feature-gates",
        message: expect.stringContaining("feature is locked to true"),
      }),
    ]);
  });

  test("mode nftables can only be named while NFTablesProxyMode is on", () => {
    const off = loadConfig({
      settings: [
        { flag: "--proxy-mode", path: "mode", value: "nftables" },
        { flag: "--feature-gates", path: "featureGates", value: { NFTablesProxyMode: false } },
      ],
    });
    expect(off.issues).toEqual([
      expect.objectContaining({ path: "mode", message: expect.stringContaining("NFTablesProxyMode") }),
    ]);
    const on = loadConfig({ settings: [{ flag: "--proxy-mode", path: "mode", value: "nftables" }] });
    expect(on.issues).toEqual([]);
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
    const all = { flag: "--feature-gates", path: "featureGates", value: { AllAlpha: true } };
    expect(loadConfig({ settings: [split, all] }).issues).toEqual([]);
  });
});
