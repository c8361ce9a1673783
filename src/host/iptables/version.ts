// Version-gated behaviour of the iptables tools, with upstream's thresholds: which xtables lock
// flags each binary understands, and whether MASQUERADE takes --random-fully.

import { parseVersion, type Version, VersionParseError, versionAtLeast } from "../../util/version.ts";
import type { IptablesBackend } from "./types.ts";

/** -w (wait for the xtables lock) exists from 1.4.20, -w SECONDS from 1.4.22. */
export const WAIT_MIN_VERSION = "1.4.20";
export const WAIT_SECONDS_MIN_VERSION = "1.4.22";
/** iptables-restore learned --wait in 1.6.2. */
export const WAIT_RESTORE_MIN_VERSION = "1.6.2";
export const RANDOM_FULLY_MIN_VERSION = "1.6.2";
/** Without -C, upstream falls back to parsing iptables-save; we assume -C (1.4.11, 2011). */
export const MIN_CHECK_VERSION = "1.4.11";

/**
 * Upstream waits at most 5 s for the lock. Since 1.34 it no longer passes -W (the poll interval):
 * iptables 1.8 ignores it and prints a notice on every call.
 */
const WAIT_SECONDS = "5";

export interface IptablesVersionInfo {
  /** "1.8.9" */
  readonly version: string;
  /** The flavour printed in parentheses by 1.8+ ("legacy", "nf_tables"), when present. */
  readonly mode?: "legacy" | "nf_tables";
}

/** Parses `iptables v1.8.9 (legacy)` / `ip6tables-restore v1.8.7 (nf_tables)` / `iptables v1.6.1`. */
export function parseIptablesVersion(output: string): IptablesVersionInfo | undefined {
  const m = /\bv(\d+(?:\.\d+)+)(?:\s+\((legacy|nf_tables)\))?/.exec(output);
  if (!m?.[1]) return undefined;
  const mode = m[2] as IptablesVersionInfo["mode"];
  return mode ? { version: m[1], mode } : { version: m[1] };
}

export function modeBackend(mode: IptablesVersionInfo["mode"]): IptablesBackend | undefined {
  if (mode === "legacy") return "legacy";
  if (mode === "nf_tables") return "nft";
  return undefined;
}

function parsed(version: string): Version | undefined {
  try {
    return parseVersion(version);
  } catch (err) {
    if (err instanceof VersionParseError) return undefined;
    throw err;
  }
}

/** Lock flags for the iptables binary itself (-N, -C, -A, ...). */
export function iptablesWaitFlags(version: string): string[] {
  const v = parsed(version);
  if (!v) return [];
  if (versionAtLeast(v, WAIT_SECONDS_MIN_VERSION)) return ["-w", WAIT_SECONDS];
  if (versionAtLeast(v, WAIT_MIN_VERSION)) return ["-w"];
  return [];
}

/**
 * Lock flags for iptables-restore. Before 1.6.2 upstream probes `iptables-restore --version`:
 * a restore that knows --version was patched with --wait too, but only the bare form.
 */
export function restoreWaitFlags(version: string, restoreKnowsVersion: boolean): string[] {
  const v = parsed(version);
  if (v && versionAtLeast(v, WAIT_RESTORE_MIN_VERSION)) {
    return ["-w", WAIT_SECONDS];
  }
  return restoreKnowsVersion ? ["-w"] : [];
}

export function supportsRandomFully(version: string): boolean {
  const v = parsed(version);
  return v !== undefined && versionAtLeast(v, RANDOM_FULLY_MIN_VERSION);
}
