// Semantic validation of a resolved configuration, after upstream's validation.go (v1.31) with
// a few deliberate differences noted inline. Every rule runs; all problems come back together.

import type { FamilyNumber } from "../util/net/family.ts";
import { splitHostPort } from "../util/net/host-port.ts";
import { formatGoDuration } from "./duration.ts";
import { type EffectiveFeatureGates, effectiveFeatureGates, featureGateProblems } from "./feature-gates.ts";
import { interfaceNameProblem } from "./interface-name.ts";
import { ipFamily, parseCIDR, parsePort } from "./net.ts";
import type { ConfigIssue, IssueOrigin, Millis, ProxyConfig } from "./types.ts";

export type OriginLookup = (path: string) => IssueOrigin;

/** Every scheduler upstream's --ipvs-scheduler accepts. */
export const IPVS_SCHEDULERS: readonly string[] = [
  "rr",
  "wrr",
  "lc",
  "wlc",
  "lblc",
  "lblcr",
  "sh",
  "dh",
  "sed",
  "nq",
  "mh",
];

export const LOCAL_MODES: readonly string[] = [
  "ClusterCIDR",
  "NodeCIDR",
  "BridgeInterface",
  "InterfaceNamePrefix",
];

/** kube-proxy v1.31 only lets hidden metrics of the previous minor release be shown. */
const PREVIOUS_MINOR = "1.30";

class IssueList {
  readonly items: ConfigIssue[] = [];
  constructor(private readonly originOf: OriginLookup) {}

  add(path: string, value: unknown, message: string): void {
    this.items.push({ path, value, message, ...this.originOf(path) });
  }

  duration(path: string, ms: Millis, message: string): void {
    this.add(path, formatGoDuration(ms), message);
  }
}

function checkSyncPeriods(out: IssueList, section: string, sync: Millis, min: Millis): void {
  if (sync <= 0) out.duration(`${section}.syncPeriod`, sync, "must be greater than 0");
  if (min < 0) out.duration(`${section}.minSyncPeriod`, min, "must be greater than or equal to 0");
  else if (sync > 0 && min > sync) {
    out.duration(
      `${section}.syncPeriod`,
      sync,
      `must be greater than or equal to ${section}.minSyncPeriod (${formatGoDuration(min)})`,
    );
  }
}

function checkNonNegative(out: IssueList, entries: readonly [string, Millis][]): void {
  for (const [path, ms] of entries) {
    if (ms < 0) out.duration(path, ms, "must be greater than or equal to 0");
  }
}

function checkMode(out: IssueList, mode: string, gates: EffectiveFeatureGates): void {
  if (mode === "iptables") return;
  // KubeProxyIPVS (1.37, deprecated, on by default) is what enables ipvs mode upstream.
  if (mode === "ipvs") {
    if (!gates.enabled("KubeProxyIPVS"))
      out.add(
        "mode",
        mode,
        'ipvs mode is deprecated and disabled: it needs the KubeProxyIPVS feature gate; use "nftables"',
      );
    return;
  }
  // Locked on since 1.33; the check stays so the mode follows the gate if upstream ever drops it.
  const nftables = gates.enabled("NFTablesProxyMode");
  if (mode === "nftables" && nftables) return;
  if (mode === "nftables") {
    out.add(
      "mode",
      mode,
      'must be "iptables", "ipvs" or empty (empty means iptables); "nftables" needs the NFTablesProxyMode feature gate',
    );
  } else if (mode === "kernelspace")
    out.add("mode", mode, "proxy mode kernelspace is only available on Windows");
  else
    out.add(
      "mode",
      mode,
      nftables
        ? 'must be "iptables", "ipvs", "nftables" or empty (empty means iptables)'
        : 'must be "iptables", "ipvs" or empty (empty means iptables)',
    );
}

function checkServerAddress(out: IssueList, path: string, address: string): void {
  if (address === "") return; // disabled
  const split = splitHostPort(address);
  if (!split.ok) {
    out.add(path, address, `must be IP:port (${split.error})`);
    return;
  }
  if (ipFamily(split.host) === undefined)
    out.add(path, address, `host ${JSON.stringify(split.host)} must be an IP`);
  if (parsePort(split.port) === undefined) {
    out.add(path, address, `port ${JSON.stringify(split.port)} must be a number in 1..65535`);
  }
}

