// Defaults of upstream kube-proxy v1.31: v1alpha1's SetDefaults_KubeProxyConfiguration plus the
// Linux platform defaults applied after loading (empty mode -> iptables, empty detectLocalMode
// -> ClusterCIDR). resolveConfig turns a merged layer into the internal ProxyConfig.

import { appendPortIfNeeded, ipFamily } from "./net.ts";
import { deletePath, getPath, pathSegments } from "./paths.ts";
import type { ConfigLayer } from "./schema.ts";
import type { LocalMode, LogFormat, ProxyConfig, ProxyMode } from "./types.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

export const HEALTHZ_PORT = 10256;
export const METRICS_PORT = 10249;
export const DEFAULT_CONTENT_TYPE = "application/vnd.kubernetes.protobuf";

/**
 * Fields upstream treats as unset when they hold their zero value (they are not pointers in
 * v1alpha1), so e.g. `iptables.minSyncPeriod: 0s` in a file still ends up as 1s. Explicit flags
 * are applied after defaulting upstream, so this only applies to the file layer.
 */
export const ZERO_MEANS_DEFAULT: readonly string[] = [
  "bindAddress",
  "healthzBindAddress",
  "metricsBindAddress",
  "iptables.syncPeriod",
  "iptables.minSyncPeriod",
  "ipvs.syncPeriod",
  "nftables.syncPeriod",
  "nftables.minSyncPeriod",
  "configSyncPeriod",
  "clientConnection.contentType",
  "clientConnection.qps",
  "clientConnection.burst",
  "logging.format",
  "logging.flushFrequency",
];

/** Drops zero values that upstream would replace with defaults (see ZERO_MEANS_DEFAULT). */
export function dropZeroDefaults(layer: ConfigLayer): ConfigLayer {
  const copy = structuredClone(layer);
  for (const path of ZERO_MEANS_DEFAULT) {
    const value = getPath(copy, path);
    if (value === 0 || value === "") deletePath(copy, pathSegments(path));
  }
  return copy;
}

/** Health and metrics addresses follow the family of bindAddress, as upstream's defaults do. */
export function defaultServerAddresses(bindAddress: string): { healthz: string; metrics: string } {
  return ipFamily(bindAddress) === 4
    ? { healthz: `0.0.0.0:${HEALTHZ_PORT}`, metrics: `127.0.0.1:${METRICS_PORT}` }
    : { healthz: `[::]:${HEALTHZ_PORT}`, metrics: `[::1]:${METRICS_PORT}` };
}

function vmoduleString(items: readonly { filePattern?: string; verbosity?: number }[] | undefined): string {
  return (items ?? []).map((item) => `${item.filePattern ?? ""}=${item.verbosity ?? 0}`).join(",");
}

/** Unset: the default; "": disabled; a bare IP gets the standard port, as upstream. */
function serverAddress(given: string | undefined, fallback: string, port: number): string {
  if (given === undefined) return fallback;
  return given === "" ? "" : appendPortIfNeeded(given, port);
}

function splitList(text: string | undefined): string[] {
  return text ? text.split(",") : [];
}

/**
 * Fills every unset field with its default and resolves the Linux platform defaults. Values are
 * carried over unchecked: the caller validates the result and never hands out an invalid one,
 * which is why free-form strings may be asserted to the narrower mode types here.
 */
