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
import {
  HOST_LE,
  NetlinkWriter,
  NLM_F_ACK,
  NLM_F_REQUEST,
  readAttributes,
  seqAdd,
} from "../../netlink-socket/messages.ts";
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

/** Messages per send, and a byte bound (about 1 MiB): the acks of one send fit the receive buffer many times. */
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
  // genlmsghdr, then attributes.
  const id = readAttributes(data, 4).get(CTRL_ATTR_FAMILY_ID);
  return id && id.length >= 2 ? new DataView(id.buffer, id.byteOffset, 2).getUint16(0, HOST_LE) : undefined;
}

/** One chunk of messages: its bytes, its first message's line (0-based) and how many it holds. */
export interface IpvsChunk {
  readonly bytes: Uint8Array;
  /** The first message's line; message i of the chunk is line firstLine + i, sequence firstSeq + i. */
  readonly firstLine: number;
  readonly firstSeq: number;
  readonly messages: number;
}

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

/** A scheduler's name as the kernel reads it (NUL-terminated), by name; "" for none. */
const SCHEDULER_BYTES = new Map<string, Uint8Array>();
function schedulerBytes(name: string): Uint8Array {
  let b = SCHEDULER_BYTES.get(name);
  if (!b) {
    b = new Uint8Array(name.length + 1);
    b.set(new TextEncoder().encode(name));
    SCHEDULER_BYTES.set(name, b);
  }
  return b;
}

/** An address that is not canonical IPv4 (checked by checkChanges): its family and 16 bytes. */
function otherAddress(address: string): { af: number; bytes: Uint8Array } {
  const parsed = parseIPInet(address);
  if (!parsed) throw new Error(`ipvs netlink: unchecked address ${JSON.stringify(address)}`);
  const bytes = new Uint8Array(INET_ADDR_BYTES);
  bytes.set(parsed.bytes);
  return { af: parsed.family === "IPv4" ? AF_INET : AF_INET6, bytes };
}

/**
 * Writes one run's messages with nothing allocated per message: IPv4 addresses are written from
 * their value, other addresses, scheduler names and flags are made once and kept. At 110,000
 * real servers, small arrays and closures per message piled up to tens of MiB before the
 * runtime collected them.
 */
class MessageRun {
  readonly w = new NetlinkWriter();
  line = 0;
  private readonly headers = new Map<number, Uint8Array>(
    Object.values(CMD).map((cmd) => [cmd, genlHeader(cmd, IPVS_GENL_VERSION)]),
  );
  // The last virtual server named (kept by key object: a run of real servers shares it).
  private lastKey: VirtualServerKey | undefined;
  private keyV4 = -1;
  private keyOther: { af: number; bytes: Uint8Array } | undefined;
  /** Addresses other than canonical IPv4, by text (capped). */
  private readonly others = new Map<string, { af: number; bytes: Uint8Array }>();

  constructor(
    private readonly familyId: number,
    private readonly flags: number,
    private readonly firstSeq: number,
  ) {}

  private other(address: string) {
    let o = this.others.get(address);
    if (!o) {
      if (this.others.size >= 4096) this.others.clear();
      o = otherAddress(address);
      this.others.set(address, o);
    }
    return o;
  }

  private begin(cmd: number): number {
    return this.w.begin(
      this.familyId,
      this.flags,
      seqAdd(this.firstSeq, this.line++),
      this.headers.get(cmd)!,
    );
  }

  /** The virtual server's identity: family, protocol, address, port. */
  private identity(key: VirtualServerKey): void {
    if (key !== this.lastKey) {
      this.keyV4 = canonicalIPv4Value(key.address);
      this.keyOther = this.keyV4 >= 0 ? undefined : this.other(key.address);
      this.lastKey = key;
    }
    const w = this.w;
    w.int(SVC_ATTR.AF, 2, this.keyOther?.af ?? AF_INET, HOST_LE);
    w.int(SVC_ATTR.PROTOCOL, 2, IPPROTO[key.protocol], HOST_LE);
    if (this.keyOther) w.attr(SVC_ATTR.ADDR, this.keyOther.bytes);
    else w.inet4(SVC_ATTR.ADDR, this.keyV4);
    w.int(SVC_ATTR.PORT, 2, key.port, false);
  }

  /** The settings after the identity; a line that names no scheduler sends them blank. */
  private settings(scheduler: string, bits: number, timeout: number): void {
    const w = this.w;
    w.attr(SVC_ATTR.SCHED_NAME, schedulerBytes(scheduler));
    w.attr(SVC_ATTR.FLAGS, flagsBytes(bits));
    w.int(SVC_ATTR.TIMEOUT, 4, timeout, HOST_LE);
    // ipvsadm's default netmask: the whole address.
    w.int(SVC_ATTR.NETMASK, 4, this.keyOther?.af === AF_INET6 ? 128 : 0xffffffff, HOST_LE);
  }

