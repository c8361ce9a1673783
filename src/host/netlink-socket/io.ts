// The libc side of a netlink socket (bun:ffi): loading the calls, opening and setting up the
// socket, and one synchronous round: send a batch, read every reply the kernel queued. The
// kernel handles every message of a datagram (an nf_tables batch with its commit, a run of IPVS
// commands) inside the send call, so every reply is there when it returns and is read without
// waiting. Used by the worker that owns the sends (worker.ts) and, where no worker can be had,
// by socket.ts on the calling thread.

import { errText } from "../../util/err-text.ts";
import { type NetlinkReply, readReplies } from "./messages.ts";

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
/** The netlink protocols spoken here. */
export const NETLINK_NETFILTER = 12;
export const NETLINK_GENERIC = 16;
const SOL_SOCKET = 1;
const SO_SNDBUFFORCE = 32;
const SO_RCVBUFFORCE = 33;
const SOL_NETLINK = 270;
const NETLINK_CAP_ACK = 10;
const NETLINK_EXT_ACK = 11;
const MSG_DONTWAIT = 0x40;
const EINTR = 4;
const EAGAIN = 11;
const ENOBUFS = 105;

/** The largest batch sent in one go (the send buffer is forced to this). */
export const MAX_BATCH_BYTES = 32 * 1024 * 1024;
/** Room for the replies of a batch (client.ts asks for acks only when they fit). */
const RECEIVE_BUFFER = 8 * 1024 * 1024;

/** A failure of the socket itself (not a refusal of the batch): the call and its errno. */
export class NetlinkSocketError extends Error {
  override readonly name = "NetlinkSocketError";
  constructor(
    readonly call: string,
    readonly errno: number,
  ) {
    super(
      `netlink ${call}: errno ${errno}${errno === ENOBUFS ? " (replies overflowed the receive buffer)" : ""}`,
    );
  }
}

export interface Libc {
  socket(domain: number, type: number, protocol: number): number;
  bind(fd: number, addr: Uint8Array, len: number): number;
  sendto(
    fd: number,
    buf: Uint8Array,
    len: number,
    flags: number,
    addr: Uint8Array,
    alen: number,
  ): number | bigint;
  recv(fd: number, buf: Uint8Array, len: number, flags: number): number | bigint;
  setsockopt(fd: number, level: number, opt: number, value: Int32Array, len: number): number;
  close(fd: number): number;
  /** errno of this thread's last failed call. */
  errno(): number;
}

/** libc's calls through bun:ffi; a string says why they cannot be had (not Bun, no libc). */
export async function loadLibc(): Promise<Libc | string> {
  if (typeof (globalThis as { Bun?: unknown }).Bun === "undefined") return "not running under Bun";
  try {
    // A name the bundler and other runtimes leave alone until this line runs.
    const specifier = ["bun", "ffi"].join(":");
    const ffi = (await import(specifier)) as typeof import("bun:ffi");
    const { FFIType: T } = ffi;
    const calls = ffi.dlopen("libc.so.6", {
      socket: { args: [T.i32, T.i32, T.i32], returns: T.i32 },
      bind: { args: [T.i32, T.ptr, T.u32], returns: T.i32 },
      sendto: { args: [T.i32, T.ptr, T.u64, T.i32, T.ptr, T.u32], returns: T.i64 },
      recv: { args: [T.i32, T.ptr, T.u64, T.i32], returns: T.i64 },
      setsockopt: { args: [T.i32, T.i32, T.i32, T.ptr, T.u32], returns: T.i32 },
      close: { args: [T.i32], returns: T.i32 },
      __errno_location: { args: [], returns: T.ptr },
    }).symbols;
    return {
      socket: (d, t, p) => calls.socket(d, t, p),
      bind: (fd, a, l) => calls.bind(fd, a, l),
      sendto: (fd, b, l, f, a, al) => calls.sendto(fd, b, l, f, a, al),
      recv: (fd, b, l, f) => calls.recv(fd, b, l, f),
      setsockopt: (fd, lv, o, v, l) => calls.setsockopt(fd, lv, o, v, l),
      close: (fd) => calls.close(fd),
      errno() {
        const at = calls.__errno_location();
        return at ? ffi.read.i32(at, 0) : -1;
      },
    };
  } catch (err) {
    return `libc is not reachable: ${errText(err)}`;
  }
}

/** The sockaddr_nl of the kernel (port 0), and of a socket before bind picks its port. */
function sockaddr(): Uint8Array {
  const sa = new Uint8Array(12);
  new DataView(sa.buffer).setUint16(0, AF_NETLINK, true);
  return sa;
}

/**
 * A socket in the network namespace of the calling thread, ready for batches: its descriptor,
 * or a string saying why there is none.
 */
export function openNetlinkFd(libc: Libc, protocol: number): number | string {
  const fd = libc.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, protocol);
  if (fd < 0) return `socket(AF_NETLINK, protocol ${protocol}): errno ${libc.errno()}`;
  const option = (level: number, opt: number, value: number): boolean =>
    libc.setsockopt(fd, level, opt, Int32Array.of(value), 4) === 0;
  // Acks echo only the header of the message; errors say which attribute and why.
  const ready =
    libc.bind(fd, sockaddr(), 12) === 0 &&
    option(SOL_NETLINK, NETLINK_CAP_ACK, 1) &&
    option(SOL_NETLINK, NETLINK_EXT_ACK, 1) &&
    option(SOL_SOCKET, SO_SNDBUFFORCE, MAX_BATCH_BYTES) &&
    option(SOL_SOCKET, SO_RCVBUFFORCE, RECEIVE_BUFFER);
  if (ready) return fd;
  const e = libc.errno();
  libc.close(fd);
  return `setting up the netlink socket: errno ${e}`;
}

const KERNEL = sockaddr();

/** Sends one batch on `fd` and reads every reply queued for it; NetlinkSocketError on failure. */
export function sendBatch(libc: Libc, fd: number, batch: Uint8Array, buf: Uint8Array): NetlinkReply[] {
  // Replies of an earlier batch that were never read would be taken for this one's.
  for (let n = 0; n < 1 << 20; n++) if (Number(libc.recv(fd, buf, buf.length, MSG_DONTWAIT)) < 0) break;
  for (let attempt = 0; ; attempt++) {
    if (Number(libc.sendto(fd, batch, batch.length, 0, KERNEL, 12)) >= 0) break;
    const e = libc.errno();
    if (e !== EINTR || attempt >= 8) throw new NetlinkSocketError("sendto", e);
  }
  const replies: NetlinkReply[] = [];
  // Bounded by what the receive buffer can hold: each datagram holds at least one reply.
  for (let n = 0; n < RECEIVE_BUFFER; n++) {
    const got = Number(libc.recv(fd, buf, buf.length, MSG_DONTWAIT));
    if (got < 0) {
      const e = libc.errno();
      if (e === EAGAIN) break;
      if (e === EINTR) continue;
      throw new NetlinkSocketError("recv", e);
    }
    replies.push(...readReplies(buf, got));
  }
  return replies;
}