function checkClusterCIDRs(out: IssueList, cidrs: readonly string[]): void {
  const joined = cidrs.join(",");
  if (cidrs.length > 2) {
    out.add("clusterCIDR", joined, "must be one CIDR, or two (one IPv4 and one IPv6) separated by a comma");
    return;
  }
  const families: FamilyNumber[] = [];
  for (const cidr of cidrs) {
    const parsed = parseCIDR(cidr);
    if (parsed) families.push(parsed.family);
    else out.add("clusterCIDR", cidr, "must be a valid CIDR (e.g. 192.0.2.0/24 or 2001:db8::/48)");
  }
  if (families.length === 2 && families[0] === families[1]) {
    out.add("clusterCIDR", joined, "two CIDRs must be one IPv4 and one IPv6 (a dual-stack pair)");
  }
}

function checkNodePortAddresses(out: IssueList, addresses: readonly string[]): void {
  addresses.forEach((entry, i) => {
    const path = `nodePortAddresses[${i}]`;
    if (entry === "primary") {
      if (addresses.length !== 1) out.add(path, entry, `"primary" cannot be combined with CIDRs`);
    } else if (!parseCIDR(entry)) {
      out.add(path, entry, 'must be a valid CIDR (e.g. 192.0.2.0/24) or the single keyword "primary"');
    }
  });
}

/** Upstream's port range syntax: "", "port", "low-high" or "base+offset", within 0..65535. */
export function portRangeError(text: string): string | undefined {
  const value = text.trim();
  if (value === "") return undefined;
  const match = /^(\d+)(?:([-+])(\d+))?$/.exec(value);
  if (!match) return "must be a port range such as 30000-32767, 8080 or 8080+10";
  const low = Number(match[1]);
  const other = match[3] === undefined ? low : Number(match[3]);
  const high = match[2] === "+" ? low + other : other;
  if (low > 65535 || high > 65535) return "ports must not exceed 65535";
  if (high < low) return "the end port must not be lower than the start port";
  return undefined;
}

/**
 * As upstream, the interface name of the selected mode must be set; beyond upstream, it must be
 * a name Linux and the rule languages accept (interfaceNameProblem), since it goes into rules.
 * A name the selected mode does not use is not checked, as upstream does not.
 */
function checkDetectLocal(out: IssueList, config: ProxyConfig): void {
  const mode = config.detectLocalMode;
  if (!LOCAL_MODES.includes(mode)) {
    out.add("detectLocalMode", mode, `must be one of ${LOCAL_MODES.join(", ")} or empty`);
    return;
  }
  const field =
    mode === "BridgeInterface"
      ? { path: "detectLocal.bridgeInterface", value: config.detectLocal.bridgeInterface, prefix: false }
      : mode === "InterfaceNamePrefix"
        ? {
            path: "detectLocal.interfaceNamePrefix",
            value: config.detectLocal.interfaceNamePrefix,
            prefix: true,
          }
        : undefined;
  if (!field) return;
  if (field.value === "") out.add(field.path, "", `must be set when detectLocalMode is ${mode}`);
  else {
    const problem = interfaceNameProblem(field.value, field.prefix);
    if (problem) out.add(field.path, field.value, problem);
  }
}

function checkLogging(out: IssueList, config: ProxyConfig, gates: EffectiveFeatureGates): void {
  const { logging } = config;
  if (logging.format !== "text" && logging.format !== "json") {
    out.add("logging.format", logging.format, 'must be "text" or "json"');
  } else if (logging.format === "json" && !gates.enabled("LoggingBetaOptions")) {
    // Upstream registers the json format behind this beta gate.
    out.add("logging.format", logging.format, "requires the LoggingBetaOptions feature gate");
  }
  if (logging.flushFrequency <= 0)
    out.duration("logging.flushFrequency", logging.flushFrequency, "must be greater than 0");
  if (logging.verbosity > 2147483647)
    out.add("logging.verbosity", logging.verbosity, "must be at most 2147483647");
  if (logging.vmodule !== "") {
    if (logging.format !== "text")
      out.add("logging.vmodule", logging.vmodule, "only works with the text log format");
    for (const entry of logging.vmodule.split(",")) {
      const eq = entry.lastIndexOf("=");
      const pattern = eq < 0 ? entry : entry.slice(0, eq);
      if (eq < 0 || pattern === "" || pattern.includes("=") || !/^\d+$/.test(entry.slice(eq + 1))) {
        out.add(
          "logging.vmodule",
          logging.vmodule,
          `entry ${JSON.stringify(entry)} must have the form pattern=N`,
        );
      }
    }
  }
  // Upstream gates these alpha options behind a feature gate that is off by default.
  if (!gates.enabled("LoggingAlphaOptions")) {
    for (const stream of ["text", "json"] as const) {
      const opts = logging.options[stream];
      if (opts.splitStream) {
        out.add(
          `logging.options.${stream}.splitStream`,
          true,
          "requires the LoggingAlphaOptions feature gate",
        );
      }
      if (!/^[+-]?0*(\.0*)?([eE][+-]?\d+|[KMGTPE]i|[kMGTPE]|m|u|n)?$/.test(opts.infoBufferSize)) {
        out.add(
          `logging.options.${stream}.infoBufferSize`,
          opts.infoBufferSize,
          "requires the LoggingAlphaOptions feature gate",
        );
      }
    }
  }
}

