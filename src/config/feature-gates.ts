// What a `featureGates` map (flag or file) makes of upstream v1.37's gates (the table is in
// feature-gate-table.ts): which names are errors, which settings only warn, and each gate's
// effective value. A gate missing from the table is rejected, as upstream rejects an unknown one.

import { type FeatureStage, GATE_DEPENDENCIES, GATE_TABLE } from "./feature-gate-table.ts";

export type { FeatureStage } from "./feature-gate-table.ts";

export interface FeatureSpec {
  readonly default: boolean;
  readonly stage: FeatureStage;
  /** Locked gates accept only their default (upstream's LockToDefault). */
  readonly locked: boolean;
}

/** Gates that switch every unset alpha (AllAlpha) or beta (AllBeta) gate at once. */
const SPECIAL = ["AllAlpha", "AllBeta"] as const;

/** Every gate name kube-proxy v1.37 accepts. */
export type FeatureGateName = (typeof SPECIAL)[number] | (typeof GATE_TABLE)[number][0];

/** The v1.37 gate table: name -> default, stage, locked. */
export const KNOWN_FEATURE_GATES: ReadonlyMap<FeatureGateName, FeatureSpec> = new Map<
  FeatureGateName,
  FeatureSpec
>([
  ["AllAlpha", { default: false, stage: "ALPHA", locked: false }],
  ["AllBeta", { default: false, stage: "BETA", locked: false }],
  ...GATE_TABLE.map(([name, stage, def, locked]): [FeatureGateName, FeatureSpec] => [
    name,
    { default: def, stage, locked },
  ]),
]);

export function isKnownFeatureGate(name: string): name is FeatureGateName {
  return KNOWN_FEATURE_GATES.has(name as FeatureGateName);
}

function isSpecial(name: string): boolean {
  return (SPECIAL as readonly string[]).includes(name);
}

/** A problem with one `featureGates` entry; `name` is the key as given. */
export interface FeatureGateProblem {
  readonly name: string;
  readonly value: boolean;
  readonly message: string;
}

/**
 * What upstream refuses: an unknown name, a locked gate set against its lock, and (1.35+, checked
 * only when nothing else is wrong) an enabled gate whose dependencies are not all enabled.
 * Upstream stops at the first unknown name; every problem is listed here, like every other
 * config problem.
 */
export function featureGateProblems(explicit: Readonly<Record<string, boolean>>): FeatureGateProblem[] {
  const out = settingProblems(explicit);
  if (out.length > 0) return out;
  const gates = effectiveFeatureGates(explicit);
  for (const [name, deps] of Object.entries(GATE_DEPENDENCIES)) {
    if (!gates.enabled(name as FeatureGateName)) continue;
    const off = deps.filter((d) => !gates.enabled(d as FeatureGateName));
    if (off.length === 0) continue;
    out.push({
      name,
      value: true,
      message: `${name} is enabled, but depends on features that are disabled: [${off.join(" ")}]`,
    });
  }
  return out;
}

function settingProblems(explicit: Readonly<Record<string, boolean>>): FeatureGateProblem[] {
  const out: FeatureGateProblem[] = [];
  for (const [name, value] of Object.entries(explicit)) {
    const spec = isKnownFeatureGate(name) ? KNOWN_FEATURE_GATES.get(name) : undefined;
    if (!spec) out.push({ name, value, message: `unrecognized feature gate: ${name}` });
    else if (spec.locked && value !== spec.default) {
      out.push({
        name,
        value,
        message: `cannot set feature gate ${name} to ${value}, feature is locked to ${spec.default}`,
      });
    }
  }
  return out;
}

/** The warnings upstream logs for accepted settings of GA and deprecated gates. */
export function featureGateWarnings(explicit: Readonly<Record<string, boolean>>): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(explicit)) {
    const spec = isKnownFeatureGate(name) ? KNOWN_FEATURE_GATES.get(name) : undefined;
    if (!spec || isSpecial(name) || (spec.locked && value !== spec.default)) continue;
    if (spec.stage === "DEPRECATED" || spec.stage === "GA") {
      const kind = spec.stage === "GA" ? "GA" : "deprecated";
      out.push(`Setting ${kind} feature gate ${name}=${value}. It will be removed in a future release.`);
    }
  }
  return out;
}

