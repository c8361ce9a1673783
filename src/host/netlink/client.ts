// The real NetlinkClient, over iproute2's `ip`. Every bind and unbind of a sync goes in one
// `ip -force -batch -` call: -force keeps going past a refused line, so one stale address cannot
// hold back the rest, and the client then forgives exactly what upstream forgives (binding an
// address that is already bound, unbinding one that is already gone).
//
// Like upstream's EnsureDummyDevice, the dummy device is created and left DOWN: addresses on a
// down dummy still get local routes, which is all IPVS needs.

import type { Exec, ExecResult } from "../../exec/types.ts";
import { type Logger, nullLogger } from "../../log/logger.ts";
import { canonicalIPInet, isIPv6LinkLocal, isLoopback } from "../../util/net/address.ts";
import { type FamilyNumber, familyNumber, type IPFamily, maxPrefixLen } from "../../util/net/family.ts";
import { boundFor, ReadAllowance, type ToolBound } from "../tool-bound.ts";
import { NetlinkError, parseBatchFailures } from "./errors.ts";
import { hostPrefix, ifName } from "./ip-text.ts";
import type { InterfaceAddress, NetlinkClient } from "./types.ts";

export interface NetlinkClientOptions {
  exec: Exec;
  logger?: Logger;
  /** Bound on every run, for a small input or output. */
  timeoutMs?: number;
  /** Added to the bound of a batch or an address listing per 1,000 lines read or expected. */
  perThousandLinesMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** `ip -batch` bound 10,000 addresses in some 8 s in an emulated guest. */
export const IP_PER_THOUSAND_LINES_MS = 5_000;

/** One address of `ip -o addr show` output. */
export interface AddrLine {
  readonly index: number;
  readonly device: string;
  readonly family: FamilyNumber;
  /** Canonical, without prefix. */
  readonly address: string;
  readonly prefix: number;
  readonly scope: string;
}

const ADDR_LINE = /^(\d+):\s+(\S+)\s+(inet6?)\s+([0-9A-Fa-f:.]+)(?:\/(\d+))?(.*)$/;

/**
 * Parses `ip -o addr show` lines ("3: eth0    inet 192.0.2.10/24 brd 192.0.2.255 scope global
 * eth0\       valid_lft forever ..."). Lines that are not addresses are skipped.
 */
export function parseIpAddrShow(text: string): AddrLine[] {
  const out: AddrLine[] = [];
  for (const line of text.split("\n")) {
    const m = ADDR_LINE.exec(line);
    if (!m) continue;
    const address = canonicalIPInet(m[4]!);
    if (!address) continue;
    const family: IPFamily = m[3] === "inet6" ? "IPv6" : "IPv4";
    out.push({
      index: Number(m[1]),
      device: m[2]!.replace(/@.*$/, ""),
      family: familyNumber(family),
      address,
      prefix: m[5] !== undefined ? Number(m[5]) : maxPrefixLen(family),
      scope: /\bscope (\S+)/.exec(m[6] ?? "")?.[1] ?? "global",
    });
  }
  return out;
}

/**
 * The `ip -batch` lines that unbind `remove` and bind `add` (host prefixes) on `device`; every
 * word from ip-text.ts, which refuses (HostInputError) a name or address `ip` would misread.
 */
export function renderBindBatch(device: string, add: readonly string[], remove: readonly string[]): string {
  const dev = ifName(device);
  const line = (verb: "add" | "del", ip: string) => `address ${verb} ${hostPrefix(ip)} dev ${dev}\n`;
  return [...remove.map((ip) => line("del", ip)), ...add.map((ip) => line("add", ip))].join("");
}

// What a repeated bind or unbind looks like; both are fine (upstream ignores EEXIST on bind and
// a missing address on unbind).
const ALREADY_BOUND = /already assigned|File exists/;
const ALREADY_GONE = /Address not found|address not found|Cannot assign requested address/;

export function createNetlinkClient(opts: NetlinkClientOptions): NetlinkClient {
  const { exec } = opts;
  const log = (opts.logger ?? nullLogger).named("netlink");
  const bound: ToolBound = {
    baseMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    perThousandLinesMs: opts.perThousandLinesMs ?? IP_PER_THOUSAND_LINES_MS,
  };
  // Address listings grow with the addresses bound on the dummy device.
  const reads = new ReadAllowance(bound);

  const run = (args: string[], stdin?: string, timeoutMs = bound.baseMs): Promise<ExecResult> =>
    exec.run({ cmd: "ip", args, timeoutMs, ...(stdin !== undefined ? { stdin } : {}) });
  const fail = (args: string[], res: ExecResult) =>
    new NetlinkError("ip", args, res.code, res.timedOut ? "timed out" : res.stderr || res.stdout);

  async function show(args: string[]): Promise<AddrLine[]> {
    const ms = reads.nextMs();
    const res = await run(args, undefined, ms);
    if (res.timedOut) reads.timedOut(ms);
    else reads.read(res.stdout);
    if (res.code !== 0) throw fail(args, res);
    return parseIpAddrShow(res.stdout);
  }

  return {
    async ensureDummyDevice(name) {
      // "name" and "dev" before the device: iproute2 would read a bare "help" or "dev" as a keyword.
      const args = ["link", "add", "name", ifName(name), "type", "dummy"];
      const res = await run(args);
      if (res.code === 0) {
        log.v(2).info("Created dummy device", { device: name });
        return false;
      }
      if (/File exists/.test(res.stderr)) return true;
      throw fail(args, res);
    },

    async deleteDevice(name) {
      const args = ["link", "del", "dev", ifName(name)];
      const res = await run(args);
      if (res.code === 0) return;
      const err = fail(args, res);
      if (err.isNotFound()) return;
      throw err;
    },

    async listAddresses(device) {
      return (await show(["-o", "addr", "show", "dev", ifName(device)])).map((a) => a.address);
    },

    async bindAddresses(device, add, remove) {
      if (add.length === 0 && remove.length === 0) return;
      const input = renderBindBatch(device, add, remove);
      const args = ["-force", "-batch", "-"];
      log.v(4).info("Running ip -batch", { device, bind: add.length, unbind: remove.length });
      const lines = add.length + remove.length;
      const res = await run(args, input, boundFor(bound, lines));
      reads.wrote(add.length);
      if (res.code === 0) return;
      const failures = parseBatchFailures(res.stderr, input);
      const real = failures.filter((f) => {
        const verb = /^address (add|del) /.exec(f.text)?.[1];
        if (verb === "add" && ALREADY_BOUND.test(f.message)) return false;
        if (verb === "del" && ALREADY_GONE.test(f.message)) return false;
        return true;
      });
      if (failures.length > 0 && real.length === 0) return;
      const first = real[0];
      const what = first
        ? `line ${first.line} (${first.text}): ${first.message}`
        : res.stderr.trim() || `exit ${res.code}`;
      throw new NetlinkError("ip", args, res.code, res.stderr, real, `ip -batch refused ${what}`);
    },

    async allAddresses() {
      return (await show(["-o", "addr", "show"])).map((a) => a.address);
    },

    async localAddresses(excludeDevice) {
      const all = await show(["-o", "addr", "show"]);
      return all
        .filter((a) => a.device !== excludeDevice && !isLoopback(a.address) && !isIPv6LinkLocal(a.address))
        .map((a): InterfaceAddress => ({ device: a.device, address: a.address }));
    },
  };
}
