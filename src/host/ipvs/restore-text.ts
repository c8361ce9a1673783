// The one place values become `ipvsadm --restore` words. Only addresses, ports, schedulers,
// scheduler flags, persistence timeouts and weights go into a restore line, and each is checked
// here: an address must parse (and is written canonical), a number must be a whole number in
// range, a scheduler and its flags must be ones the kernel has. Anything else is refused with
// an IpvsError of kind "invalid" (the ipvs client's typed error) before ipvsadm runs.

import { canonicalIPv4Value, parseIPInet } from "../../util/net/address.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { IpvsError } from "./errors.ts";
import { MAX_TIMEOUT, parseSchedFlags } from "./syntax.ts";

/** The schedulers a stock kernel ships as ip_vs_* modules: the only names a restore line carries. */
export const KERNEL_SCHEDULERS: readonly string[] = [
  "rr",
  "wrr",
  "lc",
  "wlc",
  "lblc",
  "lblcr",
  "dh",
  "sh",
  "sed",
  "nq",
  "fo",
  "ovf",
  "mh",
  "twos",
];

const SCHEDULERS: ReadonlySet<string> = new Set(KERNEL_SCHEDULERS);

/** The largest real-server weight kube-proxy writes (upstream's weights are 0 or 1). */
export const MAX_WRITTEN_WEIGHT = 65535;

function invalid(message: string): never {
  throw new IpvsError({ kind: "invalid", message: `ipvs: ${message}` });
}

/** An address in canonical form with its family; refused unless it parses as an IP address. */
export function ipvsAddress(address: string, what: string): { ip: string; family: IPFamily } {
  // The common case, checked without parsing: an IPv4 address already in canonical form.
  if (canonicalIPv4Value(address) >= 0) return { ip: address, family: "IPv4" };
  const parsed = parseIPInet(address);
  if (!parsed) invalid(`${what} address ${JSON.stringify(address)} is not an IP address`);
  return { ip: parsed.ip, family: parsed.family };
}

/** A port as given, when it is a whole number in 1-65535 (0 too when `allowZero`). */
export function ipvsPort(port: number, what: string, allowZero: boolean): number {
  if (!Number.isInteger(port) || port < (allowZero ? 0 : 1) || port > 65535) {
    invalid(`${what} port ${port} is out of range`);
  }
  return port;
}

/** A scheduler name as given, when it is one the kernel ships. */
export function ipvsScheduler(name: string): string {
  if (!SCHEDULERS.has(name)) invalid(`unknown scheduler ${JSON.stringify(name)}`);
  return name;
}

/** Scheduler flags as the `-b` word, when each applies to the scheduler (as ipvsadm checks). */
export function ipvsSchedulerFlags(scheduler: string, flags: readonly string[]): string {
  const word = flags.join(",");
  try {
    parseSchedFlags(scheduler, word);
  } catch {
    invalid(`scheduler flags ${JSON.stringify(word)} do not apply to scheduler ${scheduler}`);
  }
  return word;
}

/** A persistence timeout in seconds as given, when in 0 to ipvsadm's maximum. */
export function ipvsTimeout(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_TIMEOUT) {
    invalid(`persistence timeout ${seconds} is out of range 0-${MAX_TIMEOUT}`);
  }
  return seconds;
}

/** A real server's weight as given, when a whole number in 0-65535. */
export function ipvsWeight(weight: number): number {
  if (!Number.isInteger(weight) || weight < 0 || weight > MAX_WRITTEN_WEIGHT) {
    invalid(`weight ${weight} is out of range`);
  }
  return weight;
}