/** Each gate's value for this run, asked for by name; computed once from the explicit settings. */
export interface EffectiveFeatureGates {
  enabled(name: FeatureGateName): boolean;
  /** The settings it was built from (unknown names included), for reports such as /configz. */
  readonly explicit: Readonly<Record<string, boolean>>;
}

/**
 * Effective value = the explicit setting; else, for an alpha (beta) gate, AllAlpha (AllBeta) when
 * that was set; else the default. Unknown names are ignored here (validation rejects them).
 */
export function effectiveFeatureGates(explicit: Readonly<Record<string, boolean>>): EffectiveFeatureGates {
  const values = new Map<FeatureGateName, boolean>();
  const allAlpha = explicit.AllAlpha;
  const allBeta = explicit.AllBeta;
  for (const [name, spec] of KNOWN_FEATURE_GATES) {
    let value = spec.default;
    if (spec.stage === "ALPHA" && allAlpha !== undefined && !isSpecial(name)) value = allAlpha;
    if (spec.stage === "BETA" && allBeta !== undefined && !isSpecial(name)) value = allBeta;
    const set = explicit[name];
    values.set(name, set ?? value);
  }
  return {
    enabled: (name) => values.get(name) ?? false,
    explicit: { ...explicit },
  };
}

/** Shorthand for `gates.enabled(name)`, for call sites that read better as a function. */
export function featureEnabled(gates: EffectiveFeatureGates, name: FeatureGateName): boolean {
  return gates.enabled(name);
}

/** Every gate at its v1.37 default (nothing set). */
export const DEFAULT_FEATURE_GATES: EffectiveFeatureGates = effectiveFeatureGates({});

/**
 * The gate list as upstream's --feature-gates help prints it: "Name=true|false (STAGE -
 * default=X)", sorted, without GA and deprecated gates.
 */
export function knownFeatureGateLines(): string[] {
  const lines: string[] = [];
  for (const [name, spec] of KNOWN_FEATURE_GATES) {
    if (spec.stage === "GA" || spec.stage === "DEPRECATED") continue;
    lines.push(`${name}=true|false (${spec.stage} - default=${spec.default})`);
  }
  return lines.sort();
}

/** The gates whose value changes what kube-proxy-ts does (the README's table is built from this). */
export const GATE_EFFECTS: readonly { readonly name: FeatureGateName; readonly effect: string }[] = [
  {
    name: "KubeProxyIPVS",
    effect: 'Deprecated, on by default. Off: mode "ipvs" is refused at start (exit 1).',
  },
  {
    name: "AllowServiceExternalIPs",
    effect: "On by default. Off: no Service's spec.externalIPs is programmed; the rest of each Service is.",
  },
  {
    name: "PreferSameTrafficDistribution",
    effect:
      "Locked on: endpoints hinted for this node (hints.forNodes, trafficDistribution PreferSameNode) are preferred over the zone's.",
  },
  {
    name: "NFTablesProxyMode",
    effect: 'Locked on: mode "nftables" runs, and starts in the other modes delete nftables mode\'s tables.',
  },
  { name: "ComponentStatusz", effect: "On by default: the metrics port serves /statusz. Off: 404." },
  { name: "ComponentFlagz", effect: "On by default: the metrics port serves /flagz. Off: 404." },
  {
    name: "LoggingAlphaOptions",
    effect: "Allows the --log-*-split-stream and --log-*-info-buffer-size options.",
  },
  { name: "LoggingBetaOptions", effect: "Allows --logging-format=json." },
  {
    name: "AllAlpha",
    effect: "Sets every alpha gate not set by name (1.37: needs GenericWorkload or AllBeta too).",
  },
  { name: "AllBeta", effect: "Sets every beta gate not set by name (including the beta gates above)." },
];
