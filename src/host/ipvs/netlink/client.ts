// An IPVS client that writes changes to the kernel over generic netlink and does everything
// else (reads, timeouts, flush) with ipvsadm. `ipvsadm --restore` is a process per sync: in an
// emulated guest its start alone is most of a one-endpoint change, and at 110,000 lines its
// parsing is most of a first sync, while the kernel takes each command in microseconds. The
// messages are those ipvsadm sends for the same lines (encode.ts), in chunks; like ipvsadm
// --restore, a refused command does not stop the ones after it, and the refusals come back as
// the same IpvsError (kind "restore", each failure with its line), with ipvsadm's words for the
// usual errnos. When the kernel has no IPVS family (ip_vs not loaded yet) a write goes to
// ipvsadm, which loads it, and the family is looked up again next time.

import { type Logger, nullLogger } from "../../../log/logger.ts";
import { SequenceNumbers, seqOffset } from "../../netlink-socket/messages.ts";
import { type NetlinkSocket, NetlinkSocketError } from "../../netlink-socket/socket.ts";
import { IpvsError, type IpvsLineFailure } from "../errors.ts";
import { changeLines, checkChanges, renderChange } from "../format.ts";
import type { IpvsChange, IpvsChanges, IpvsClient } from "../types.ts";
import { encodeIpvsChanges, familyIdOf, familyRequest } from "./encode.ts";

/**
 * Up to this many lines every message asks for an ack, as ipvsadm's do; above it only refusals
 * are answered (the kernel has run every message of a send when the send returns), so a first
 * sync of 110,000 lines does not carry 110,000 acks through the worker.
 */
export const ACKED_LINES = 2048;

const ENOENT = 2;
const ESRCH = 3;
const EEXIST = 17;

/** What ipvsadm prints for a refused line, by the line's kind and the errno (its usual ones). */
function refusal(change: IpvsChange, errno: number): string {
  const real = change.op === "add-real" || change.op === "edit-real" || change.op === "delete-real";
  if (errno === ESRCH) return real ? "Service not defined" : "No such service";
  if (errno === EEXIST) return real ? "Destination already exists" : "Service already exists";
  if (errno === ENOENT) return real ? "No such destination" : "Scheduler or persistence engine not found";
  if (errno === 1) return "Permission denied (you must be root)";
  if (errno === 12) return "Memory allocation problem";
  if (errno === 22) return "Invalid operation";
  return `errno ${errno}`;
}

export interface NetlinkIpvsClientOptions {
  /** The client everything but writes goes to, and writes while IPVS has no netlink family. */
  readonly ipvsadm: IpvsClient;
  readonly socket: NetlinkSocket;
  readonly logger?: Logger;
}

/** Counts of what went where, for logs and tests. */
export interface NetlinkIpvsClient extends IpvsClient {
  readonly sent: { netlink: number; ipvsadm: number };
}

export function createNetlinkIpvsClient(opts: NetlinkIpvsClientOptions): NetlinkIpvsClient {
  const { ipvsadm, socket } = opts;
  const log = (opts.logger ?? nullLogger).named("ipvs-netlink");
  const sent = { netlink: 0, ipvsadm: 0 };
  const seqs = new SequenceNumbers();
  let familyId: number | undefined;

  /** IPVS's generic netlink family id, or a string saying why there is none now. */
  async function family(): Promise<number | string> {
    if (familyId !== undefined) return familyId;
    const s = seqs.take(1);
    const replies = await socket.send(familyRequest(s));
    for (const r of replies) {
      if (r.seq !== s) continue;
      if (r.error !== 0) return `the kernel has no IPVS netlink family (errno ${-r.error})`;
      const id = r.data ? familyIdOf(r.data.bytes) : undefined;
      if (id !== undefined) familyId = id;
    }
    return familyId ?? "the kernel did not name the IPVS netlink family";
  }

  function outcomeUnknown(err: NetlinkSocketError, lines: number): never {
    throw new IpvsError({
      kind: "failed",
      command: "netlink",
      message: `IPVS netlink: ${err.message}; the outcome of ${lines} changes is unknown`,
    });
  }

  async function apply(changes: IpvsChanges): Promise<void> {
    if (changes.length === 0) return;
    checkChanges(changes);
    let id: number | string;
    try {
      id = await family();
    } catch (err) {
      if (!(err instanceof NetlinkSocketError)) throw err;
      id = err.message;
    }
    if (typeof id === "string") {
      log.v(2).info("Writing IPVS changes with ipvsadm", { reason: id });
      sent.ipvsadm++;
      return ipvsadm.apply(changes);
    }
    const start = performance.now();
    const firstSeq = seqs.take(changes.length);
    // Refused lines (0-based) and their errnos; lines the kernel answered.
    const refused = new Map<number, number>();
    let answered = 0;
    let sends = 0;
    const acked = changes.length <= ACKED_LINES;
    for (const chunk of encodeIpvsChanges(changes, id, firstSeq, { ack: acked })) {
      let replies: Awaited<ReturnType<NetlinkSocket["send"]>>;
      try {
        replies = await socket.send(chunk.bytes);
      } catch (err) {
        if (!(err instanceof NetlinkSocketError)) throw err;
        outcomeUnknown(err, changes.length);
      }
      sends++;
      for (const r of replies) {
        const i = seqOffset(r.seq, chunk.firstSeq);
        if (i >= chunk.messages || r.data) continue;
        answered++;
        if (r.error !== 0) refused.set(chunk.firstLine + i, -r.error);
      }
    }
    sent.netlink++;
    ipvsadm.noteWritten?.(changes.length);
    log.v(2).info("Wrote IPVS changes over netlink", {
      changes: changes.length,
      sends,
      refused: refused.size,
      thread: socket.sentFrom,
      ms: Math.round((performance.now() - start) * 10) / 10,
    });
    if (refused.size === 0 && (!acked || answered >= changes.length)) return;
    throw refusedError(changes, refused, answered);
  }

  function refusedError(changes: IpvsChanges, refused: Map<number, number>, answered: number): IpvsError {
    const failures: IpvsLineFailure[] = [];
    let line = 0;
    for (const change of changeLines(changes)) {
      const errno = refused.get(line);
      line++;
      if (errno === undefined) continue;
      failures.push({
        message: refusal(change, errno),
        line,
        text: renderChange(change),
        candidates: [line],
      });
    }
    const first = failures[0];
    const unanswered = changes.length - answered;
    const what =
      failures.length > 0
        ? `refused ${failures.length} of ${changes.length} changes: ${first?.message} (line ${first?.line}: ${first?.text})`
        : `left ${unanswered} of ${changes.length} changes unanswered`;
    const err = new IpvsError({
      kind: "restore",
      command: "netlink",
      message: `IPVS netlink ${what}`,
      stderr: failures.map((f) => `${f.message}\n`).join(""),
      failures,
    });
    log.error("IPVS netlink write failed", { err, failures: failures.length });
    return err;
  }

  return {
    sent,
    apply,
    read: () => ipvsadm.read(),
    readServices: (keys) => ipvsadm.readServices(keys),
    setTimeouts: (t) => ipvsadm.setTimeouts(t),
    flush: () => ipvsadm.flush(),
    noteWritten: (lines) => ipvsadm.noteWritten?.(lines),
  };
}
