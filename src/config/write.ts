// --write-config-to: the effective configuration as a v1alpha1 KubeProxyConfiguration file.
// Keys are sorted and durations printed as Go does ("15m0s"), matching upstream's output, and
// the text loads back to the same ProxyConfig except for the cases listed by lossyFields.

import { stringify } from "yaml";
import { ZERO_MEANS_DEFAULT } from "./defaults.ts";
import { formatGoDuration } from "./duration.ts";
import { getPath } from "./paths.ts";
import { API_VERSION, KIND } from "./schema.ts";
import type { LogStreamOptions, ProxyConfig } from "./types.ts";

type Doc = { [key: string]: unknown };

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries.map(([k, v]) => [k, sortKeys(v)]));
}

function vmoduleItems(vmodule: string): { filePattern: string; verbosity: number }[] {
  if (vmodule === "") return [];
  return vmodule.split(",").map((entry) => {
    const eq = entry.lastIndexOf("=");
    return { filePattern: entry.slice(0, eq), verbosity: Number(entry.slice(eq + 1)) };
  });
}

/** Go prints empty lists as null; so do we, so the output diffs cleanly against upstream's. */
function list(items: readonly string[]): string[] | null {
  return items.length === 0 ? null : [...items];
}

function stream(opts: LogStreamOptions): Doc {
  return opts.splitStream
    ? { infoBufferSize: opts.infoBufferSize, splitStream: true }
    : { infoBufferSize: opts.infoBufferSize };
}

/** The v1alpha1 document for `c` as a plain object (durations as Go strings). */
export function toConfigDocument(c: ProxyConfig): Doc {
  const d = formatGoDuration;
  const vmodule = vmoduleItems(c.logging.vmodule);
  const doc: Doc = {
    apiVersion: API_VERSION,
    kind: KIND,
    bindAddress: c.bindAddress,
    bindAddressHardFail: c.bindAddressHardFail,
    clientConnection: { ...c.clientConnection },
    clusterCIDR: c.clusterCIDRs.join(","),
    configSyncPeriod: d(c.configSyncPeriod),
    conntrack: {
      ...c.conntrack,
      tcpEstablishedTimeout: d(c.conntrack.tcpEstablishedTimeout),
      tcpCloseWaitTimeout: d(c.conntrack.tcpCloseWaitTimeout),
      udpTimeout: d(c.conntrack.udpTimeout),
      udpStreamTimeout: d(c.conntrack.udpStreamTimeout),
    },
    detectLocal: { ...c.detectLocal },
    detectLocalMode: c.detectLocalMode,
    enableProfiling: c.enableProfiling,
    healthzBindAddress: c.healthzBindAddress,
    hostnameOverride: c.hostnameOverride,
    iptables: {
      ...c.iptables,
      syncPeriod: d(c.iptables.syncPeriod),
      minSyncPeriod: d(c.iptables.minSyncPeriod),
    },
    ipvs: {
      ...c.ipvs,
      excludeCIDRs: list(c.ipvs.excludeCIDRs),
      syncPeriod: d(c.ipvs.syncPeriod),
      minSyncPeriod: d(c.ipvs.minSyncPeriod),
      tcpTimeout: d(c.ipvs.tcpTimeout),
      tcpFinTimeout: d(c.ipvs.tcpFinTimeout),
      udpTimeout: d(c.ipvs.udpTimeout),
    },
    logging: {
      flushFrequency: d(c.logging.flushFrequency),
      format: c.logging.format,
      options: { json: stream(c.logging.options.json), text: stream(c.logging.options.text) },
      verbosity: c.logging.verbosity,
      ...(vmodule.length > 0 ? { vmodule } : {}),
    },
    metricsBindAddress: c.metricsBindAddress,
    mode: c.mode,
    nftables: {
      ...c.nftables,
      syncPeriod: d(c.nftables.syncPeriod),
      minSyncPeriod: d(c.nftables.minSyncPeriod),
    },
    nodePortAddresses: list(c.nodePortAddresses),
    oomScoreAdj: c.oomScoreAdj,
    portRange: c.portRange,
    showHiddenMetricsForVersion: c.showHiddenMetricsForVersion,
    winkernel: { ...c.winkernel },
  };
  // Upstream omits these two when empty.
  if (Object.keys(c.featureGates).length > 0) doc.featureGates = { ...c.featureGates };
  if (c.windowsRunAsService) doc.windowsRunAsService = true;
  return sortKeys(doc) as Doc;
}

/**
 * Settings that v1alpha1 cannot carry: a zero in these fields means "use the default" when the
 * file is read back (e.g. a disabled health server, or iptables.minSyncPeriod 0 set by flag).
 */
export function lossyFields(c: ProxyConfig): string[] {
  const doc = toConfigDocument(c);
  return ZERO_MEANS_DEFAULT.filter((path) => {
    const value = getPath(doc, path);
    return value === "" || value === 0 || value === "0s";
  });
}

/** The effective configuration as YAML text for --write-config-to. */
export function serializeConfig(c: ProxyConfig): string {
  // YAML 1.1 quoting keeps strings like "on" or "yes" strings for go-yaml v2 readers as well.
  return stringify(toConfigDocument(c), { version: "1.1", lineWidth: 0 });
}
