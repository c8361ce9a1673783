// `dist/kube-proxy-ts --help` lists exactly the flags upstream kube-proxy v1.31 prints on Linux,
// plus the five kube-proxy-ts ones. Upstream's list, looked up in cmd/kube-proxy/app: AddFlags
// (options.go; addOSFlags adds nothing on Linux), logsapi.AddFlags (-v, --vmodule,
// --log-flush-frequency, --logging-format, --log-text-*, --log-json-*), --version (verflag) and
// cobra's -h/--help. The deprecated --healthz-port, --metrics-port and --proxy-port-range are
// hidden by pflag, and klog's file flags were removed in 1.26 (KEP-2845).
import { describe, expect, test } from "bun:test";
import { runBinary } from "../support/binary.ts";

const UPSTREAM_V1_31_HELP = [
  "bind-address",
  "bind-address-hard-fail",
  "cleanup",
  "cluster-cidr",
  "config",
  "config-sync-period",
  "conntrack-max-per-core",
  "conntrack-min",
  "conntrack-tcp-be-liberal",
  "conntrack-tcp-timeout-close-wait",
  "conntrack-tcp-timeout-established",
  "conntrack-udp-timeout",
  "conntrack-udp-timeout-stream",
  "detect-local-mode",
  "feature-gates",
  "healthz-bind-address",
  "help",
  "hostname-override",
  "init-only",
  "iptables-localhost-nodeports",
  "iptables-masquerade-bit",
  "iptables-min-sync-period",
  "iptables-sync-period",
  "ipvs-exclude-cidrs",
  "ipvs-min-sync-period",
  "ipvs-scheduler",
  "ipvs-strict-arp",
  "ipvs-sync-period",
  "ipvs-tcp-timeout",
  "ipvs-tcpfin-timeout",
  "ipvs-udp-timeout",
  "kube-api-burst",
  "kube-api-content-type",
  "kube-api-qps",
  "kubeconfig",
  "log-flush-frequency",
  "log-json-info-buffer-size",
  "log-json-split-stream",
  "log-text-info-buffer-size",
  "log-text-split-stream",
  "logging-format",
  "masquerade-all",
  "master",
  "metrics-bind-address",
  "nodeport-addresses",
  "oom-score-adj",
  "pod-bridge-interface",
  "pod-interface-name-prefix",
  "profiling",
  "proxy-mode",
  "show-hidden-metrics-for-version",
  "v",
  "version",
  "vmodule",
  "write-config-to",
];
const KUBE_PROXY_TS_ONLY = ["dry-run", "dump-state", "iptables-backend", "output", "state"];

/** Every long flag name --help prints at the start of a flag line ("  -v, --v int", "      --config string"). */
function helpFlags(help: string): string[] {
  const names: string[] = [];
  for (const line of help.split("\n")) {
    const m = /^ {2}(?:-\w, | {4})--([a-z0-9][a-z0-9-]*)/.exec(line);
    if (m?.[1]) names.push(m[1]);
    // A second name on the same line would be an alias that upstream does not have.
    if (m && /^ {2}(?:-\w, | {4})--[a-z0-9-]+, --/.test(line)) names.push(`alias on: ${line.trim()}`);
  }
  return names.sort();
}

describe("dist/kube-proxy-ts --help", () => {
  test("lists upstream v1.31's flags and the five kube-proxy-ts ones, nothing else", () => {
    const r = runBinary(["--help"]);
    expect(r.code).toBe(0);
    expect(helpFlags(r.stdout)).toEqual([...UPSTREAM_V1_31_HELP, ...KUBE_PROXY_TS_ONLY].sort());
  });

  test("lists the feature gates it knows, the way upstream's --feature-gates help does", () => {
    const r = runBinary(["--help"]);
    expect(r.stdout).toContain("TopologyAwareHints=true|false (BETA - default=true)");
    expect(r.stdout).toContain("AllBeta=true|false (BETA - default=false)");
  });
});
