// Node preparation shared by real runs and --dry-run: decide the proxy mode, verify its
// prerequisites, and bring the kernel settings it needs into line.

import { availableParallelism } from "node:os";
import type { ProxyConfig } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { type ModeName, modeForConfig } from "../modes/registry.ts";
import type { Check } from "../proxy/check.ts";
import {
  applySysctls,
  type HashsizeResult,
  planSysctls,
  raiseConntrackHashsize,
  type SysctlOutcome,
} from "../proxy/sysctls.ts";
import type { Host } from "./host.ts";

export interface Preparation {
  readonly mode: ModeName;
  readonly checks: Check[];
  readonly sysctls: SysctlOutcome[];
  /** Set when a real run must not continue; the message names every failed prerequisite. */
  readonly fatal?: string;
  /** Warnings a real run also posts as events on its Node (reason, action, message). */
  readonly nodeWarnings: NodeWarning[];
}

export interface NodeWarning {
  readonly reason: string;
  /** The event's action; StartKubeProxy when absent. */
  readonly action?: string;
  readonly message: string;
}

export async function prepareNode(
  config: ProxyConfig,
  host: Host,
  log: Logger,
  dryRun: boolean,
): Promise<Preparation> {
  // Validation already rejected the modes this build cannot run, with a clear message.
  const definition = modeForConfig(config);
  const mode = definition.name;
  const checks: Check[] = [];
  let fatal: string | undefined;
  log.info("Using proxy mode", { mode });
  const nodeWarnings: NodeWarning[] = [];
  if (definition.deprecation) {
    const d = definition.deprecation;
    log.error(d.message);
    nodeWarnings.push({ reason: d.eventReason, action: d.eventAction, message: d.message });
  }

  if (definition.prerequisites) {
    const verdict = await definition.prerequisites(
      { exec: host.exec, kernel: host.kernel, ipset: host.ipset },
      config,
      dryRun,
    );
    checks.push(...verdict.checks);
    fatal = verdict.fatal;
  }

  const kernelVersion = await host.kernel.version();
  const plan = planSysctls({
    ...(definition.sysctls ? { modeSysctls: definition.sysctls } : {}),
    kernelVersion,
    strictARP: config.ipvs.strictARP,
    cpus: availableParallelism(),
    conntrack: {
      maxPerCore: config.conntrack.maxPerCore,
      min: config.conntrack.min,
      tcpEstablishedTimeoutMs: config.conntrack.tcpEstablishedTimeout,
      tcpCloseWaitTimeoutMs: config.conntrack.tcpCloseWaitTimeout,
      tcpBeLiberal: config.conntrack.tcpBeLiberal,
      udpTimeoutMs: config.conntrack.udpTimeout,
      udpStreamTimeoutMs: config.conntrack.udpStreamTimeout,
    },
  });
  // A real run does not touch the kernel for a mode it cannot run.
  const sysctls = fatal && !dryRun ? [] : await applySysctls(plan, host.sysctl, log.named("sysctl"));
  const hashsize = await followConntrackMax(plan.settings, sysctls, host, log);
  if (hashsize) {
    sysctls.push(hashsize.outcome);
    if (hashsize.nodeWarning) nodeWarnings.push(hashsize.nodeWarning);
  }
  const failedSysctls = sysctls.filter((s) => s.action === "failed");
  checks.push({
    name: "sysctls",
    ok: failedSysctls.length === 0,
    detail: describeSysctls(sysctls, kernelVersion),
  });
  if (!fatal && failedSysctls.length > 0)
    fatal = `failed to set required sysctls: ${failedSysctls.map((s) => s.name).join(", ")}`;
  return { mode, checks, sysctls, nodeWarnings, ...(fatal ? { fatal } : {}) };
}

/** nf_conntrack's hashsize follows a max we set (or found higher); not when setting it failed. */
async function followConntrackMax(
  settings: readonly { name: string; value: number }[],
  outcomes: readonly SysctlOutcome[],
  host: Host,
  log: Logger,
): Promise<HashsizeResult | undefined> {
  const max = settings.find((s) => s.name === "net/netfilter/nf_conntrack_max");
  const outcome = outcomes.find((o) => o.name === max?.name);
  if (!max || !outcome || outcome.action === "failed") return undefined;
  return raiseConntrackHashsize(max.value, host.hashsize, log.named("sysctl"));
}

function describeSysctls(sysctls: readonly SysctlOutcome[], kernelVersion: string): string {
  const failed = sysctls.filter((s) => s.action === "failed");
  if (failed.length > 0) return `failed: ${failed.map((s) => `${s.name} (${s.detail})`).join("; ")}`;
  const toWrite = sysctls.filter((s) => s.action === "set");
  // A knob that does not exist yet (net/ipv4/vs/* before ip_vs is loaded) is worth saying.
  const absent = toWrite.filter((s) => s.from === undefined).map((s) => s.name);
  const absentNote = absent.length ? `; not present on this kernel now: ${absent.join(", ")}` : "";
  return `${toWrite.length} to write, ${sysctls.length} checked (kernel ${kernelVersion})${absentNote}`;
}
