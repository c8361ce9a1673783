// Upstream kube-proxy v1.31's command line on Linux, and the flags only kube-proxy-ts has; one
// list for the flag-table test and the --help test of the binary. Looked up in cmd/kube-proxy/app:
// AddFlags (options.go; addOSFlags adds nothing on Linux), logsapi.AddFlags (-v, --vmodule,
// --log-flush-frequency, --logging-format, --log-text-*, --log-json-*), --version (verflag) and
// cobra's -h/--help. klog's file flags were removed in 1.26 (KEP-2845).

/** What upstream's --help prints (pflag normalises "_" to "-"). */
export const UPSTREAM_V1_31_HELP_FLAGS: readonly string[] = [
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

/** Deprecated flags upstream still accepts but pflag hides from --help. */
export const UPSTREAM_V1_31_HIDDEN_FLAGS: readonly string[] = [
  "healthz-port",
  "metrics-port",
  "proxy-port-range",
];

export const KUBE_PROXY_TS_ONLY_FLAGS: readonly string[] = [
  "dry-run",
  "dump-state",
  "iptables-backend",
  "output",
  "state",
];
