// The bytes every netlink family shares: a writer of messages and attributes (nested or not,
// padded to four bytes) and the reader of what the kernel sends back (acks and errors with
// their extended-ack text and offset, and the data messages a request is answered with).
// Numbers are from the kernel's uapi netlink.h. Pure: no socket here. A family's own fixed
// header (nfgenmsg, genlmsghdr) is given to `message`/`begin` as bytes by its module.

export const NLM_F_REQUEST = 0x1;
export const NLM_F_ACK = 0x4;
export const NLM_F_CREATE = 0x400;
export const NLM_F_APPEND = 0x800;
/** In an NLMSG_ERROR: only the failed message's header is echoed. */
const NLM_F_CAPPED = 0x100;
/** In an NLMSG_ERROR: extended-ack attributes follow. */
const NLM_F_ACK_TLVS = 0x200;
const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;
const NLA_F_NESTED = 0x8000;
const NLMSGERR_ATTR_MSG = 1;
const NLMSGERR_ATTR_OFFS = 2;
export const NLMSG_HEADER = 16;

/** Sequence numbers stay in 30 bits, so a sum of two never overflows a 32-bit field. */
export const SEQ_MASK = 0x3fffffff;

/** `seq` plus `n`, wrapped as sequence numbers are. */
export const seqAdd = (seq: number, n: number): number => (seq + n) & SEQ_MASK;

/** How far `seq` is past `first` (a reply's message within a batch), wrapped. */
export const seqOffset = (seq: number, first: number): number => (seq - first) & SEQ_MASK;

/** A client's sequence numbers: runs of them handed out in order, starting from the clock. */
export class SequenceNumbers {
  private next = (Date.now() / 1000) & SEQ_MASK;

  /** The number the next take starts at (for a batch counted only once it is made). */
  peek(): number {
    return this.next;
  }

  /** The first of `n` numbers reserved for one batch. */
  take(n: number): number {
    const first = this.next;
    this.next = seqAdd(this.next, n);
    return first;
  }
}

const utf8 = new TextEncoder();

/** Host byte order is little-endian on every platform Bun builds for (x86-64, arm64). */
export const HOST_LE = true;

/** A growing buffer that netlink messages are written into, one after another. */
export class NetlinkWriter {
  protected buf = new Uint8Array(4096);
  protected view = new DataView(this.buf.buffer);
  protected off = 0;

  get length(): number {
    return this.off;
  }

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.off);
  }

  protected room(n: number): void {
    if (this.off + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.off + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.off));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  /** An attribute with raw payload; nla_len counts the payload, not the padding after it. */
  attr(type: number, data: Uint8Array): this {
    const padded = (data.length + 3) & ~3;
    this.room(4 + padded);
    this.view.setUint16(this.off, 4 + data.length, HOST_LE);
    this.view.setUint16(this.off + 2, type, HOST_LE);
    this.buf.set(data, this.off + 4);
    this.buf.fill(0, this.off + 4 + data.length, this.off + 4 + padded);
    this.off += 4 + padded;
    return this;
  }

  /** Forgets what was written (the buffer is kept for the next messages). */
  reset(): void {
    this.off = 0;
  }

  /** A NUL-terminated string. */
  str(type: number, text: string): this {
    const encoded = utf8.encode(text);
    const data = new Uint8Array(encoded.length + 1);
    data.set(encoded);
    return this.attr(type, data);
  }

  /** A fixed-width integer in the given byte order, written in place (nothing allocated). */
  int(type: number, bytes: 1 | 2 | 4, value: number, littleEndian: boolean): this {
    this.room(8);
    const at = this.off;
    this.view.setUint16(at, 4 + bytes, HOST_LE);
    this.view.setUint16(at + 2, type, HOST_LE);
    this.view.setUint32(at + 4, 0, HOST_LE);
    if (bytes === 1) this.view.setUint8(at + 4, value);
    else if (bytes === 2) this.view.setUint16(at + 4, value, littleEndian);
    else this.view.setUint32(at + 4, value >>> 0, littleEndian);
    this.off += 8;
    return this;
  }

  /** A nested attribute's start, for a body written without a callback; close it with endNest. */
  beginNest(): number {
    this.room(4);
    this.off += 4;
    return this.off - 4;
  }

  endNest(start: number, type: number): this {
    this.view.setUint16(start, this.off - start, HOST_LE);
    this.view.setUint16(start + 2, type | NLA_F_NESTED, HOST_LE);
    return this;
  }

  /** 16 bytes of union nf_inet_addr holding an IPv4 address (its 32-bit value), the rest zero. */
  inet4(type: number, value: number): this {
    this.room(20);
    const at = this.off;
    this.view.setUint16(at, 20, HOST_LE);
    this.view.setUint16(at + 2, type, HOST_LE);
    this.view.setUint32(at + 4, value >>> 0, false);
    this.buf.fill(0, at + 8, at + 20);
    this.off += 20;
    return this;
  }

  nest(type: number, body: (w: this) => void): this {
    const start = this.beginNest();
    body(this);
    return this.endNest(start, type);
  }

  /**
   * A message's start (nlmsghdr and the family's header written), for a body written without a
   * callback; close it with end.
   */
  begin(type: number, flags: number, seq: number, header: Uint8Array): number {
    const start = this.off;
    this.room(NLMSG_HEADER + header.length);
    this.view.setUint16(start + 4, type, HOST_LE);
    this.view.setUint16(start + 6, flags, HOST_LE);
    this.view.setUint32(start + 8, seq, HOST_LE);
    this.view.setUint32(start + 12, 0, HOST_LE);
    this.buf.set(header, start + NLMSG_HEADER);
    this.off += NLMSG_HEADER + header.length;
    return start;
  }

  end(start: number): this {
    this.view.setUint32(start, this.off - start, HOST_LE);
    return this;
  }

  /**
   * One message: nlmsghdr, then the family's fixed header (`header` writes its bytes into the
   * 4-byte slot after nlmsghdr), then what `body` writes; the length is filled in after.
   */
  message(type: number, flags: number, seq: number, header: Uint8Array, body?: (w: this) => void): this {
    const start = this.begin(type, flags, seq, header);
    body?.(this);
    return this.end(start);
  }
}

