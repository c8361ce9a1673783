// What a proxy mode is (ModeDefinition) and what it is given to build itself for a real or a
// dry run. Modes import this, the core (src/proxy) and the host clients; never each other.

import type { EffectiveFeatureGates } from "../config/feature-gates.ts";
import type { ProxyConfig } from "../config/types.ts";
import type { Exec } from "../exec/types.ts";
import type { IpsetClient } from "../host/ipset/types.ts";
import type { BackendPreference } from "../host/iptables/backend.ts";
import type { KernelClient } from "../host/kernel/types.ts";
import type { SysctlClient } from "../host/sysctl/types.ts";
import type { EventRecorder } from "../k8s/events.ts";
import type { Logger } from "../log/logger.ts";
import type { Check } from "../proxy/check.ts";
import type { BackendChoice } from "../proxy/debug-state/schema.ts";
import type { FamilyDrift } from "../proxy/drift.ts";
import type { Metrics } from "../proxy/metrics/metrics.ts";
import type { Proxier } from "../proxy/proxier.ts";
import type { ServiceHealthSink } from "../proxy/service-health-sink.ts";
import type { ModeSysctls } from "../proxy/sysctls.ts";
import type { NodeIPs } from "../proxy/types.ts";
import type { Clock } from "../util/clock.ts";
import type { IPFamily } from "../util/net/family.ts";
import type { ExplainHost, ExplainPacket, Explanation } from "./explain.ts";

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
  /** The proxiers' clock (real time when absent); a replay steps it between snapshots. */
  readonly clock?: Clock;
  /** Warning events on objects the mode cannot program (none posted when absent). */
  readonly recorder?: EventRecorder;
}

/** What the sync loop needs from a built mode, whichever it is. */
export interface RunningMode {
  readonly families: readonly IPFamily[];
  readonly proxier: Proxier;
  /** Background work that starts after the first sync (iptables: canary polling). */
  afterFirstSync(requestSync: () => void): void;
  stop(): void;
  /** How the mode writes to the kernel, and why (/debug/state); absent: nothing to say. */
  describe?(): readonly BackendChoice[];
  /**
   * Compares the kernel with the mode's record of what its syncs wrote, one answer per family;
   * waits for a sync under way. Absent: the mode cannot tell.
   */
  drift?(): Promise<FamilyDrift[]>;
  /** After drift was found: the next sync rewrites everything (the caller queues it). */
  repairDrift?(): void;
}

/** A mode built for --dry-run: its proxier plans against the real host and records changes. */
export interface PlannedMode {
  readonly proxier: Proxier;
  /** The mode's part of the report, from what the sync planned. */
  report?(): Record<string, unknown>;
}

/** What a mode's prerequisite checks read: the kernel, the ipset tool, and read-only commands. */
export interface PrerequisiteHost {
  /** Under --dry-run the recorder: reads and `--check`s run, changes are only recorded. */
  readonly exec: Exec;
  readonly kernel: KernelClient;
  readonly ipset: IpsetClient;
}

export interface PrerequisiteVerdict {
  readonly checks: Check[];
  /** Set when a real run must not start; names every failed prerequisite. */
  readonly fatal?: string;
}

export interface CleanupOptions {
  /** --ipvs-exclude-cidrs: virtual servers inside these are not ours. */
  readonly excludeCIDRs: readonly string[];
  readonly featureGates: Readonly<Record<string, boolean>>;
}

/** A mode upstream deprecated: the log line at start and the Warning event on the Node. */
export interface ModeDeprecation {
  readonly message: string;
  readonly eventReason: string;
  readonly eventAction: string;
}

/** Everything one proxy mode is; src/modes/registry.ts lists them. */
export interface ModeDefinition<Name extends string = string> {
  readonly name: Name;
  /** Set when upstream deprecated the mode (ipvs, 1.35). */
  readonly deprecation?: ModeDeprecation;
  /** The mode's sync periods (its section of the configuration). */
  periods(config: ProxyConfig): { readonly syncPeriod: number; readonly minSyncPeriod: number };
  /** Checks a node must pass before the mode runs; none when absent. */
  prerequisites?(host: PrerequisiteHost, config: ProxyConfig, dryRun: boolean): Promise<PrerequisiteVerdict>;
  /** Kernel settings of this mode beyond conntrack's. */
  readonly sysctls?: ModeSysctls;
  /** Builds the mode for a real run. */
  build(o: ModeBuildOptions): Promise<RunningMode>;
  /** Builds the mode for --dry-run (one sync, then exit). */
  plan(o: ModeBuildOptions): Promise<PlannedMode>;
  /** The mode's part of the --dry-run report, also when planning failed (`planned` absent). */
  dryRunReport?(planned: PlannedMode | undefined): Record<string, unknown>;
  /** `explain`: where a new connection goes through the mode's rules as they are on `host`. */
  explain?(host: ExplainHost, packet: ExplainPacket): Promise<Explanation>;
  /** --cleanup: removes what this mode (upstream's or ours) leaves on a node; false on a failure. */
  cleanup(exec: Exec, log: Logger, o: CleanupOptions): Promise<boolean>;
}
