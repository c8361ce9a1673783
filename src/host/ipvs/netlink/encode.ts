// IPVS changes as generic netlink messages: one IPVS_CMD_* message per line `ipvsadm --restore`
// would have run, byte for byte the message ipvsadm 1.31 sends for that line (its goldens are in
// test/host/ipvs/netlink-encode.test.ts): the virtual server always whole (family, protocol,
// address, port, scheduler, flags with a full mask, persistence timeout, netmask; blank settings
// when the line names no scheduler), and a real server whole too (family, address, port,
// forwarding method, weight, tunnel settings, thresholds).
// The changes are checked by format.ts's checkChanges before any byte is made, so this writer
// and the restore text take exactly the same input. Messages come in chunks, each one send.
// Numbers are from the kernel's uapi ip_vs.h and genetlink.h. Pure: no socket here.

import { canonicalIPv4Value, parseIPInet } from "../../../util/net/address.ts";
import type { Protocol } from "../../../util/net/protocol.ts";
import { HOST_LE, NetlinkWriter, NLM_F_ACK, NLM_F_REQUEST } from "../../netlink-socket/messages.ts";
import { parseSchedFlags } from "../syntax.ts";
import type { AddRealsChange, IpvsChange, IpvsChanges, VirtualServer, VirtualServerKey } from "../types.ts";

/** The generic netlink controller's family id and its "which id has this name" command. */
export const GENL_ID_CTRL = 0x10;
const CTRL_CMD_GETFAMILY = 3;
const CTRL_ATTR_FAMILY_ID = 1;
const CTRL_ATTR_FAMILY_NAME = 2;
/** The name IPVS registers its generic netlink family under. */
export const IPVS_FAMILY_NAME = "IPVS";
const IPVS_GENL_VERSION = 1;

const CMD = {
  NEW_SERVICE: 1,
  SET_SERVICE: 2,
  DEL_SERVICE: 3,
  NEW_DEST: 5,
  SET_DEST: 6,
  DEL_DEST: 7,
} as const;
const CMD_ATTR_SERVICE = 1;
const CMD_ATTR_DEST = 2;
const SVC_ATTR = {
  AF: 1,
  PROTOCOL: 2,
  ADDR: 3,
  PORT: 4,
  SCHED_NAME: 6,
  FLAGS: 7,
  TIMEOUT: 8,
  NETMASK: 9,
} as const;
const DEST_ATTR = {
  ADDR: 1,
  PORT: 2,
  FWD_METHOD: 3,
  WEIGHT: 4,
  U_THRESH: 5,
  L_THRESH: 6,
  ADDR_FAMILY: 11,
  TUN_TYPE: 13,
  TUN_PORT: 14,
  TUN_FLAGS: 15,
} as const;
const AF_INET = 2;
const AF_INET6 = 10;
const IPPROTO: Readonly<Record<Protocol, number>> = { TCP: 6, UDP: 17, SCTP: 132 };
const SVC_F_PERSISTENT = 0x1;
/** IP_VS_CONN_F_MASQ: upstream programs every real server masquerading. */
const FWD_MASQ = 0;
/** What ipvsadm sends for a line without -m, -g or -i (a delete): direct routing, weight 1. */
const FWD_DROUTE = 3;
/** union nf_inet_addr: an IPv4 address takes its first four bytes. */
const INET_ADDR_BYTES = 16;

/** Messages per send, and a byte bound: the acks of one send fit the receive buffer many times. */
export const CHUNK_MESSAGES = 4096;
const CHUNK_BYTES = 1 << 20;

function genlHeader(cmd: number, version: number): Uint8Array {
  return Uint8Array.of(cmd, version, 0, 0);
}

/** The request for the IPVS family's id (answered with a data message, see familyIdOf). */
export function familyRequest(seq: number): Uint8Array {
  const w = new NetlinkWriter();
  w.message(GENL_ID_CTRL, NLM_F_REQUEST | NLM_F_ACK, seq, genlHeader(CTRL_CMD_GETFAMILY, 1), (w) =>
    w.str(CTRL_ATTR_FAMILY_NAME, IPVS_FAMILY_NAME),
  );
  return w.bytes().slice();
}

/** The family id in the controller's answer (its bytes after nlmsghdr), if it has one. */
export function familyIdOf(data: Uint8Array): number | undefined {
  const view = new DataView(data.buffer, data.byteOffset, data.length);
  // genlmsghdr, then attributes.
  for (let at = 4; at + 4 <= data.length; ) {
    const len = view.getUint16(at, HOST_LE);
    if (len < 4 || at + len > data.length) break;
    if ((view.getUint16(at + 2, HOST_LE) & 0x3fff) === CTRL_ATTR_FAMILY_ID && len >= 6)
      return view.getUint16(at + 4, HOST_LE);
    at += (len + 3) & ~3;
  }
  return undefined;
}

