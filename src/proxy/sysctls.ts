// Kernel settings a proxy mode depends on (conntrack for all; each mode adds its own), decided
// from config and kernel version, then applied through a SysctlClient (which, under --dry-run, records instead of writing).

import {
  CONNTRACK_HASHSIZE_PATH,
  type ConntrackHashsizeClient,
  type SysctlClient,
} from "../host/sysctl/types.ts";
import type { Logger } from "../log/logger.ts";
import { errText } from "../util/err-text.ts";

export interface ConntrackSettings {
  readonly maxPerCore: number;
  readonly min: number;
  readonly tcpEstablishedTimeoutMs: number;
  readonly tcpCloseWaitTimeoutMs: number;
  readonly tcpBeLiberal: boolean;
  readonly udpTimeoutMs: number;
  readonly udpStreamTimeoutMs: number;
}

/** What a mode's own settings are decided from. */
export interface ModeSysctlInputs {
  readonly kernelVersion: string;
  readonly strictARP: boolean;
}

/** A mode's own settings (ipvs has some); notes explain what could not be set. */
export type ModeSysctls = (inputs: ModeSysctlInputs, notes: string[]) => SysctlSetting[];

export interface SysctlInputs extends ModeSysctlInputs {
  /** The running mode's settings, after the conntrack ones; none when absent. */
  readonly modeSysctls?: ModeSysctls;
  readonly conntrack: ConntrackSettings;
  readonly cpus: number;
}

export interface SysctlSetting {
  readonly name: string;
  readonly value: number;
  readonly reason: string;
  /** Raise only: never lower a value an operator set higher (nf_conntrack_max). */
  readonly raiseOnly?: boolean;
}

export interface SysctlPlan {
  readonly settings: SysctlSetting[];
  /** Settings to read and warn about, never written by us. */
  readonly expectations: { name: string; value: number; warning: string }[];
  readonly notes: string[];
}

/**
 * route_localnet for localhost NodePorts. Not part of planSysctls: it depends on the node IPs
 * ("primary" nodePortAddresses) and on the IPv4 proxier existing, so the iptables mode assembly
 * applies it together with the rule that guards it (see proxy/localhost-nodeports.ts).
 */
export const ROUTE_LOCALNET: SysctlSetting = {
  name: "net/ipv4/conf/all/route_localnet",
  value: 1,
  reason: "iptables: NodePorts reachable on 127.0.0.1",
};

/** A plan of just these settings (no expectations), for settings applied outside planSysctls. */
export function settingsPlan(settings: SysctlSetting[]): SysctlPlan {
  return { settings, expectations: [], notes: [] };
}

/** Upstream 1.36 caps the per-core-scaled nf_conntrack_max here (big nodes asked for gigabytes). */
export const CONNTRACK_MAX_SCALED_CAP = 1_048_576;

function conntrackSettings(ct: ConntrackSettings, cpus: number): SysctlSetting[] {
  const out: SysctlSetting[] = [];
  if (ct.maxPerCore > 0) {
    const max = Math.max(Math.min(ct.maxPerCore * cpus, CONNTRACK_MAX_SCALED_CAP), ct.min);
    out.push({
      name: "net/netfilter/nf_conntrack_max",
      value: max,
      reason: "conntrack table size",
      raiseOnly: true,
    });
  }
  const seconds = (ms: number) => Math.floor(ms / 1000);
  const timeouts: [string, number, string][] = [
    ["nf_conntrack_tcp_timeout_established", ct.tcpEstablishedTimeoutMs, "conntrack: idle established TCP"],
    ["nf_conntrack_tcp_timeout_close_wait", ct.tcpCloseWaitTimeoutMs, "conntrack: TCP in CLOSE_WAIT"],
    ["nf_conntrack_udp_timeout", ct.udpTimeoutMs, "conntrack: unreplied UDP"],
    ["nf_conntrack_udp_timeout_stream", ct.udpStreamTimeoutMs, "conntrack: UDP streams"],
  ];
  for (const [name, ms, reason] of timeouts) {
    if (ms > 0) out.push({ name: `net/netfilter/${name}`, value: seconds(ms), reason });
  }
  if (ct.tcpBeLiberal) {
    out.push({
      name: "net/netfilter/nf_conntrack_tcp_be_liberal",
      value: 1,
      reason: "conntrack: liberal TCP window",
    });
  }
  return out;
}

export function planSysctls(inputs: SysctlInputs): SysctlPlan {
  const notes: string[] = [];
  const modeSettings = inputs.modeSysctls?.(inputs, notes) ?? [];
  return {
    settings: [...conntrackSettings(inputs.conntrack, inputs.cpus), ...modeSettings],
    expectations: [
      {
        name: "net/bridge/bridge-nf-call-iptables",
        value: 1,
        warning:
          "br_netfilter is missing or bridge-nf-call-iptables is not 1: traffic between pods on one bridge may bypass the proxy rules",
      },
    ],
    notes,
  };
}

