// An nft client that sends what it can to the kernel over netlink and the rest to nft. nft 1.0.6
// reads every chain of the ruleset before a transaction whose rules or elements name a chain:
// at 45,000 Services that is most of a partial sync's time, while the kernel resolves the names
// itself. So a transaction that keeps its operations and holds only what encode.ts writes goes
// to the socket as one batch (atomic, as `nft -f` is); any other transaction, every check, read
// and table call goes to nft. A batch the kernel refuses fails as nft would: an NftError naming
// the operation, the table left as it was.

import { type Logger, nullLogger } from "../../../log/logger.ts";
import type { IPFamily } from "../../../util/net/family.ts";
import { type NetlinkReply, SequenceNumbers } from "../../netlink-socket/messages.ts";
import { MAX_BATCH_BYTES, type NetlinkSocket, NetlinkSocketError } from "../../netlink-socket/socket.ts";
import { NftError } from "../errors.ts";
import { renderOperation } from "../transaction.ts";
import type { NftClient, NftOperation, NftTransactionLike } from "../types.ts";
import { type ContainerTypes, encodeBatch } from "./encode.ts";

/** Above this many messages no acks are asked for: errors alone, as nft does. */
const ACKED_MESSAGES = 2048;

/** What `nft -f` says for the errnos a batch meets (strerror's words, which NftError reads). */
const ERRNO_TEXT: Readonly<Record<number, string>> = {
  1: "Operation not permitted",
  2: "No such file or directory",
  12: "Cannot allocate memory",
  16: "Device or resource busy",
  17: "File exists",
  22: "Invalid argument",
  28: "No space left on device",
  34: "Numerical result out of range",
  40: "Too many levels of symbolic links",
  85: "Interrupted system call should be restarted",
  90: "Message too long",
  95: "Operation not supported",
  105: "No buffer space available",
};

const errnoText = (errno: number): string => ERRNO_TEXT[errno] ?? `errno ${errno}`;

export interface NetlinkNftClientOptions {
  /** The client everything not sent over netlink goes to (bound to the same table). */
  readonly nft: NftClient;
  readonly family: IPFamily;
  readonly socket: NetlinkSocket;
  /** The types of the table's sets and maps, by name (elements are written by type). */
  readonly containerTypes: ContainerTypes;
  readonly logger?: Logger;
}

/** Counts of what went where, for logs and tests. */
export interface NetlinkNftClient extends NftClient {
  readonly sent: { netlink: number; nft: number };
}

export function createNetlinkNftClient(opts: NetlinkNftClientOptions): NetlinkNftClient {
  const { nft, family, socket } = opts;
  const log = (opts.logger ?? nullLogger).named("nft-netlink");
  const where = `${nft.family} ${nft.table}`;
  const sent = { netlink: 0, nft: 0 };
  const seqs = new SequenceNumbers();

  function fail(
    ops: readonly NftOperation[],
    index: number,
    reply: NetlinkReply | undefined,
    why: string,
  ): never {
    // The failed operation's text, numbered as its line in the transaction nft would have read.
    const input = ops.map((op) => renderOperation(where, op)).join("\n");
    const line = index + 1;
    const detail = reply?.message ? ` (${reply.message})` : "";
    const stderr = `netlink:${line}:1-1: Error: ${why}${detail}`;
    throw new NftError(["(netlink batch)"], 1, stderr, index >= 0 ? input : undefined);
  }

  async function run(tx: NftTransactionLike): Promise<void> {
    if (tx.isEmpty?.() ?? tx.size === 0) return;
    const ops = tx.operations?.();
    const acked = ops !== undefined && ops.length <= ACKED_MESSAGES;
    const batch =
      ops && encodeBatch(ops, family, nft.table, opts.containerTypes, { firstSeq: seqs.peek(), ack: acked });
    if (!ops || !batch || batch.bytes.length > MAX_BATCH_BYTES) {
      sent.nft++;
      return nft.run(tx);
    }
    // The batch's messages plus its begin and end.
    seqs.take(batch.messages + 2);
    const bytes = batch.bytes;
    let replies: NetlinkReply[];
    const start = performance.now();
    try {
      replies = await socket.send(bytes);
    } catch (err) {
      if (!(err instanceof NetlinkSocketError)) throw err;
      fail(ops, -1, undefined, `the batch's outcome is unknown: ${err.message}`);
    }
    sent.netlink++;
    const answered = new Set<number>();
    for (const r of replies) {
      const index = batch.operationOf.get(r.seq);
      if (r.error !== 0) fail(ops, index ?? -1, r, errnoText(-r.error));
      if (index !== undefined) answered.add(index);
    }
    if (acked && answered.size < ops.length) {
      const missing = ops.findIndex((_, i) => !answered.has(i));
      fail(ops, missing, undefined, "the kernel did not answer this operation");
    }
    log.v(2).info("Sent nftables transaction over netlink", {
      table: where,
      operations: ops.length,
      bytes: bytes.length,
      thread: socket.sentFrom,
      ms: Math.round((performance.now() - start) * 10) / 10,
    });
  }

  const listTableJson = nft.listTableJson?.bind(nft);
  return {
    family: nft.family,
    table: nft.table,
    sent,
    run,
    check: (tx) => nft.check(tx),
    list: (kind) => nft.list(kind),
    ...(listTableJson ? { listTableJson } : {}),
    version: () => nft.version(),
    listTables: () => nft.listTables(),
    listTable: () => nft.listTable(),
    deleteTable: (t) => nft.deleteTable(t),
  };
}
