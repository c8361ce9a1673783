// kubernetes_feature_enabled (component-base, BETA): one series per known feature gate with its
// stage ("" for GA) and 1 when enabled for this run, 0 when not. Upstream records it once at
// start, after the configuration is validated; so does a real run here.

import { Gauge, type Registry } from "prom-client";
import { type EffectiveFeatureGates, KNOWN_FEATURE_GATES } from "../../config/feature-gates.ts";
import { beta } from "./metrics.ts";

export function registerFeatureEnabled(registry: Registry, gates: EffectiveFeatureGates): void {
  const gauge = new Gauge({
    name: "kubernetes_feature_enabled",
    help: beta("This metric records the data about the stage and enablement of a k8s feature."),
    labelNames: ["name", "stage"],
    registers: [registry],
  });
  for (const [name, spec] of KNOWN_FEATURE_GATES) {
    // The AllAlpha/AllBeta switches are not gates of their own upstream.
    if (name === "AllAlpha" || name === "AllBeta") continue;
    gauge.set({ name, stage: spec.stage === "GA" ? "" : spec.stage }, gates.enabled(name) ? 1 : 0);
  }
}