export interface SysctlOutcome {
  readonly name: string;
  readonly from: string | undefined;
  readonly to: number;
  readonly action: "set" | "unchanged" | "kept-higher" | "skipped" | "failed";
  readonly detail?: string;
}

/** Writes what differs; reports every setting so --dry-run can show the whole picture. */
export async function applySysctls(
  plan: SysctlPlan,
  sysctl: SysctlClient,
  log: Logger,
): Promise<SysctlOutcome[]> {
  const outcomes: SysctlOutcome[] = [];
  for (const s of plan.settings) {
    const current = await sysctl.get(s.name);
    const cur = current === undefined ? undefined : Number(current.trim());
    if (cur === s.value) {
      outcomes.push({ name: s.name, from: current, to: s.value, action: "unchanged" });
      continue;
    }
    if (s.raiseOnly && cur !== undefined && cur > s.value) {
      outcomes.push({ name: s.name, from: current, to: s.value, action: "kept-higher" });
      continue;
    }
    try {
      await sysctl.set(s.name, s.value);
      log.v(1).info("Set sysctl", { name: s.name, value: s.value, previous: current, reason: s.reason });
      outcomes.push({ name: s.name, from: current, to: s.value, action: "set" });
    } catch (err) {
      const detail = errText(err);
      log.error("Failed to set sysctl", { name: s.name, value: s.value, err: detail });
      outcomes.push({ name: s.name, from: current, to: s.value, action: "failed", detail });
    }
  }
  for (const e of plan.expectations) {
    const current = await sysctl.get(e.name);
    if (current === undefined || Number(current.trim()) !== e.value)
      log.warn(e.warning, { sysctl: e.name, value: current });
  }
  for (const n of plan.notes) log.warn(n);
  return outcomes;
}

/** Upstream's warning (and Node event) when /sys is read-only (docker issue #24000). */
export const READ_ONLY_SYSFS_MESSAGE =
  "CRI error: /sys is read-only: cannot modify conntrack limits, problems may arise later (If running Docker, see docker issue #24000)";

export interface HashsizeResult {
  readonly outcome: SysctlOutcome;
  /** Set when the operator should hear about it on the Node too (upstream's readOnlySysFS event). */
  readonly nodeWarning?: { readonly reason: string; readonly message: string };
}

/**
 * After nf_conntrack_max is raised, its hash table follows: hashsize becomes max/4 when it is
 * smaller (never lowered), as upstream's conntracker does. The kernel takes the write only from
 * the initial network namespace, so elsewhere it is skipped with a log line; a read-only /sys is
 * a warning, not a failure.
 */
export async function raiseConntrackHashsize(
  max: number,
  client: ConntrackHashsizeClient,
  log: Logger,
): Promise<HashsizeResult> {
  const name = CONNTRACK_HASHSIZE_PATH;
  const wanted = Math.floor(max / 4);
  const current = await client.get();
  const base = { name, from: current === undefined ? undefined : String(current), to: wanted };
  if (current === undefined) {
    log.v(2).info("nf_conntrack is not loaded; its hashsize is left to the kernel", { file: name });
    return { outcome: { ...base, action: "skipped", detail: "nf_conntrack not loaded" } };
  }
  if (current >= wanted)
    return { outcome: { ...base, action: current === wanted ? "unchanged" : "kept-higher" } };
  const notInitial = (detail: string): HashsizeResult => {
    log.info("Not setting conntrack hashsize: the kernel allows it only from the initial network namespace", {
      conntrackHashsize: wanted,
      current,
    });
    return { outcome: { ...base, action: "skipped", detail } };
  };
  if ((await client.inInitialNetns()) === false) return notInitial("not in the initial network namespace");
  if ((await client.sysfsWritable()) === false) {
    log.warn(READ_ONLY_SYSFS_MESSAGE, { conntrackHashsize: wanted, current });
    return {
      outcome: { ...base, action: "skipped", detail: "/sys is read-only" },
      nodeWarning: { reason: "readOnlySysFS", message: READ_ONLY_SYSFS_MESSAGE },
    };
  }
  log.info("Setting conntrack hashsize", { conntrackHashsize: wanted });
  try {
    await client.set(wanted);
    return { outcome: { ...base, action: "set" } };
  } catch (err) {
    const code = ((err as { cause?: { code?: unknown } }).cause?.code ?? "") as string;
    if (code === "EOPNOTSUPP") return notInitial("not in the initial network namespace (EOPNOTSUPP)");
    if (code === "EROFS") {
      log.warn(READ_ONLY_SYSFS_MESSAGE, { conntrackHashsize: wanted, current });
      return {
        outcome: { ...base, action: "skipped", detail: "/sys is read-only" },
        nodeWarning: { reason: "readOnlySysFS", message: READ_ONLY_SYSFS_MESSAGE },
      };
    }
    const detail = errText(err);
    log.error("Failed to set conntrack hashsize", { conntrackHashsize: wanted, err: detail });
    return { outcome: { ...base, action: "failed", detail } };
  }
}
