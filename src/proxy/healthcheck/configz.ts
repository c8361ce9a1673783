// /configz as upstream serves it: component-base's configz marshals every registered config
// under its group name, and kube-proxy registers its *internal* KubeProxyConfiguration. That
// struct has no json tags, so keys are Go field names ("IPTables", "SyncPeriod"), durations are
// metav1.Duration strings ("30s") and only the embedded logging config uses camelCase.

import { formatGoDuration } from "../../config/duration.ts";
import type { LogStreamOptions, ProxyConfig } from "../../config/types.ts";
import { parseVmodule } from "../../log/logger.ts";

export const CONFIGZ_GROUP = "kubeproxy.config.k8s.io";

/** Go's json.Marshal escapes these even inside strings; do the same so bodies compare equal. */
export function goJSON(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

const dur = formatGoDuration;
/** A Go nil slice marshals as null; an unset list in the config is nil upstream. */
const list = (items: readonly string[]) => (items.length === 0 ? null : [...items]);

function sortedGates(gates: Record<string, boolean>): Record<string, boolean> {
  return Object.fromEntries(Object.entries(gates).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function stream(o: LogStreamOptions): Record<string, unknown> {
  // splitStream is omitempty; infoBufferSize is a Quantity, always printed.
  return o.splitStream
    ? { splitStream: true, infoBufferSize: o.infoBufferSize }
    : { infoBufferSize: o.infoBufferSize };
}

function logging(l: ProxyConfig["logging"]): Record<string, unknown> {
  const vmodule = [...parseVmodule(l.vmodule)].map(([filePattern, verbosity]) => ({
    filePattern,
    verbosity,
  }));
  return {
    format: l.format,
    flushFrequency: dur(l.flushFrequency),
    verbosity: l.verbosity,
    ...(vmodule.length > 0 ? { vmodule } : {}),
    options: { text: stream(l.options.text), json: stream(l.options.json) },
  };
}

/** The object to hand to startMetricsServer's `configz`, field order as Go marshals it. */
export function kubeProxyConfigz(c: ProxyConfig): Record<string, unknown> {
  return {
    FeatureGates: sortedGates(c.featureGates),
    ClientConnection: {
      Kubeconfig: c.clientConnection.kubeconfig,
      AcceptContentTypes: c.clientConnection.acceptContentTypes,
      ContentType: c.clientConnection.contentType,
      QPS: c.clientConnection.qps,
      Burst: c.clientConnection.burst,
    },
    Logging: logging(c.logging),
    HostnameOverride: c.hostnameOverride,
    BindAddress: c.bindAddress,
    HealthzBindAddress: c.healthzBindAddress,
    MetricsBindAddress: c.metricsBindAddress,
    BindAddressHardFail: c.bindAddressHardFail,
    EnableProfiling: c.enableProfiling,
    ShowHiddenMetricsForVersion: c.showHiddenMetricsForVersion,
    Mode: c.mode,
    IPTables: {
      MasqueradeBit: c.iptables.masqueradeBit,
      MasqueradeAll: c.iptables.masqueradeAll,
      LocalhostNodePorts: c.iptables.localhostNodePorts,
      SyncPeriod: dur(c.iptables.syncPeriod),
      MinSyncPeriod: dur(c.iptables.minSyncPeriod),
    },
    IPVS: {
      SyncPeriod: dur(c.ipvs.syncPeriod),
      MinSyncPeriod: dur(c.ipvs.minSyncPeriod),
      Scheduler: c.ipvs.scheduler,
      ExcludeCIDRs: list(c.ipvs.excludeCIDRs),
      StrictARP: c.ipvs.strictARP,
      TCPTimeout: dur(c.ipvs.tcpTimeout),
      TCPFinTimeout: dur(c.ipvs.tcpFinTimeout),
      UDPTimeout: dur(c.ipvs.udpTimeout),
    },
    Winkernel: {
      NetworkName: c.winkernel.networkName,
      SourceVip: c.winkernel.sourceVip,
      EnableDSR: c.winkernel.enableDSR,
      RootHnsEndpointName: c.winkernel.rootHnsEndpointName,
      ForwardHealthCheckVip: c.winkernel.forwardHealthCheckVip,
    },
    NFTables: {
      MasqueradeBit: c.nftables.masqueradeBit,
      MasqueradeAll: c.nftables.masqueradeAll,
      SyncPeriod: dur(c.nftables.syncPeriod),
      MinSyncPeriod: dur(c.nftables.minSyncPeriod),
    },
    DetectLocalMode: c.detectLocalMode,
    DetectLocal: {
      BridgeInterface: c.detectLocal.bridgeInterface,
      InterfaceNamePrefix: c.detectLocal.interfaceNamePrefix,
    },
    ClusterCIDR: c.clusterCIDRs.join(","),
    NodePortAddresses: list(c.nodePortAddresses),
    OOMScoreAdj: c.oomScoreAdj,
    Conntrack: {
      MaxPerCore: c.conntrack.maxPerCore,
      Min: c.conntrack.min,
      TCPEstablishedTimeout: dur(c.conntrack.tcpEstablishedTimeout),
      TCPCloseWaitTimeout: dur(c.conntrack.tcpCloseWaitTimeout),
      TCPBeLiberal: c.conntrack.tcpBeLiberal,
      UDPTimeout: dur(c.conntrack.udpTimeout),
      UDPStreamTimeout: dur(c.conntrack.udpStreamTimeout),
    },
    ConfigSyncPeriod: dur(c.configSyncPeriod),
    PortRange: c.portRange,
    WindowsRunAsService: c.windowsRunAsService,
  };
}
