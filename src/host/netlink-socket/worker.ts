// The worker thread that owns the sends: the kernel handles a batch inside the send call (an
// nf_tables commit at 45,000 Services takes 60-200 ms; thousands of IPVS commands take longer),
// which on the main thread would hold up the HTTP servers and everything else for that long. It is given the socket's descriptor
// (opened by socket.ts in the namespace it was asked for) and answers each batch with the
// kernel's replies or the socket's failure.

import { type Libc, loadLibc, NetlinkSocketError, sendBatch } from "./io.ts";

/**
 * What the worker is sent: the descriptor once, then batches: a batch's bytes, or its length in
 * the shared buffer last sent (where the calling thread copies batches that fit, so a first
 * sync's thousands of sends leave no copies behind in this thread's heap).
 */
export type WorkerRequest =
  | { readonly kind: "fd"; readonly fd: number }
  | { readonly kind: "buffer"; readonly buffer: SharedArrayBuffer }
  | { readonly kind: "batch"; readonly id: number; readonly bytes: Uint8Array }
  | { readonly kind: "shared-batch"; readonly id: number; readonly length: number };

/** What it answers for each batch (or once, when libc cannot be loaded: id -1). */
export type WorkerReply =
  | { readonly id: number; readonly replies: import("./messages.ts").NetlinkReply[] }
  | { readonly id: number; readonly failure: { readonly call: string; readonly errno: number } };

const scope = globalThis as unknown as {
  onmessage: ((e: MessageEvent<WorkerRequest>) => void) | null;
  postMessage(m: WorkerReply): void;
};

let fd = -1;
let shared: SharedArrayBuffer | undefined;
let libc: Libc | undefined;
const buf = new Uint8Array(1 << 16);
const loading = loadLibc();

scope.onmessage = async (e) => {
  const req = e.data;
  if (req.kind === "fd") {
    fd = req.fd;
    return;
  }
  if (req.kind === "buffer") {
    shared = req.buffer;
    return;
  }
  const loaded = libc ?? (await loading);
  if (typeof loaded === "string") {
    scope.postMessage({ id: req.id, failure: { call: `worker: ${loaded}`, errno: 0 } });
    return;
  }
  libc = loaded;
  try {
    const bytes =
      req.kind === "batch" ? req.bytes : new Uint8Array(shared ?? new ArrayBuffer(0), 0, req.length);
    scope.postMessage({ id: req.id, replies: sendBatch(libc, fd, bytes, buf) });
  } catch (err) {
    const failure =
      err instanceof NetlinkSocketError
        ? { call: err.call, errno: err.errno }
        : { call: String(err), errno: 0 };
    scope.postMessage({ id: req.id, failure });
  }
};
