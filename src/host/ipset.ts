// Typed client for the ipset tool. For now it answers the ipvs mode's prerequisite check:
// is ipset installed, and is it new enough for the set types the ipvs proxier creates.

import type { Exec } from "../exec/types.ts";
import { VersionParseError, versionAtLeast } from "../util/version.ts";

/** The oldest ipset whose set types and options the ipvs proxier relies on. */
export const MIN_IPSET_VERSION = "6.0";

export type IpsetVersionResult = { ok: true; version: string } | { ok: false; detail: string };

/** The set types ipvs mode creates (upstream's names and types). */
export type IpsetType =
  | "hash:ip"
  | "hash:ip,port"
  | "hash:ip,port,ip"
  | "hash:ip,port,net"
  | "hash:net"
  | "bitmap:port";

export interface IpsetSetSpec {
  readonly name: string;
  readonly type: IpsetType;
  readonly family: "inet" | "inet6";
  readonly comment: string;
  readonly hashSize?: number;
  readonly maxElem?: number;
  /** bitmap:port only, e.g. "0-65535". */
  readonly range?: string;
}

export interface IpsetSet {
  readonly spec: IpsetSetSpec;
  /** Entries as ipset prints them ("198.51.100.10,tcp:80"). */
  readonly entries: ReadonlySet<string>;
}

export interface IpsetClient {
  /** The installed ipset version ("7.17"), or why it could not be determined. */
  version(): Promise<IpsetVersionResult>;
  /** Every set with its entries, from one `ipset save`. */
  listSets(): Promise<Map<string, IpsetSet>>;
  /** One `ipset restore -exist` of a script (create/add/del/flush/destroy lines); atomic per line. */
  restore(script: string): Promise<void>;
  /** Destroys a set; missing is not an error. */
  destroy(name: string): Promise<void>;
}

/** "ipset v7.17, protocol version: 7" -> "7.17"; undefined when no version is present. */
export function parseIpsetVersion(output: string): string | undefined {
  return /\bv(\d+\.\d+(?:\.\d+)?)\b/.exec(output)?.[1];
}

export function ipsetVersionSupported(version: string): boolean {
  try {
    return versionAtLeast(version, MIN_IPSET_VERSION);
  } catch (err) {
    if (err instanceof VersionParseError) return false;
    throw err;
  }
}

export interface IpsetClientOptions {
  exec: Exec;
}

const VERSION_TIMEOUT_MS = 10_000;

export function createIpsetClient({ exec }: IpsetClientOptions): IpsetClient {
  const notYet = async (): Promise<never> => {
    throw new Error("ipset set operations arrive with ipvs mode");
  };
  return {
    listSets: notYet,
    restore: notYet,
    destroy: notYet,
    async version() {
      const res = await exec.run({ cmd: "ipset", args: ["--version"], timeoutMs: VERSION_TIMEOUT_MS });
      if (res.code === 127) return { ok: false, detail: "ipset not found" };
      if (res.code !== 0) {
        const why = res.timedOut ? "timed out" : res.stderr.trim() || `exit code ${res.code}`;
        return { ok: false, detail: `ipset --version failed: ${why}` };
      }
      const version = parseIpsetVersion(res.stdout);
      if (!version) {
        return { ok: false, detail: `cannot parse ipset version from ${JSON.stringify(res.stdout.trim())}` };
      }
      return { ok: true, version };
    },
  };
}