/**
 * One message the kernel sent back. An NLMSG_ERROR is an ack when `error` is 0, else a negative
 * errno; any other message (a request's answer) carries its type and its bytes after nlmsghdr
 * in `data`, with `error` 0.
 */
export interface NetlinkReply {
  readonly seq: number;
  readonly error: number;
  /** The extended ack's text, when the kernel gave one. */
  readonly message?: string;
  /** Offset of the offending attribute in the failed message, when the kernel gave one. */
  readonly offset?: number;
  /** A data message: its type and payload. */
  readonly data?: { readonly type: number; readonly bytes: Uint8Array };
}

const text = new TextDecoder();

/** Every message in one received datagram of `length` bytes (NLMSG_DONE left out). */
export function readReplies(buf: Uint8Array, length: number): NetlinkReply[] {
  const view = new DataView(buf.buffer, buf.byteOffset, length);
  const out: NetlinkReply[] = [];
  for (let off = 0; off + NLMSG_HEADER <= length; ) {
    const len = view.getUint32(off, HOST_LE);
    if (len < NLMSG_HEADER || off + len > length) break;
    const type = view.getUint16(off + 4, HOST_LE);
    const flags = view.getUint16(off + 6, HOST_LE);
    if (type === NLMSG_ERROR && len >= NLMSG_HEADER + 4 + NLMSG_HEADER) {
      const reply: { seq: number; error: number; message?: string; offset?: number } = {
        error: view.getInt32(off + NLMSG_HEADER, HOST_LE),
        seq: view.getUint32(off + NLMSG_HEADER + 4 + 8, HOST_LE),
      };
      if (flags & NLM_F_ACK_TLVS) {
        const echoed = flags & NLM_F_CAPPED ? NLMSG_HEADER : view.getUint32(off + NLMSG_HEADER + 4, HOST_LE);
        const end = off + len;
        for (let at = off + NLMSG_HEADER + 4 + echoed; at + 4 <= end; ) {
          const alen = view.getUint16(at, HOST_LE);
          if (alen < 4 || at + alen > end) break;
          const atype = view.getUint16(at + 2, HOST_LE) & 0x3fff;
          if (atype === NLMSGERR_ATTR_MSG)
            reply.message = text.decode(buf.subarray(at + 4, at + alen)).replace(/\0+$/, "");
          if (atype === NLMSGERR_ATTR_OFFS && alen >= 8) reply.offset = view.getUint32(at + 4, HOST_LE);
          at += (alen + 3) & ~3;
        }
      }
      out.push(reply);
    } else if (type !== NLMSG_ERROR && type !== NLMSG_DONE) {
      out.push({
        seq: view.getUint32(off + 8, HOST_LE),
        error: 0,
        data: { type, bytes: buf.slice(off + NLMSG_HEADER, off + len) },
      });
    }
    off += (len + 3) & ~3;
  }
  return out;
}

/** The attributes of a payload from `from` on, by type (nested flag cleared); the last wins. */
export function readAttributes(bytes: Uint8Array, from = 0): Map<number, Uint8Array> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const out = new Map<number, Uint8Array>();
  for (let at = from; at + 4 <= bytes.length; ) {
    const len = view.getUint16(at, HOST_LE);
    if (len < 4 || at + len > bytes.length) break;
    out.set(view.getUint16(at + 2, HOST_LE) & 0x3fff, bytes.subarray(at + 4, at + len));
    at += (len + 3) & ~3;
  }
  return out;
}
