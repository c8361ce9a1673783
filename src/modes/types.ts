// What every mode is given to build itself for a run (real or dry). Modes import this, the
// core (src/proxy) and the host clients; never each other.

import type { EffectiveFeatureGates } from "../config/feature-gates.ts";
import type { ProxyConfig } from "../config/types.ts";
import type { Exec } from "../exec/types.ts";
import type { BackendPreference } from "../host/iptables/backend.ts";
import type { SysctlClient } from "../host/sysctl/types.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../proxy/metrics/metrics.ts";
import type { ServiceHealthSink } from "../proxy/service-health-sink.ts";
import type { NodeIPs } from "../proxy/types.ts";

export interface ModeBuildOptions {
  readonly exec: Exec;
  readonly config: ProxyConfig;
  /** Effective gates of config.featureGates, computed once per run. */
  readonly featureGates: EffectiveFeatureGates;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly nodeName: string;
  readonly nodeIPs: NodeIPs;
  /** The host's sysctls (recording under --dry-run): route_localnet, nf_conntrack_tcp_be_liberal. */
  readonly sysctl: SysctlClient;
  readonly backend: BackendPreference;
  readonly healthCheck?: ServiceHealthSink;
}