/** Returns every problem with `config`; an empty list means it is safe to run with. */
export function validateConfig(config: ProxyConfig, originOf: OriginLookup = () => ({})): ConfigIssue[] {
  const out = new IssueList(originOf);
  const gates = effectiveFeatureGates(config.featureGates);

  for (const problem of featureGateProblems(config.featureGates)) {
    out.add(`featureGates.${problem.name}`, problem.value, problem.message);
  }
  checkMode(out, config.mode, gates);

  for (const [path, bit] of [
    ["iptables.masqueradeBit", config.iptables.masqueradeBit],
    ["nftables.masqueradeBit", config.nftables.masqueradeBit],
  ] as const) {
    if (bit < 0 || bit > 31) out.add(path, bit, "must be within [0, 31]");
  }

  // Upstream checks only the selected mode's periods; checking both catches a bad value before
  // someone switches modes, and costs nothing since unset values are defaulted.
  checkSyncPeriods(out, "iptables", config.iptables.syncPeriod, config.iptables.minSyncPeriod);
  checkSyncPeriods(out, "ipvs", config.ipvs.syncPeriod, config.ipvs.minSyncPeriod);

  checkNonNegative(out, [
    ["ipvs.tcpTimeout", config.ipvs.tcpTimeout],
    ["ipvs.tcpFinTimeout", config.ipvs.tcpFinTimeout],
    ["ipvs.udpTimeout", config.ipvs.udpTimeout],
    ["conntrack.tcpEstablishedTimeout", config.conntrack.tcpEstablishedTimeout],
    ["conntrack.tcpCloseWaitTimeout", config.conntrack.tcpCloseWaitTimeout],
    ["conntrack.udpTimeout", config.conntrack.udpTimeout],
    ["conntrack.udpStreamTimeout", config.conntrack.udpStreamTimeout],
  ]);
  if (config.ipvs.scheduler !== "" && !IPVS_SCHEDULERS.includes(config.ipvs.scheduler)) {
    out.add(
      "ipvs.scheduler",
      config.ipvs.scheduler,
      `must be one of ${IPVS_SCHEDULERS.join(", ")} or empty (rr)`,
    );
  }
  config.ipvs.excludeCIDRs.forEach((cidr, i) => {
    if (!parseCIDR(cidr))
      out.add(`ipvs.excludeCIDRs[${i}]`, cidr, "must be a valid CIDR (e.g. 198.51.100.0/24)");
  });

  for (const [path, value] of [
    ["conntrack.maxPerCore", config.conntrack.maxPerCore],
    ["conntrack.min", config.conntrack.min],
  ] as const) {
    if (value < 0) out.add(path, value, "must be greater than or equal to 0");
  }

  if (config.clientConnection.burst < 0) {
    out.add("clientConnection.burst", config.clientConnection.burst, "must be greater than or equal to 0");
  }
  if (!Number.isFinite(config.clientConnection.qps)) {
    out.add("clientConnection.qps", config.clientConnection.qps, "must be a finite number");
  }
  if (config.oomScoreAdj < -1000 || config.oomScoreAdj > 1000) {
    out.add("oomScoreAdj", config.oomScoreAdj, "must be within [-1000, 1000]");
  }
  if (config.configSyncPeriod <= 0)
    out.duration("configSyncPeriod", config.configSyncPeriod, "must be greater than 0");

  if (ipFamily(config.bindAddress) === undefined) {
    out.add("bindAddress", config.bindAddress, "must be an IP address");
  }
  checkServerAddress(out, "healthzBindAddress", config.healthzBindAddress);
  checkServerAddress(out, "metricsBindAddress", config.metricsBindAddress);

  checkClusterCIDRs(out, config.clusterCIDRs);
  checkNodePortAddresses(out, config.nodePortAddresses);

  const portRange = portRangeError(config.portRange);
  if (portRange) out.add("portRange", config.portRange, portRange);

  const hidden = config.showHiddenMetricsForVersion;
  if (hidden !== "" && hidden !== PREVIOUS_MINOR) {
    out.add(
      "showHiddenMetricsForVersion",
      hidden,
      `must be empty or "${PREVIOUS_MINOR}" (the previous minor release)`,
    );
  }

  checkDetectLocal(out, config);

  checkLogging(out, config, gates);
  return out.items;
}
