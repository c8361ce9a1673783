// The proxy modes this build runs. Real runs, dry runs and --cleanup find a mode here and
// call it through ModeDefinition; nothing outside src/modes/<name>/ names a mode's parts.
// Adding a mode: a folder src/modes/<name>/ with its mode.ts, and one entry below.

import type { ProxyConfig, ProxyMode } from "../config/types.ts";
import type { Exec } from "../exec/types.ts";
import type { Logger } from "../log/logger.ts";
import { iptablesMode } from "./iptables/mode.ts";
import { ipvsMode } from "./ipvs/mode.ts";
import { nftablesMode } from "./nftables/mode.ts";
import type { CleanupOptions, ModeDefinition } from "./types.ts";

/** In --cleanup order: iptables rules go before the ipsets they match on. */
export const MODES = [iptablesMode, ipvsMode, nftablesMode] as const;

/** The modes this build runs: the one place their names become a type. */
export type ModeName = (typeof MODES)[number]["name"];

// Every mode is one the configuration can name.
const _namesAreConfigModes: readonly ProxyMode[] = MODES.map((m) => m.name);
void _namesAreConfigModes;

export const MODE_NAMES: readonly ModeName[] = MODES.map((m) => m.name);

export function modeNamed(name: ModeName): ModeDefinition<ModeName> {
  const mode = MODES.find((m) => m.name === name);
  if (!mode) throw new Error(`no proxy mode named ${name}`);
  return mode;
}

/** The mode a validated configuration runs (an empty mode already defaulted to iptables). */
export function modeForConfig(config: Pick<ProxyConfig, "mode">): ModeDefinition<ModeName> {
  return MODES.find((m) => m.name === config.mode) ?? iptablesMode;
}

/**
 * The health timeout: twice the running mode's sync period. (Upstream v1.31 took the iptables
 * period whatever the mode, so an ipvs node with a longer ipvs.syncPeriod was reported unhealthy
 * between two healthy periodic syncs; later releases use the one sync period of the mode.)
 */
export function healthTimeoutMs(config: ProxyConfig, name: ModeName): number {
  return 2 * modeNamed(name).periods(config).syncPeriod;
}

/** --cleanup: every mode's leftovers; false on a failure. */
export async function cleanupAllModes(exec: Exec, log: Logger, o: CleanupOptions): Promise<boolean> {
  let ok = true;
  for (const mode of MODES) ok = (await mode.cleanup(exec, log, o)) && ok;
  return ok;
}

/**
 * At the start of a run, as upstream's platformCleanup: nftables mode removes what iptables and
 * ipvs mode left; those two (which share the iptables rules) remove nftables mode's tables.
 * Best effort: failures are logged and the run goes on.
 */
export async function cleanupOtherModes(
  current: ModeName,
  exec: Exec,
  log: Logger,
  o: CleanupOptions,
): Promise<void> {
  const others = current === "nftables" ? [iptablesMode, ipvsMode] : [nftablesMode];
  for (const mode of others) await mode.cleanup(exec, log, o);
}
