// /configz as upstream (1.36+, kubernetes#136044) serves it: component-base's configz marshals
// each registered config under its group name, and kube-proxy registers its public v1alpha1
// KubeProxyConfiguration, kind and apiVersion included: the same document --write-config-to
// writes, as JSON.

import type { ProxyConfig } from "../../config/types.ts";
import { toConfigDocument } from "../../config/write.ts";

export const CONFIGZ_GROUP = "kubeproxy.config.k8s.io";

/** Go's json.Marshal escapes these even inside strings; do the same so bodies compare equal. */
export function goJSON(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** The object to hand to startMetricsServer's `configz`: TypeMeta first, as Go marshals it. */
export function kubeProxyConfigz(c: ProxyConfig): Record<string, unknown> {
  const { kind, apiVersion, ...rest } = toConfigDocument(c);
  return { kind, apiVersion, ...rest };
}