/** An address's family and its bytes as union nf_inet_addr (already checked by checkChanges). */
function inetAddress(address: string): { af: number; bytes: Uint8Array } {
  const bytes = new Uint8Array(INET_ADDR_BYTES);
  const v4 = canonicalIPv4Value(address);
  if (v4 >= 0) {
    new DataView(bytes.buffer).setUint32(0, v4, false);
    return { af: AF_INET, bytes };
  }
  const parsed = parseIPInet(address);
  if (!parsed) throw new Error(`ipvs netlink: unchecked address ${JSON.stringify(address)}`);
  bytes.set(parsed.bytes);
  return { af: parsed.family === "IPv4" ? AF_INET : AF_INET6, bytes };
}

const scratch = new NetlinkWriter();

/** Attribute bytes made once and appended many times (a virtual server's identity, a real's address). */
function attributes(write: (w: NetlinkWriter) => void): Uint8Array {
  scratch.reset();
  write(scratch);
  return scratch.bytes().slice();
}

/** One chunk of messages: its bytes and the lines (0-based) its first and last message carry. */
export interface IpvsChunk {
  readonly bytes: Uint8Array;
  /** The first message's line; message i of the chunk is line firstLine + i, sequence firstSeq + i. */
  readonly firstLine: number;
  readonly firstSeq: number;
  readonly messages: number;
}

const SEQ_MASK = 0x3fffffff;

/** struct ip_vs_flags: the flags and a mask of every bit (ipvsadm sets them all), by flags. */
const FLAGS_BYTES = new Map<number, Uint8Array>();
function flagsBytes(bits: number): Uint8Array {
  let f = FLAGS_BYTES.get(bits);
  if (!f) {
    f = new Uint8Array(8);
    const v = new DataView(f.buffer);
    v.setUint32(0, bits, HOST_LE);
    v.setUint32(4, 0xffffffff, HOST_LE);
    FLAGS_BYTES.set(bits, f);
  }
  return f;
}

/**
 * Writes the changes' messages in chunks of up to CHUNK_MESSAGES (or about a MiB), each message
 * asking for an ack when `ack` (the kernel answers a refusal either way); message i of the whole
 * run has sequence number (firstSeq + i) & SEQ_MASK. A chunk's bytes are valid until the next
 * chunk is asked for.
 */
