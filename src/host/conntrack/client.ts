// Typed client for the conntrack tool: deleting the conntrack entries that would keep sending
// UDP/SCTP traffic to a Service IP or endpoint that is gone. Command forms follow upstream
// pkg/proxy/conntrack.

import type { Exec, ExecResult } from "../../exec/types.ts";
import { type Logger, nullLogger } from "../../log/logger.ts";
import { familyOf } from "../../util/net/family.ts";
import { lowerProtocol, type Protocol } from "../../util/net/protocol.ts";
import { ConntrackError, NO_CONNECTION_TO_DELETE } from "./errors.ts";
import type { ConntrackClient } from "./types.ts";

export interface ConntrackClientOptions {
  exec: Exec;
  logger?: Logger;
  timeoutMs?: number;
}

// conntrack filters IPv4 unless told otherwise.
function withFamily(v6: boolean, args: string[]): string[] {
  return v6 ? [...args, "-f", "ipv6"] : args;
}

function checkPort(port: number): void {
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new RangeError(`invalid port ${port}: must be 1-65535`);
  }
}

/** The command lines the client runs (exported so callers can log or dry-run them). */
export const conntrackArgs = {
  forIP: (ip: string, p: Protocol) =>
    withFamily(familyOf(ip) === "IPv6", ["-D", "--orig-dst", ip, "-p", lowerProtocol(p)]),
  forPort: (port: number, v6: boolean, p: Protocol) =>
    withFamily(v6, ["-D", "-p", lowerProtocol(p), "--dport", String(port)]),
  forNAT: (origin: string, dest: string, p: Protocol) =>
    withFamily(familyOf(origin) === "IPv6", [
      "-D",
      "--orig-dst",
      origin,
      "--dst-nat",
      dest,
      "-p",
      lowerProtocol(p),
    ]),
  forPortNAT: (dest: string, port: number, p: Protocol) =>
    withFamily(familyOf(dest) === "IPv6", [
      "-D",
      "-p",
      lowerProtocol(p),
      "--dport",
      String(port),
      "--dst-nat",
      dest,
    ]),
};

export function createConntrackClient(opts: ConntrackClientOptions): ConntrackClient {
  const log = (opts.logger ?? nullLogger).named("conntrack");
  const timeoutMs = opts.timeoutMs ?? 60_000;

  async function del(args: string[]): Promise<number> {
    log.v(4).info("Clearing conntrack entries", { args });
    const res: ExecResult = await opts.exec.run({ cmd: "conntrack", args, timeoutMs });
    const out = res.stderr + res.stdout;
    if (res.code !== 0 && !out.includes(NO_CONNECTION_TO_DELETE)) {
      throw new ConntrackError(args, res.code, res.stderr || res.stdout);
    }
    const n = /(\d+) flow entries have been deleted/.exec(out);
    const deleted = n ? Number(n[1]) : 0;
    log.v(4).info("Conntrack entries deleted", { args, deleted });
    return deleted;
  }

  return {
    clearEntriesForIP: (ip, p) => del(conntrackArgs.forIP(ip, p)),
    clearEntriesForPort: async (port, v6, p) => {
      checkPort(port);
      return del(conntrackArgs.forPort(port, v6, p));
    },
    clearEntriesForNAT: (origin, dest, p) => del(conntrackArgs.forNAT(origin, dest, p)),
    clearEntriesForPortNAT: async (dest, port, p) => {
      checkPort(port);
      return del(conntrackArgs.forPortNAT(dest, port, p));
    },
  };
}
