// kubernetes_build_info, the constant-1 gauge upstream's /metrics carries (component-base
// metrics/prometheus/version), with its label set. The values describe this build of
// kube-proxy-ts, not a Kubernetes release: major/minor/git_version are kube-proxy-ts's own
// version; go_version names the JavaScript runtime (there is no Go here) and compiler the tool
// that built the binary (bun); platform is GOOS/GOARCH-style ("linux/amd64").

import { Gauge, type Registry } from "prom-client";
import type { VersionInfo } from "../../version.ts";
import { beta } from "./metrics.ts";

const LABELS = [
  "major",
  "minor",
  "git_version",
  "git_commit",
  "git_tree_state",
  "build_date",
  "go_version",
  "compiler",
  "platform",
] as const;

export type BuildInfoLabels = Record<(typeof LABELS)[number], string>;

/** Node's process.arch names -> Go's GOARCH names. */
const GOARCH: Readonly<Record<string, string>> = {
  x64: "amd64",
  ia32: "386",
  arm64: "arm64",
  arm: "arm",
  ppc64: "ppc64le",
  s390x: "s390x",
  riscv64: "riscv64",
  loong64: "loong64",
};

export function buildInfoLabels(
  v: VersionInfo,
  platform = process.platform,
  arch = process.arch,
): BuildInfoLabels {
  const m = /^v?(\d+)\.(\d+)/.exec(v.version);
  const dirty = v.gitCommit.endsWith("-dirty");
  const known = v.gitCommit !== "unknown" && v.gitCommit !== "";
  return {
    major: m?.[1] ?? "",
    minor: m?.[2] ?? "",
    git_version: v.version,
    git_commit: known ? v.gitCommit.replace(/-dirty$/, "") : "",
    git_tree_state: known ? (dirty ? "dirty" : "clean") : "",
    build_date: v.buildDate === "unknown" ? "" : v.buildDate,
    go_version: v.runtime,
    compiler: v.runtime.split(" ")[0] ?? "",
    platform: `${platform}/${GOARCH[arch] ?? arch}`,
  };
}

export function registerBuildInfo(registry: Registry, v: VersionInfo): void {
  const g = new Gauge({
    name: "kubernetes_build_info",
    help: beta(
      "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
    ),
    labelNames: LABELS,
    registers: [registry],
  });
  g.set(buildInfoLabels(v), 1);
}