  service(cmd: number, s: VirtualServer): void {
    const bits = (s.timeout > 0 ? SVC_F_PERSISTENT : 0) | parseSchedFlags(s.scheduler, s.flags.join(","));
    const m = this.begin(cmd);
    const n = this.w.beginNest();
    this.identity(s);
    this.settings(s.scheduler, bits, s.timeout);
    this.w.endNest(n, CMD_ATTR_SERVICE).end(m);
  }

  deleteService(key: VirtualServerKey): void {
    const m = this.begin(CMD.DEL_SERVICE);
    const n = this.w.beginNest();
    this.identity(key);
    this.settings("", 0, 0);
    this.w.endNest(n, CMD_ATTR_SERVICE).end(m);
  }

  /** A real server's line; a delete (no weight) sends what ipvsadm sends without -m and -w. */
  real(cmd: number, key: VirtualServerKey, address: string, port: number, weight?: number): void {
    const w = this.w;
    const m = this.begin(cmd);
    const n = w.beginNest();
    this.identity(key);
    this.settings("", 0, 0);
    w.endNest(n, CMD_ATTR_SERVICE);
    const d = w.beginNest();
    const v4 = canonicalIPv4Value(address);
    const other = v4 >= 0 ? undefined : this.other(address);
    w.int(DEST_ATTR.ADDR_FAMILY, 2, other?.af ?? AF_INET, HOST_LE);
    if (other) w.attr(DEST_ATTR.ADDR, other.bytes);
    else w.inet4(DEST_ATTR.ADDR, v4);
    w.int(DEST_ATTR.PORT, 2, port, false);
    w.int(DEST_ATTR.FWD_METHOD, 4, weight === undefined ? FWD_DROUTE : FWD_MASQ, HOST_LE);
    w.int(DEST_ATTR.WEIGHT, 4, weight ?? 1, HOST_LE);
    w.int(DEST_ATTR.TUN_TYPE, 1, 0, HOST_LE);
    w.int(DEST_ATTR.TUN_PORT, 2, 0, false);
    w.int(DEST_ATTR.TUN_FLAGS, 2, 0, HOST_LE);
    w.int(DEST_ATTR.U_THRESH, 4, 0, HOST_LE);
    w.int(DEST_ATTR.L_THRESH, 4, 0, HOST_LE);
    w.endNest(d, CMD_ATTR_DEST).end(m);
  }
}

/**
 * Writes the changes' messages in chunks of up to CHUNK_MESSAGES (or about a MiB), each message
 * asking for an ack when `ack` (the kernel answers a refusal either way); message i of the whole
 * run has sequence number seqAdd(firstSeq, i). A chunk's bytes are valid until the next
 * chunk is asked for.
 */
export function* encodeIpvsChanges(
  changes: IpvsChanges,
  familyId: number,
  firstSeq: number,
  opts: { readonly ack?: boolean } = {},
): Generator<IpvsChunk> {
  const run = new MessageRun(
    familyId,
    opts.ack === false ? NLM_F_REQUEST : NLM_F_REQUEST | NLM_F_ACK,
    firstSeq,
  );
  const { w } = run;
  let chunkStart = 0;
  const full = () => run.line - chunkStart >= CHUNK_MESSAGES || w.length >= CHUNK_BYTES;
  function* flush(): Generator<IpvsChunk> {
    yield {
      bytes: w.bytes(),
      firstLine: chunkStart,
      firstSeq: seqAdd(firstSeq, chunkStart),
      messages: run.line - chunkStart,
    };
    chunkStart = run.line;
    w.reset();
  }

  for (const change of changes as Iterable<IpvsChange | AddRealsChange>) {
    switch (change.op) {
      case "add-reals": {
        const { key, reals } = change;
        for (let i = 0; i < reals.length; i++) {
          run.real(CMD.NEW_DEST, key, reals.address(i), reals.port(i), reals.weight(i));
          if (full()) yield* flush();
        }
        continue;
      }
      case "add-service":
        run.service(CMD.NEW_SERVICE, change.server);
        break;
      case "edit-service":
        run.service(CMD.SET_SERVICE, change.server);
        break;
      case "delete-service":
        run.deleteService(change.key);
        break;
      case "add-real":
        run.real(CMD.NEW_DEST, change.key, change.real.address, change.real.port, change.real.weight);
        break;
      case "edit-real":
        run.real(CMD.SET_DEST, change.key, change.real.address, change.real.port, change.real.weight);
        break;
      case "delete-real":
        run.real(CMD.DEL_DEST, change.key, change.real.address, change.real.port);
        break;
    }
    if (full()) yield* flush();
  }
  if (run.line > chunkStart) yield* flush();
}
