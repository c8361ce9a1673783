// Typed client for the conntrack tool: the flow listing and the filtered deletes upstream's
// conntrack reconciler does over netlink (pkg/proxy/conntrack), as conntrack-tools' command line.
// Several deletes go as one `conntrack --load-file FILE` batch (conntrack cannot read a batch
// from the socket our children get as stdin), through a private temporary file; where none can
// be written, one `conntrack -D` each. Addresses and ports reach argv or the batch only after
// they parse as such.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Exec, ExecResult } from "../../exec/types.ts";
import { type Logger, nullLogger } from "../../log/logger.ts";
import { errText } from "../../util/err-text.ts";
import { parseIPLenient } from "../../util/net/address.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { lowerProtocol, type Protocol } from "../../util/net/protocol.ts";
import { ConntrackError, NO_CONNECTION_TO_DELETE } from "./errors.ts";
import type { ConntrackClient, ConntrackFlowEntry, FlowFilter } from "./types.ts";

export interface ConntrackClientOptions {
  exec: Exec;
  logger?: Logger;
  timeoutMs?: number;
}

const familyArg = (family: IPFamily) => ["-f", family === "IPv6" ? "ipv6" : "ipv4"];

function checkPort(port: number): string {
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new RangeError(`invalid port ${port}: must be 1-65535`);
  }
  return String(port);
}

function checkIP(ip: string, family: IPFamily): string {
  const parsed = parseIPLenient(ip);
  if (parsed?.family !== family) throw new RangeError(`invalid ${family} address ${JSON.stringify(ip)}`);
  return parsed.ip;
}

/** The command lines the client runs (exported so callers can log or dry-run them). */
export const conntrackArgs = {
  list: (family: IPFamily, p: Protocol) => ["-L", ...familyArg(family), "-p", lowerProtocol(p)],
  delete: (f: FlowFilter) => [
    "-D",
    ...familyArg(f.family),
    "-p",
    lowerProtocol(f.protocol),
    ...(f.origDst !== undefined ? ["--orig-dst", checkIP(f.origDst, f.family)] : []),
    ...(f.origDport !== undefined ? ["--orig-port-dst", checkPort(f.origDport)] : []),
    "--reply-src",
    checkIP(f.replySrc, f.family),
    "--reply-port-src",
    checkPort(f.replySport),
  ],
};

// "udp 17 29 src=A dst=B sport=1 dport=2 [UNREPLIED] src=C dst=D sport=3 dport=4 mark=0 use=1":
// the first tuple is the original direction, the second the reply.
const FLOW = /\bsrc=\S+ dst=(\S+) sport=\d+ dport=(\d+)\b.*?\bsrc=(\S+) dst=\S+ sport=(\d+) dport=\d+/;

/** The flows of a `conntrack -L` listing; lines that are not flows are skipped. */
export function parseFlows(text: string): ConntrackFlowEntry[] {
  const out: ConntrackFlowEntry[] = [];
  let from = 0;
  while (from < text.length) {
    let to = text.indexOf("\n", from);
    if (to < 0) to = text.length;
    const m = FLOW.exec(text.slice(from, to));
    if (m) out.push({ origDst: m[1]!, origDport: Number(m[2]), replySrc: m[3]!, replySport: Number(m[4]) });
    from = to + 1;
  }
  return out;
}

export function createConntrackClient(opts: ConntrackClientOptions): ConntrackClient {
  const log = (opts.logger ?? nullLogger).named("conntrack");
  const timeoutMs = opts.timeoutMs ?? 60_000;

  async function run(args: string[]): Promise<ExecResult> {
    return opts.exec.run({ cmd: "conntrack", args, timeoutMs });
  }

  async function deleteOne(args: string[]): Promise<number> {
    const res = await run(args);
    const out = res.stderr + res.stdout;
    if (res.code !== 0 && !out.includes(NO_CONNECTION_TO_DELETE)) {
      throw new ConntrackError(args, res.code, res.stderr || res.stdout);
    }
    const n = /(\d+) flow entries have been deleted/.exec(out);
    return n ? Number(n[1]) : 0;
  }

  /** The batch in a file only this process can read; undefined when none can be written. */
  function writeBatch(
    filters: readonly FlowFilter[],
  ): { path: string; text: string; remove(): void } | undefined {
    const text = filters.map((f) => `${conntrackArgs.delete(f).join(" ")}\n`).join("");
    try {
      const dir = mkdtempSync(join(tmpdir(), "kube-proxy-ts-conntrack-"));
      const path = join(dir, "delete");
      writeFileSync(path, text, { mode: 0o600 });
      return { path, text, remove: () => rmSync(dir, { recursive: true, force: true }) };
    } catch (err) {
      log
        .v(2)
        .info("Cannot write a conntrack batch file; deleting one filter at a time", { err: errText(err) });
      return undefined;
    }
  }

  return {
    async listFlows(family, protocol) {
      const args = conntrackArgs.list(family, protocol);
      const res = await run(args);
      if (res.code !== 0) throw new ConntrackError(args, res.code, res.stderr || res.stdout);
      return parseFlows(res.stdout);
    },
    async deleteFlows(filters) {
      if (filters.length === 0) return 0;
      log.v(6).info("Deleting conntrack flows", { filters: filters.length });
      const batch = filters.length > 1 ? writeBatch(filters) : undefined;
      if (!batch) {
        let deleted = 0;
        for (const f of filters) deleted += await deleteOne(conntrackArgs.delete(f));
        return deleted;
      }
      try {
        const args = ["--load-file", batch.path];
        // The lines go as stdin too: conntrack reads the file, a dry run records them.
        const res = await opts.exec.run({ cmd: "conntrack", args, stdin: batch.text, timeoutMs });
        if (res.code !== 0 && !(res.stderr + res.stdout).includes(NO_CONNECTION_TO_DELETE)) {
          throw new ConntrackError(args, res.code, res.stderr || res.stdout);
        }
        // A batch prints each flow it deleted, and no total.
        return parseFlows(res.stdout).length;
      } finally {
        batch.remove();
      }
    },
  };
}