export function* encodeIpvsChanges(
  changes: IpvsChanges,
  familyId: number,
  firstSeq: number,
  opts: { readonly ack?: boolean } = {},
): Generator<IpvsChunk> {
  const w = new NetlinkWriter();
  const flags = opts.ack === false ? NLM_F_REQUEST : NLM_F_REQUEST | NLM_F_ACK;
  const headers = new Map<number, Uint8Array>(
    Object.values(CMD).map((cmd) => [cmd, genlHeader(cmd, IPVS_GENL_VERSION)]),
  );
  const header = (cmd: number) => headers.get(cmd)!;
  // The last virtual server's identity attributes (kept by key object: a run of real servers
  // shares it) and real-server addresses by text, capped.
  let lastKey: VirtualServerKey | undefined;
  let lastIdentity: Uint8Array = new Uint8Array(0);
  let lastFamily = AF_INET;
  const reals = new Map<string, { af: number; bytes: Uint8Array }>();

  const identity = (key: VirtualServerKey): Uint8Array => {
    if (key === lastKey) return lastIdentity;
    const addr = inetAddress(key.address);
    lastFamily = addr.af;
    lastIdentity = attributes((a) => {
      a.int(SVC_ATTR.AF, 2, addr.af, HOST_LE);
      a.int(SVC_ATTR.PROTOCOL, 2, IPPROTO[key.protocol], HOST_LE);
      a.attr(SVC_ATTR.ADDR, addr.bytes);
      a.int(SVC_ATTR.PORT, 2, key.port, false);
    });
    lastKey = key;
    return lastIdentity;
  };
  const realAddress = (address: string) => {
    let r = reals.get(address);
    if (!r) {
      if (reals.size >= 4096) reals.clear();
      r = inetAddress(address);
      reals.set(address, r);
    }
    return r;
  };

  let line = 0;
  let chunkStart = 0;
  const chunk = (): IpvsChunk => {
    const out = {
      bytes: w.bytes(),
      firstLine: chunkStart,
      firstSeq: (firstSeq + chunkStart) & SEQ_MASK,
      messages: line - chunkStart,
    };
    chunkStart = line;
    return out;
  };
  const seq = () => (firstSeq + line++) & SEQ_MASK;

  // The settings part of a virtual server's attributes.
  const settings = (w: NetlinkWriter, scheduler: string, bits: number, timeout: number) => {
    w.str(SVC_ATTR.SCHED_NAME, scheduler);
    w.attr(SVC_ATTR.FLAGS, flagsBytes(bits));
    w.int(SVC_ATTR.TIMEOUT, 4, timeout, HOST_LE);
    // ipvsadm's default netmask: the whole address.
    w.int(SVC_ATTR.NETMASK, 4, lastFamily === AF_INET6 ? 128 : 0xffffffff, HOST_LE);
  };
  // A virtual server named without settings (a real server's line, a delete), kept per key.
  let blankKey: VirtualServerKey | undefined;
  let blank: Uint8Array = new Uint8Array(0);
  const blankService = (key: VirtualServerKey): Uint8Array => {
    const id = identity(key);
    if (key === blankKey) return blank;
    blank = attributes((a) => {
      a.raw(id);
      settings(a, "", 0, 0);
    });
    blankKey = key;
    return blank;
  };

  const service = (cmd: number, s: VirtualServer) => {
    const id = identity(s);
    const bits = (s.timeout > 0 ? SVC_F_PERSISTENT : 0) | parseSchedFlags(s.scheduler, s.flags.join(","));
    w.message(familyId, flags, seq(), header(cmd), (w) =>
      w.nest(CMD_ATTR_SERVICE, (w) => {
        w.raw(id);
        settings(w, s.scheduler, bits, s.timeout);
      }),
    );
  };
  const real = (cmd: number, key: VirtualServerKey, address: string, port: number, weight?: number) => {
    const svc = blankService(key);
    const addr = realAddress(address);
    w.message(familyId, flags, seq(), header(cmd), (w) => {
      w.nest(CMD_ATTR_SERVICE, (w) => w.raw(svc));
      w.nest(CMD_ATTR_DEST, (w) => {
        w.int(DEST_ATTR.ADDR_FAMILY, 2, addr.af, HOST_LE);
        w.attr(DEST_ATTR.ADDR, addr.bytes);
        w.int(DEST_ATTR.PORT, 2, port, false);
        w.int(DEST_ATTR.FWD_METHOD, 4, weight === undefined ? FWD_DROUTE : FWD_MASQ, HOST_LE);
        w.int(DEST_ATTR.WEIGHT, 4, weight ?? 1, HOST_LE);
        w.int(DEST_ATTR.TUN_TYPE, 1, 0, HOST_LE);
        w.int(DEST_ATTR.TUN_PORT, 2, 0, false);
        w.int(DEST_ATTR.TUN_FLAGS, 2, 0, HOST_LE);
        w.int(DEST_ATTR.U_THRESH, 4, 0, HOST_LE);
        w.int(DEST_ATTR.L_THRESH, 4, 0, HOST_LE);
      });
    });
  };
  const full = () => line - chunkStart >= CHUNK_MESSAGES || w.length >= CHUNK_BYTES;

  for (const change of changes as Iterable<IpvsChange | AddRealsChange>) {
    switch (change.op) {
      case "add-reals": {
        const { key, reals: list } = change;
        for (let i = 0; i < list.length; i++) {
          real(CMD.NEW_DEST, key, list.address(i), list.port(i), list.weight(i));
          if (full()) {
            yield chunk();
            w.reset();
          }
        }
        continue;
      }
      case "add-service":
        service(CMD.NEW_SERVICE, change.server);
        break;
      case "edit-service":
        service(CMD.SET_SERVICE, change.server);
        break;
      case "delete-service": {
        const svc = blankService(change.key);
        w.message(familyId, flags, seq(), header(CMD.DEL_SERVICE), (w) =>
          w.nest(CMD_ATTR_SERVICE, (w) => w.raw(svc)),
        );
        break;
      }
      case "add-real":
        real(CMD.NEW_DEST, change.key, change.real.address, change.real.port, change.real.weight);
        break;
      case "edit-real":
        real(CMD.SET_DEST, change.key, change.real.address, change.real.port, change.real.weight);
        break;
      case "delete-real":
        real(CMD.DEL_DEST, change.key, change.real.address, change.real.port);
        break;
    }
    if (full()) {
      yield chunk();
      w.reset();
    }
  }
  if (line > chunkStart) yield chunk();
}