export function resolveConfig(layer: ConfigLayer): ProxyConfig {
  const bindAddress = layer.bindAddress ?? "0.0.0.0";
  const servers = defaultServerAddresses(bindAddress);
  const text = layer.logging?.options?.text;
  const json = layer.logging?.options?.json;
  return {
    featureGates: Object.fromEntries(
      Object.entries(layer.featureGates ?? {}).filter(
        (entry): entry is [string, boolean] => entry[1] !== undefined,
      ),
    ),
    clientConnection: {
      kubeconfig: layer.clientConnection?.kubeconfig ?? "",
      acceptContentTypes: layer.clientConnection?.acceptContentTypes ?? "",
      contentType: layer.clientConnection?.contentType ?? DEFAULT_CONTENT_TYPE,
      qps: layer.clientConnection?.qps ?? 5,
      burst: layer.clientConnection?.burst ?? 10,
    },
    logging: {
      format: (layer.logging?.format ?? "text") as LogFormat,
      flushFrequency: layer.logging?.flushFrequency ?? 5 * SECOND,
      verbosity: layer.logging?.verbosity ?? 0,
      vmodule: vmoduleString(layer.logging?.vmodule),
      options: {
        text: { splitStream: text?.splitStream ?? false, infoBufferSize: text?.infoBufferSize ?? "0" },
        json: { splitStream: json?.splitStream ?? false, infoBufferSize: json?.infoBufferSize ?? "0" },
      },
    },
    hostnameOverride: (layer.hostnameOverride ?? "").trim().toLowerCase(),
    bindAddress,
    healthzBindAddress: serverAddress(layer.healthzBindAddress, servers.healthz, HEALTHZ_PORT),
    metricsBindAddress: serverAddress(layer.metricsBindAddress, servers.metrics, METRICS_PORT),
    bindAddressHardFail: layer.bindAddressHardFail ?? false,
    enableProfiling: layer.enableProfiling ?? false,
    showHiddenMetricsForVersion: layer.showHiddenMetricsForVersion ?? "",
    mode: (layer.mode || "iptables") as ProxyMode,
    iptables: {
      masqueradeBit: layer.iptables?.masqueradeBit ?? 14,
      masqueradeAll: layer.iptables?.masqueradeAll ?? false,
      localhostNodePorts: layer.iptables?.localhostNodePorts ?? true,
      syncPeriod: layer.iptables?.syncPeriod ?? 30 * SECOND,
      minSyncPeriod: layer.iptables?.minSyncPeriod ?? 1 * SECOND,
    },
    ipvs: {
      syncPeriod: layer.ipvs?.syncPeriod ?? 30 * SECOND,
      // Upstream's v1alpha1 defaulting leaves the IPVS minimum at zero.
      minSyncPeriod: layer.ipvs?.minSyncPeriod ?? 0,
      scheduler: layer.ipvs?.scheduler ?? "",
      excludeCIDRs: [...(layer.ipvs?.excludeCIDRs ?? [])],
      strictARP: layer.ipvs?.strictARP ?? false,
      tcpTimeout: layer.ipvs?.tcpTimeout ?? 0,
      tcpFinTimeout: layer.ipvs?.tcpFinTimeout ?? 0,
      udpTimeout: layer.ipvs?.udpTimeout ?? 0,
    },
    nftables: {
      masqueradeBit: layer.nftables?.masqueradeBit ?? 14,
      masqueradeAll: layer.nftables?.masqueradeAll ?? false,
      syncPeriod: layer.nftables?.syncPeriod ?? 30 * SECOND,
      minSyncPeriod: layer.nftables?.minSyncPeriod ?? 1 * SECOND,
    },
    winkernel: {
      networkName: layer.winkernel?.networkName ?? "",
      sourceVip: layer.winkernel?.sourceVip ?? "",
      enableDSR: layer.winkernel?.enableDSR ?? false,
      rootHnsEndpointName: layer.winkernel?.rootHnsEndpointName ?? "",
      forwardHealthCheckVip: layer.winkernel?.forwardHealthCheckVip ?? false,
    },
    detectLocalMode: (layer.detectLocalMode || "ClusterCIDR") as LocalMode,
    detectLocal: {
      bridgeInterface: layer.detectLocal?.bridgeInterface ?? "",
      interfaceNamePrefix: layer.detectLocal?.interfaceNamePrefix ?? "",
    },
    clusterCIDRs: splitList(layer.clusterCIDR),
    nodePortAddresses: [...(layer.nodePortAddresses ?? [])],
    oomScoreAdj: layer.oomScoreAdj ?? -999,
    conntrack: {
      maxPerCore: layer.conntrack?.maxPerCore ?? 32 * 1024,
      min: layer.conntrack?.min ?? 128 * 1024,
      tcpEstablishedTimeout: layer.conntrack?.tcpEstablishedTimeout ?? 24 * HOUR,
      tcpCloseWaitTimeout: layer.conntrack?.tcpCloseWaitTimeout ?? 1 * HOUR,
      tcpBeLiberal: layer.conntrack?.tcpBeLiberal ?? false,
      udpTimeout: layer.conntrack?.udpTimeout ?? 0,
      udpStreamTimeout: layer.conntrack?.udpStreamTimeout ?? 0,
    },
    configSyncPeriod: layer.configSyncPeriod ?? 15 * MINUTE,
    portRange: layer.portRange ?? "",
    windowsRunAsService: layer.windowsRunAsService ?? false,
  };
}

/** The configuration kube-proxy runs with when given no file and no flags. */
export function defaultProxyConfig(): ProxyConfig {
  return resolveConfig({});
}
