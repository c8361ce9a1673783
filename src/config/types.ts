// The internal, fully resolved kube-proxy configuration. It mirrors upstream's
// KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1) field for field, so a path such as
// "iptables.syncPeriod" names the same setting in the file, in this type and in error reports;
// the differences are that durations are plain milliseconds and that defaults are filled in.

/** A duration in milliseconds (Go duration strings such as "30s" are converted on input). */
export type Millis = number;

/** Proxy modes upstream accepts syntactically; validation rejects the ones we cannot run. */
export type ProxyMode = "iptables" | "ipvs" | "nftables" | "kernelspace";

/** How kube-proxy decides that traffic originates from a local Pod. */
export type LocalMode = "ClusterCIDR" | "NodeCIDR" | "BridgeInterface" | "InterfaceNamePrefix";

export type LogFormat = "text" | "json";

export interface ClientConnectionConfig {
  kubeconfig: string;
  acceptContentTypes: string;
  contentType: string;
  qps: number;
  burst: number;
}

export interface LogStreamOptions {
  splitStream: boolean;
  /** A Kubernetes resource quantity ("0", "64Ki"); only meaningful with splitStream. */
  infoBufferSize: string;
}

export interface LoggingConfig {
  format: LogFormat;
  flushFrequency: Millis;
  verbosity: number;
  /** klog's "pattern=N,pattern=N" form, ready for the logger (empty string: none). */
  vmodule: string;
  options: { text: LogStreamOptions; json: LogStreamOptions };
}

export interface IPTablesConfig {
  masqueradeBit: number;
  masqueradeAll: boolean;
  localhostNodePorts: boolean;
  syncPeriod: Millis;
  minSyncPeriod: Millis;
}

export interface IPVSConfig {
  syncPeriod: Millis;
  minSyncPeriod: Millis;
  /** "" means the kernel default scheduler (rr). */
  scheduler: string;
  excludeCIDRs: string[];
  strictARP: boolean;
  /** 0 leaves the kernel's timeout as it is. */
  tcpTimeout: Millis;
  tcpFinTimeout: Millis;
  udpTimeout: Millis;
}

export interface NFTablesConfig {
  masqueradeBit: number;
  masqueradeAll: boolean;
  syncPeriod: Millis;
  minSyncPeriod: Millis;
}

/** Windows-only settings: accepted so upstream files load, never used on Linux. */
export interface WinkernelConfig {
  networkName: string;
  sourceVip: string;
  enableDSR: boolean;
  rootHnsEndpointName: string;
  forwardHealthCheckVip: boolean;
}

export interface ConntrackConfig {
  /** 0 leaves nf_conntrack_max as it is (and ignores min). */
  maxPerCore: number;
  min: number;
  tcpEstablishedTimeout: Millis;
  tcpCloseWaitTimeout: Millis;
  tcpBeLiberal: boolean;
  udpTimeout: Millis;
  udpStreamTimeout: Millis;
}

export interface ProxyConfig {
  featureGates: Record<string, boolean>;
  clientConnection: ClientConnectionConfig;
  logging: LoggingConfig;
  /** Trimmed and lower-cased, as upstream does before using it as the node name. */
  hostnameOverride: string;
  bindAddress: string;
  /** "ip:port"; "" disables the health check server. */
  healthzBindAddress: string;
  /** "ip:port"; "" disables the metrics server. */
  metricsBindAddress: string;
  bindAddressHardFail: boolean;
  enableProfiling: boolean;
  showHiddenMetricsForVersion: string;
  /** Resolved: an empty mode in the file becomes "iptables", as upstream does on Linux. */
  mode: ProxyMode;
  iptables: IPTablesConfig;
  ipvs: IPVSConfig;
  nftables: NFTablesConfig;
  winkernel: WinkernelConfig;
  /** Resolved: empty becomes "ClusterCIDR". */
  detectLocalMode: LocalMode;
  detectLocal: { bridgeInterface: string; interfaceNamePrefix: string };
  /** The file's comma-separated clusterCIDR, split: at most one CIDR per IP family. */
  clusterCIDRs: string[];
  /** CIDRs, or the single keyword "primary"; empty means every local address. */
  nodePortAddresses: string[];
  oomScoreAdj: number;
  conntrack: ConntrackConfig;
  configSyncPeriod: Millis;
  /** Unused since the userspace proxy was removed; kept so old files still load. */
  portRange: string;
  windowsRunAsService: boolean;
}

/** Where a problem came from, so an operator knows what to edit. */
export interface IssueOrigin {
  /** The command-line flag that supplied the value, e.g. "--iptables-masquerade-bit". */
  flag?: string;
  /** The config file that supplied the value (or failed to parse). */
  file?: string;
  /** 1-based line in `file`, when known. */
  line?: number;
}

/** One configuration problem. Every problem is reported; loading never stops at the first. */
export interface ConfigIssue extends IssueOrigin {
  /** Dotted v1alpha1 path such as "iptables.masqueradeBit" or "ipvs.excludeCIDRs[1]"; "" if none. */
  path: string;
  /** The offending value as the user wrote it (durations as Go strings); undefined if absent. */
  value: unknown;
  message: string;
}

/** A JSON-like value as read from a file or flag (durations already shown as Go strings). */
export type PlainValue =
  | string
  | number
  | boolean
  | null
  | readonly unknown[]
  | { readonly [key: string]: unknown };

/** An explicitly given flag that replaced a value from the --config file. */
export interface Override {
  flag: string;
  path: string;
  fileValue: PlainValue;
  flagValue: PlainValue;
}
