import { runtimeName } from "./runtime.ts";

// Filled in by scripts/build through `bun build --define`; running from source leaves them unset.
declare const KPTS_VERSION: string | undefined;
declare const KPTS_GIT_COMMIT: string | undefined;
declare const KPTS_BUILD_DATE: string | undefined;

/** Upstream kube-proxy release whose flags, config and rules we match. */
export const UPSTREAM_COMPAT = "v1.37";

export interface VersionInfo {
  version: string;
  gitCommit: string;
  buildDate: string;
  runtime: string;
  upstreamCompat: string;
}

export function versionInfo(): VersionInfo {
  return {
    version: typeof KPTS_VERSION === "string" ? KPTS_VERSION : "v0.1.0-dev",
    gitCommit: typeof KPTS_GIT_COMMIT === "string" ? KPTS_GIT_COMMIT : "unknown",
    buildDate: typeof KPTS_BUILD_DATE === "string" ? KPTS_BUILD_DATE : "unknown",
    runtime: runtimeName(),
    upstreamCompat: UPSTREAM_COMPAT,
  };
}

export function formatVersion(v: VersionInfo = versionInfo()): string {
  return (
    `kube-proxy-ts ${v.version} (git commit ${v.gitCommit}, built ${v.buildDate}, runtime ${v.runtime}, ` +
    `compatible with kube-proxy ${v.upstreamCompat})`
  );
}
