// The KubeProxyConfiguration file format (kubeproxy.config.k8s.io/v1alpha1) as a zod schema.
// Every object is strict because upstream decodes strictly: a misspelt field is an error, not a
// silently ignored setting. Every field is optional (null counts as absent) since defaulting
// happens later; durations are Go duration strings and come out as milliseconds.

import { z } from "zod";
import { parseGoDuration } from "./duration.ts";

export const API_VERSION = "kubeproxy.config.k8s.io/v1alpha1";
export const KIND = "KubeProxyConfiguration";

/** Optional field: absent and null both decode to undefined. */
const opt = <T extends z.ZodType>(schema: T) =>
  schema.nullish().transform((value) => (value === null ? undefined : value));

/** A Go duration string ("30s") decoded to milliseconds; bare numbers are rejected, as upstream. */
const duration = z.string({ error: 'must be a duration string such as "30s"' }).transform((text, ctx) => {
  const parsed = parseGoDuration(text);
  if (parsed.ok) return parsed.ms;
  ctx.issues.push({ code: "custom", message: parsed.error, input: text });
  return z.NEVER;
});

/** component-base's TimeOrMetaDuration: a duration string, or an integer count of nanoseconds. */
const timeOrDuration = z.union([duration, z.int().transform((ns) => ns / 1e6)], {
  error: 'must be a duration string such as "5s" or an integer number of nanoseconds',
});

/** A Kubernetes resource quantity ("0", "512", "64Ki", "1M"). */
const quantity = z.union([
  z
    .string()
    .regex(
      /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[KMGTPE]i|[kMGTPE]|m|u|n)?$/,
      "must be a resource quantity such as 64Ki",
    ),
  z.number().transform((n) => String(n)),
]);

const str = opt(z.string());
const bool = opt(z.boolean());
const int32 = opt(z.int32());
const dur = opt(duration);
const strings = opt(z.array(z.string()));

const streamOptions = z.strictObject({
  splitStream: bool,
  infoBufferSize: opt(quantity),
});

const vmoduleItem = z.strictObject({
  filePattern: str,
  verbosity: opt(z.uint32()),
});

export const configFileSchema = z.strictObject({
  // Checked separately so that a wrong value is reported alongside every other problem.
  apiVersion: str,
  kind: str,
  featureGates: opt(z.record(z.string(), z.boolean())),
  clientConnection: opt(
    z.strictObject({
      kubeconfig: str,
      acceptContentTypes: str,
      contentType: str,
      qps: opt(z.number()),
      burst: int32,
    }),
  ),
  logging: opt(
    z.strictObject({
      format: str,
      flushFrequency: opt(timeOrDuration),
      verbosity: opt(z.uint32()),
      vmodule: opt(z.array(vmoduleItem)),
      options: opt(z.strictObject({ text: opt(streamOptions), json: opt(streamOptions) })),
    }),
  ),
  hostnameOverride: str,
  bindAddress: str,
  healthzBindAddress: str,
  metricsBindAddress: str,
  bindAddressHardFail: bool,
  enableProfiling: bool,
  showHiddenMetricsForVersion: str,
  mode: str,
  iptables: opt(
    z.strictObject({
      masqueradeBit: int32,
      masqueradeAll: bool,
      localhostNodePorts: bool,
      syncPeriod: dur,
      minSyncPeriod: dur,
    }),
  ),
  ipvs: opt(
    z.strictObject({
      syncPeriod: dur,
      minSyncPeriod: dur,
      scheduler: str,
      excludeCIDRs: strings,
      strictARP: bool,
      tcpTimeout: dur,
      tcpFinTimeout: dur,
      udpTimeout: dur,
    }),
  ),
  nftables: opt(
    z.strictObject({
      masqueradeBit: int32,
      masqueradeAll: bool,
      syncPeriod: dur,
      minSyncPeriod: dur,
    }),
  ),
  winkernel: opt(
    z.strictObject({
      networkName: str,
      sourceVip: str,
      enableDSR: bool,
      rootHnsEndpointName: str,
      forwardHealthCheckVip: bool,
    }),
  ),
  detectLocalMode: str,
  detectLocal: opt(z.strictObject({ bridgeInterface: str, interfaceNamePrefix: str })),
  clusterCIDR: str,
  nodePortAddresses: strings,
  oomScoreAdj: int32,
  conntrack: opt(
    z.strictObject({
      maxPerCore: int32,
      min: int32,
      tcpEstablishedTimeout: dur,
      tcpCloseWaitTimeout: dur,
      tcpBeLiberal: bool,
      udpTimeout: dur,
      udpStreamTimeout: dur,
    }),
  ),
  configSyncPeriod: dur,
  portRange: str,
  windowsRunAsService: bool,
});

/** A decoded config file: v1alpha1 field names, durations in milliseconds, unset fields undefined. */
export type ConfigFileDocument = z.output<typeof configFileSchema>;

type DeepPartial<T> = T extends readonly unknown[]
  ? T
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** One source of settings (the file, or the explicit flags) before defaults are applied. */
export type ConfigLayer = DeepPartial<Omit<ConfigFileDocument, "apiVersion" | "kind">>;

/** v1alpha1 paths whose values are durations: shown as Go strings in issues and overrides. */
export const DURATION_PATHS: ReadonlySet<string> = new Set([
  "logging.flushFrequency",
  "iptables.syncPeriod",
  "iptables.minSyncPeriod",
  "ipvs.syncPeriod",
  "ipvs.minSyncPeriod",
  "ipvs.tcpTimeout",
  "ipvs.tcpFinTimeout",
  "ipvs.udpTimeout",
  "nftables.syncPeriod",
  "nftables.minSyncPeriod",
  "conntrack.tcpEstablishedTimeout",
  "conntrack.tcpCloseWaitTimeout",
  "conntrack.udpTimeout",
  "conntrack.udpStreamTimeout",
  "configSyncPeriod",
]);
