// A netlink socket that a client sends batches on (nf_tables over NETLINK_NETFILTER, IPVS over
// NETLINK_GENERIC). It is opened on the calling thread (so in that thread's network namespace);
// the sends run on a worker thread that owns them, since the kernel works inside the send and
// this thread's HTTP servers must keep answering meanwhile. Where no worker can be started the
// sends run here. Only under Bun (the compiled binary): elsewhere, or without libc or the
// socket, the opener says why and the caller keeps to its tool (nft, ipvsadm).

import {
  type Libc,
  loadLibc,
  type NETLINK_GENERIC,
  NETLINK_NETFILTER,
  NetlinkSocketError,
  openNetlinkFd,
  sendBatch,
} from "./io.ts";
import type { NetlinkReply } from "./messages.ts";
import type { WorkerReply, WorkerRequest } from "./worker.ts";

export { MAX_BATCH_BYTES, NETLINK_GENERIC, NETLINK_NETFILTER, NetlinkSocketError } from "./io.ts";

/**
 * Batches up to this size reach the worker through one buffer both threads share (copied in),
 * bigger ones as copies of their own.
 */
const SHARED_BATCH_MAX = 4 << 20;

/** Sends batches one at a time; each answers with the replies the kernel queued for it. */
export interface NetlinkSocket {
  send(batch: Uint8Array): Promise<NetlinkReply[]>;
  /** Where the last batch was sent from: the worker, or the calling thread (none could start). */
  readonly sentFrom: "worker" | "caller" | undefined;
  close(): void;
}

/** Opens a socket in the network namespace of the calling thread, or says why it cannot. */
export type NetlinkSocketOpener = () => NetlinkSocket | string;

/**
 * Where the worker's module is: beside this one when run from the sources; in a compiled binary,
 * at its path under src/, which scripts/build gives as an entry point of its own.
 */
function workerURL(): string {
  return import.meta.url.startsWith("file:///$bunfs/")
    ? "./host/netlink-socket/worker.ts"
    : new URL("./worker.ts", import.meta.url).href;
}

/**
 * Loads libc's socket calls and opens sockets of one netlink protocol (NETLINK_NETFILTER by
 * default); a string says why they cannot be had here.
 */
export async function netlinkSocketOpener(
  protocol: typeof NETLINK_NETFILTER | typeof NETLINK_GENERIC = NETLINK_NETFILTER,
): Promise<NetlinkSocketOpener | string> {
  const libc = await loadLibc();
  if (typeof libc === "string") return libc;
  return () => {
    const fd = openNetlinkFd(libc, protocol);
    return typeof fd === "string" ? fd : socketOn(libc, fd);
  };
}

/** A socket of `protocol` in this thread's namespace, or a string saying why there is none. */
export async function openNetlinkSocket(
  protocol: typeof NETLINK_NETFILTER | typeof NETLINK_GENERIC,
): Promise<NetlinkSocket | string> {
  const opener = await netlinkSocketOpener(protocol);
  return typeof opener === "string" ? opener : opener();
}

function socketOn(libc: Libc, fd: number): NetlinkSocket {
  let worker: Worker | undefined;
  let workerFailed = false;
  let nextId = 0;
  const pending = new Map<number, { resolve: (r: NetlinkReply[]) => void; reject: (e: Error) => void }>();
  const buf = new Uint8Array(1 << 16);
  // One batch at a time, in the order given.
  let queue: Promise<unknown> = Promise.resolve();
  let open = true;
  let sentFrom: NetlinkSocket["sentFrom"];
  let shared: SharedArrayBuffer | undefined;

  const failAll = (err: Error) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };

  function startWorker(): Worker | undefined {
    if (worker || workerFailed) return worker;
    try {
      const w = new Worker(workerURL());
      w.onmessage = (e: MessageEvent<WorkerReply>) => {
        const reply = e.data;
        const p = pending.get(reply.id);
        if (!p) return;
        pending.delete(reply.id);
        if ("replies" in reply) p.resolve(reply.replies);
        else p.reject(new NetlinkSocketError(reply.failure.call, reply.failure.errno));
      };
      w.onerror = (e) => {
        // Whatever it was doing has an unknown outcome; the next batch starts a new worker.
        worker = undefined;
        failAll(new NetlinkSocketError(`worker: ${e.message}`, 0));
      };
      w.postMessage({ kind: "fd", fd } satisfies WorkerRequest);
      shared = undefined;
      // Never what keeps the process alive.
      (w as { unref?: () => void }).unref?.();
      worker = w;
    } catch {
      workerFailed = true;
    }
    return worker;
  }

  async function sendOne(batch: Uint8Array): Promise<NetlinkReply[]> {
    if (!open) throw new NetlinkSocketError("send on a closed socket", 0);
    const w = startWorker();
    sentFrom = w ? "worker" : "caller";
    if (!w) return sendBatch(libc, fd, batch, buf);
    const id = nextId++;
    return new Promise<NetlinkReply[]>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      if (batch.length > SHARED_BATCH_MAX) {
        w.postMessage({ kind: "batch", id, bytes: batch } satisfies WorkerRequest);
        return;
      }
      // The worker reads the shared buffer only while this batch is pending: one at a time.
      if (!shared || shared.byteLength < batch.length) {
        let size = 1 << 16;
        while (size < batch.length) size *= 2;
        shared = new SharedArrayBuffer(size);
        w.postMessage({ kind: "buffer", buffer: shared } satisfies WorkerRequest);
      }
      new Uint8Array(shared).set(batch);
      w.postMessage({ kind: "shared-batch", id, length: batch.length } satisfies WorkerRequest);
    });
  }

  return {
    get sentFrom() {
      return sentFrom;
    },
    send(batch) {
      const result = queue.then(() => sendOne(batch));
      queue = result.catch(() => undefined);
      return result;
    },
    close() {
      if (!open) return;
      open = false;
      worker?.terminate();
      worker = undefined;
      failAll(new NetlinkSocketError("socket closed", 0));
      libc.close(fd);
    },
  };
}
