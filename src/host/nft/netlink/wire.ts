// The bytes of nf_tables over netlink: netlink and nfnetlink headers, attributes (nested or not,
// padded to four bytes) and the batch that brackets a transaction, plus the reader of the
// kernel's replies (acks and errors, with the extended-ack message and offset). Numbers are from
// the kernel's uapi headers (netlink.h, nfnetlink.h, nf_tables.h). Pure: no socket here.

export const NLM_F_REQUEST = 0x1;
export const NLM_F_ACK = 0x4;
export const NLM_F_CREATE = 0x400;
export const NLM_F_APPEND = 0x800;
/** In an NLMSG_ERROR: only the failed message's header is echoed. */
const NLM_F_CAPPED = 0x100;
/** In an NLMSG_ERROR: extended-ack attributes follow. */
const NLM_F_ACK_TLVS = 0x200;
const NLMSG_ERROR = 2;
const NLA_F_NESTED = 0x8000;
const NLMSGERR_ATTR_MSG = 1;
const NLMSGERR_ATTR_OFFS = 2;

const NFNL_SUBSYS_NFTABLES = 10;
const NFNL_MSG_BATCH_BEGIN = 0x10;
const NFNL_MSG_BATCH_END = 0x11;
const NFPROTO_UNSPEC = 0;
const NLMSG_HEADER = 16;
/** nlmsghdr plus nfgenmsg: where a message's attributes start. */
export const MESSAGE_HEADER = 20;

/** An nf_tables message type (NFT_MSG_*) as netlink carries it. */
export const nftMessageType = (msg: number): number => (NFNL_SUBSYS_NFTABLES << 8) | msg;

const utf8 = new TextEncoder();

/** Host byte order is little-endian on every platform Bun builds for (x86-64, arm64). */
const HOST_LE = true;

/** A growing buffer that netlink messages are written into, one after another. */
export class MessageWriter {
  private buf = new Uint8Array(4096);
  private view = new DataView(this.buf.buffer);
  private off = 0;

  get length(): number {
    return this.off;
  }

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.off);
  }

  private room(n: number): void {
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

  /** A NUL-terminated string, as libnftnl sends names. */
  str(type: number, text: string): this {
    const encoded = utf8.encode(text);
    const data = new Uint8Array(encoded.length + 1);
    data.set(encoded);
    return this.attr(type, data);
  }

  /** nf_tables integers travel big-endian. */
  be32(type: number, value: number): this {
    const data = new Uint8Array(4);
    new DataView(data.buffer).setUint32(0, value >>> 0, false);
    return this.attr(type, data);
  }

  /** A 64-bit nf_tables integer (timeouts in ms), big-endian. */
  be64(type: number, value: number): this {
    const data = new Uint8Array(8);
    new DataView(data.buffer).setBigUint64(0, BigInt(value), false);
    return this.attr(type, data);
  }

  nest(type: number, body: (w: this) => void): this {
    const start = this.off;
    this.room(4);
    this.off += 4;
    body(this);
    this.view.setUint16(start, this.off - start, HOST_LE);
    this.view.setUint16(start + 2, type | NLA_F_NESTED, HOST_LE);
    return this;
  }

  /** nlmsghdr and nfgenmsg, then what `body` writes; the length is filled in after. */
  message(
    type: number,
    flags: number,
    seq: number,
    family: number,
    resId: number,
    body?: (w: this) => void,
  ): this {
    const start = this.off;
    this.room(MESSAGE_HEADER);
    this.view.setUint16(start + 4, type, HOST_LE);
    this.view.setUint16(start + 6, flags, HOST_LE);
    this.view.setUint32(start + 8, seq, HOST_LE);
    // The port id is the kernel's to fill in.
    this.view.setUint32(start + 12, 0, HOST_LE);
    this.buf[start + 16] = family;
    this.buf[start + 17] = 0;
    this.view.setUint16(start + 18, resId, false);
    this.off += MESSAGE_HEADER;
    body?.(this);
    this.view.setUint32(start, this.off - start, HOST_LE);
    return this;
  }

  batchBegin(seq: number): this {
    return this.message(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, seq, NFPROTO_UNSPEC, NFNL_SUBSYS_NFTABLES);
  }

  batchEnd(seq: number): this {
    return this.message(NFNL_MSG_BATCH_END, NLM_F_REQUEST, seq, NFPROTO_UNSPEC, NFNL_SUBSYS_NFTABLES);
  }
}

/** One NLMSG_ERROR the kernel sent back: an ack when `error` is 0, else a negative errno. */
export interface NetlinkReply {
  readonly seq: number;
  readonly error: number;
  /** The extended ack's text, when the kernel gave one. */
  readonly message?: string;
  /** Offset of the offending attribute in the failed message, when the kernel gave one. */
  readonly offset?: number;
}

const text = new TextDecoder();

/** Every NLMSG_ERROR in one received datagram of `length` bytes. */
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
    }
    off += (len + 3) & ~3;
  }
  return out;
}
