// The bytes of nf_tables over netlink on top of netlink-socket/messages.ts: the nfgenmsg header,
// big-endian integers and the batch that brackets a transaction. Numbers are from the kernel's
// uapi headers (nfnetlink.h, nf_tables.h). Pure: no socket here.

import { NetlinkWriter, NLM_F_REQUEST } from "../../netlink-socket/messages.ts";

const NFNL_SUBSYS_NFTABLES = 10;
const NFNL_MSG_BATCH_BEGIN = 0x10;
const NFNL_MSG_BATCH_END = 0x11;
const NFPROTO_UNSPEC = 0;
/** nlmsghdr plus nfgenmsg: where a message's attributes start. */
export const MESSAGE_HEADER = 20;

/** An nf_tables message type (NFT_MSG_*) as netlink carries it. */
export const nftMessageType = (msg: number): number => (NFNL_SUBSYS_NFTABLES << 8) | msg;

/** An nf_tables message writer: nfgenmsg headers, big-endian integers, the batch brackets. */
export class MessageWriter extends NetlinkWriter {
  /** nf_tables integers travel big-endian. */
  be32(type: number, value: number): this {
    return this.int(type, 4, value, false);
  }

  /** A 64-bit nf_tables integer (timeouts in ms), big-endian. */
  be64(type: number, value: number): this {
    const data = new Uint8Array(8);
    new DataView(data.buffer).setBigUint64(0, BigInt(value), false);
    return this.attr(type, data);
  }

  /** nlmsghdr and nfgenmsg (family, version 0, resource id big-endian), then what `body` writes. */
  nftMessage(
    type: number,
    flags: number,
    seq: number,
    family: number,
    resId: number,
    body?: (w: this) => void,
  ): this {
    const header = new Uint8Array(4);
    header[0] = family;
    new DataView(header.buffer).setUint16(2, resId, false);
    return this.message(type, flags, seq, header, body);
  }

  batchBegin(seq: number): this {
    return this.nftMessage(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, seq, NFPROTO_UNSPEC, NFNL_SUBSYS_NFTABLES);
  }

  batchEnd(seq: number): this {
    return this.nftMessage(NFNL_MSG_BATCH_END, NLM_F_REQUEST, seq, NFPROTO_UNSPEC, NFNL_SUBSYS_NFTABLES);
  }
}

export {
  type NetlinkReply,
  NLM_F_ACK,
  NLM_F_APPEND,
  NLM_F_CREATE,
  NLM_F_REQUEST,
  readReplies,
} from "../../netlink-socket/messages.ts";
