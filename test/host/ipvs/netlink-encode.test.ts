// The IPVS netlink writer without a kernel: its messages against ipvsadm 1.31's (goldens taken
// with `strace -e sendmsg -xx ipvsadm ...` in the kernel VM, Debian 6.1, payload after nlmsghdr),
// its chunks and sequence numbers, and the client over a scripted socket: family lookup,
// refusals named by line with ipvsadm's words, ipvsadm while IPVS has no family, a socket
// failure, unanswered messages, and input checked before anything is sent (fast-check).

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { IpvsError } from "../../../src/host/ipvs/errors.ts";
import { ACKED_LINES, createNetlinkIpvsClient } from "../../../src/host/ipvs/netlink/client.ts";
import {
  CHUNK_MESSAGES,
  encodeIpvsChanges,
  familyIdOf,
  familyRequest,
  GENL_ID_CTRL,
} from "../../../src/host/ipvs/netlink/encode.ts";
import {
  IPVS_CHANGE_OPS,
  type IpvsChange,
  type IpvsChanges,
  type IpvsClient,
  type VirtualServerKey,
} from "../../../src/host/ipvs/types.ts";
import type { NetlinkReply } from "../../../src/host/netlink-socket/messages.ts";
import { type NetlinkSocket, NetlinkSocketError } from "../../../src/host/netlink-socket/socket.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const FAMILY = 0x22;

const tcp80: VirtualServerKey = { address: "192.0.2.1", port: 80, protocol: "TCP" };
const v6: VirtualServerKey = { address: "2001:db8::1", port: 443, protocol: "TCP" };

/** Each message of a chunk: type, flags, seq and the payload after nlmsghdr. */
function messages(bytes: Uint8Array) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const out: { type: number; flags: number; seq: number; payload: string }[] = [];
  let at = 0;
  while (at < bytes.length) {
    const len = view.getUint32(at, true);
    if (len < 16 || at + len > bytes.length) throw new Error(`bad message length ${len} at ${at}`);
    out.push({
      type: view.getUint16(at + 4, true),
      flags: view.getUint16(at + 6, true),
      seq: view.getUint32(at + 8, true),
      payload: hex(bytes.subarray(at + 16, at + len)),
    });
    at += (len + 3) & ~3;
  }
  return out;
}

/** Every chunk, each copied as it comes (a chunk's bytes are reused for the next). */
function encodeAll(changes: IpvsChanges, firstSeq = 100) {
  const out = [];
  for (const c of encodeIpvsChanges(changes, FAMILY, firstSeq)) out.push({ ...c, bytes: c.bytes.slice() });
  return out;
}

// ipvsadm 1.31's payloads (genlmsghdr + attributes), one line each.
const GOLDEN: [string, IpvsChange, string][] = [
  [
    "-A -t 192.0.2.1:80 -s rr",
    { op: "add-service", server: { ...tcp80, scheduler: "rr", timeout: 0, flags: [] } },
    "01010000540001800600010002000000060002000600000014000300c0000201000000000000000000000000060004000050000007000600727200000c00070000000000ffffffff080008000000000008000900ffffffff",
  ],
  [
    "-A -u 192.0.2.1:53 -s rr -p 10800",
    {
      op: "add-service",
      server: { address: "192.0.2.1", port: 53, protocol: "UDP", scheduler: "rr", timeout: 10800, flags: [] },
    },
    "01010000540001800600010002000000060002001100000014000300c0000201000000000000000000000000060004000035000007000600727200000c00070001000000ffffffff08000800302a000008000900ffffffff",
  ],
  [
    "-A -t [2001:db8::1]:443 -s sh -b sh-fallback,sh-port",
    { op: "add-service", server: { ...v6, scheduler: "sh", timeout: 0, flags: ["sh-fallback", "sh-port"] } },
    "0101000054000180060001000a00000006000200060000001400030020010db80000000000000000000000010600040001bb000007000600736800000c00070018000000ffffffff08000800000000000800090080000000",
  ],
  [
    "-a -t 192.0.2.1:80 -r 203.0.113.1:8080 -m -w 1",
    { op: "add-real", key: tcp80, real: { address: "203.0.113.1", port: 8080, weight: 1 } },
    "05010000540001800600010002000000060002000600000014000300c0000201000000000000000000000000060004000050000005000600000000000c00070000000000ffffffff080008000000000008000900ffffffff6000028006000b000200000014000100cb007101000000000000000000000000060002001f9000000800030000000000080004000100000005000d000000000006000e000000000006000f000000000008000500000000000800060000000000",
  ],
  [
    "-a -t [2001:db8::1]:443 -r [2001:db8::10]:8443 -m -w 0",
    { op: "add-real", key: v6, real: { address: "2001:db8::10", port: 8443, weight: 0 } },
    "0501000054000180060001000a00000006000200060000001400030020010db80000000000000000000000010600040001bb000005000600000000000c00070000000000ffffffff080008000000000008000900800000006000028006000b000a0000001400010020010db80000000000000000000000100600020020fb00000800030000000000080004000000000005000d000000000006000e000000000006000f000000000008000500000000000800060000000000",
  ],
  [
    "-e -t 192.0.2.1:80 -r 203.0.113.1:8080 -m -w 0",
    { op: "edit-real", key: tcp80, real: { address: "203.0.113.1", port: 8080, weight: 0 } },
    "06010000540001800600010002000000060002000600000014000300c0000201000000000000000000000000060004000050000005000600000000000c00070000000000ffffffff080008000000000008000900ffffffff6000028006000b000200000014000100cb007101000000000000000000000000060002001f9000000800030000000000080004000000000005000d000000000006000e000000000006000f000000000008000500000000000800060000000000",
  ],
  [
    "-E -t 192.0.2.1:80 -s wlc -p 30",
    { op: "edit-service", server: { ...tcp80, scheduler: "wlc", timeout: 30, flags: [] } },
    "02010000540001800600010002000000060002000600000014000300c0000201000000000000000000000000060004000050000008000600776c63000c00070001000000ffffffff080008001e00000008000900ffffffff",
  ],
  [
    "-d -t 192.0.2.1:80 -r 203.0.113.1:8080",
    { op: "delete-real", key: tcp80, real: { address: "203.0.113.1", port: 8080 } },
    "07010000540001800600010002000000060002000600000014000300c0000201000000000000000000000000060004000050000005000600000000000c00070000000000ffffffff080008000000000008000900ffffffff6000028006000b000200000014000100cb007101000000000000000000000000060002001f9000000800030003000000080004000100000005000d000000000006000e000000000006000f000000000008000500000000000800060000000000",
  ],
  [
    "-D -t 192.0.2.1:80",
    { op: "delete-service", key: tcp80 },
    "03010000540001800600010002000000060002000600000014000300c0000201000000000000000000000000060004000050000005000600000000000c00070000000000ffffffff080008000000000008000900ffffffff",
  ],
  [
    "-A --sctp-service 192.0.2.2:3868 -s rr",
    {
      op: "add-service",
      server: { address: "192.0.2.2", port: 3868, protocol: "SCTP", scheduler: "rr", timeout: 0, flags: [] },
    },
    "01010000540001800600010002000000060002008400000014000300c0000202000000000000000000000000060004000f1c000007000600727200000c00070000000000ffffffff080008000000000008000900ffffffff",
  ],
];

describe("IPVS netlink messages", () => {
  test.each(GOLDEN)("%s: the bytes ipvsadm 1.31 sends", (_line, change, payload) => {
    const [chunk] = encodeAll([change]);
    const [m] = messages(chunk!.bytes);
    expect(m).toEqual({ type: FAMILY, flags: 0x5, seq: 100, payload });
  });

  test("the family lookup is the controller request ipvsadm sends, and its answer is read", () => {
    const req = familyRequest(7);
    expect(messages(req)).toEqual([
      { type: GENL_ID_CTRL, flags: 0x5, seq: 7, payload: "030100000900020049505653000000" + "00" },
    ]);
    // CTRL_CMD_NEWFAMILY's answer: genlmsghdr, FAMILY_NAME, FAMILY_ID.
    const answer = Buffer.from(
      "01020000" + "0900020049505653000000" + "00" + "06000100" + "2200" + "0000",
      "hex",
    );
    expect(familyIdOf(new Uint8Array(answer))).toBe(0x22);
    expect(familyIdOf(new Uint8Array(Buffer.from("01020000", "hex")))).toBeUndefined();
  });

  test("chunks: at most CHUNK_MESSAGES each, consecutive sequence numbers and lines, wrapping", () => {
    const n = CHUNK_MESSAGES * 2 + 17;
    const changes: IpvsChange[] = Array.from({ length: n }, (_, i) => ({
      op: "add-real",
      key: tcp80,
      real: { address: `203.0.113.${1 + (i % 200)}`, port: 1000 + Math.floor(i / 200), weight: 1 },
    }));
    const first = 0x3fffffff - 5;
    const chunks = encodeAll(changes, first);
    expect(chunks.map((c) => c.messages)).toEqual([CHUNK_MESSAGES, CHUNK_MESSAGES, 17]);
    let line = 0;
    for (const c of chunks) {
      expect(c.firstLine).toBe(line);
      const ms = messages(c.bytes);
      expect(ms.length).toBe(c.messages);
      expect(ms.map((m) => m.seq)).toEqual(ms.map((_, i) => (first + line + i) & 0x3fffffff));
      line += c.messages;
    }
    expect(line).toBe(n);
  });

  test("any valid changes: one well-formed message per line (fast-check)", () => {
    const addr = fc.oneof(
      fc.tuple(fc.nat(255), fc.nat(255)).map(([a, b]) => `203.0.${a}.${b}`),
      fc.nat(0xffff).map((x) => `2001:db8::${x.toString(16)}`),
    );
    const change = fc
      .record({
        op: fc.constantFrom(...IPVS_CHANGE_OPS),
        vip: addr,
        real: addr,
        protocol: fc.constantFrom("TCP" as const, "UDP" as const, "SCTP" as const),
        port: fc.integer({ min: 1, max: 65535 }),
        weight: fc.integer({ min: 0, max: 65535 }),
        timeout: fc.integer({ min: 0, max: 86400 }),
      })
      .map(({ op, vip, real, protocol, port, weight, timeout }): IpvsChange => {
        const key = { address: vip, port, protocol };
        // A real server of the virtual server's family.
        const r = vip.includes(":") === real.includes(":") ? real : vip;
        if (op === "add-service" || op === "edit-service")
          return { op, server: { ...key, scheduler: "rr", timeout, flags: [] } };
        if (op === "delete-service") return { op, key };
        if (op === "delete-real") return { op, key, real: { address: r, port } };
        return { op, key, real: { address: r, port, weight } };
      });
    fc.assert(
      fc.property(fc.array(change, { maxLength: 60 }), (changes) => {
        const all = encodeAll(changes).flatMap((c) => messages(c.bytes));
        expect(all.length).toBe(changes.length);
        expect(all.map((m) => m.seq)).toEqual(all.map((_, i) => 100 + i));
      }),
      { numRuns: 200 },
    );
  });
});

/** A socket that answers the family lookup and acks (or refuses) each IPVS message. */
class ScriptedSocket implements NetlinkSocket {
  readonly sentFrom = "caller" as const;
  sends: Uint8Array[] = [];
  /** Lines (0-based over every IPVS message sent) to refuse, with their errno. */
  refuse = new Map<number, number>();
  familyErrno = 0;
  fail = false;
  dropAcks = false;
  private ipvsLines = 0;

  /** IPVS messages taken so far. */
  sent(): number {
    return this.ipvsLines;
  }

  async send(batch: Uint8Array): Promise<NetlinkReply[]> {
    if (this.fail) throw new NetlinkSocketError("sendto", 105);
    this.sends.push(batch.slice());
    const out: NetlinkReply[] = [];
    for (const m of messages(batch)) {
      if (m.type === GENL_ID_CTRL) {
        if (this.familyErrno) out.push({ seq: m.seq, error: -this.familyErrno });
        else
          out.push({
            seq: m.seq,
            error: 0,
            data: {
              type: GENL_ID_CTRL,
              bytes: new Uint8Array(Buffer.from("0102000006000100220000000", "hex")),
            },
          });
        continue;
      }
      const line = this.ipvsLines++;
      const errno = this.refuse.get(line) ?? 0;
      // As the kernel: an ack when asked for (NLM_F_ACK), a refusal always.
      if (errno === 0 && (this.dropAcks || !(m.flags & 0x4))) continue;
      out.push({ seq: m.seq, error: -errno });
    }
    return out;
  }
  close() {}
}

function recordingIpvsadm() {
  const applied: number[] = [];
  const written: number[] = [];
  const client: IpvsClient = {
    read: async () => [],
    readServices: async () => [],
    apply: async (c) => {
      applied.push(c.length);
    },
    setTimeouts: async () => {},
    flush: async () => {},
    noteWritten: (n) => written.push(n),
  };
  return { client, applied, written };
}

const adds = (n: number): IpvsChange[] =>
  Array.from({ length: n }, (_, i) => ({
    op: "add-real",
    key: tcp80,
    real: { address: `203.0.113.${1 + (i % 200)}`, port: 1000 + Math.floor(i / 200), weight: 1 },
  }));

describe("the IPVS netlink client", () => {
  test("looks the family up once, writes over netlink, tells ipvsadm's reads how much was written", async () => {
    const socket = new ScriptedSocket();
    const ipvsadm = recordingIpvsadm();
    const client = createNetlinkIpvsClient({ ipvsadm: ipvsadm.client, socket });
    await client.apply(adds(3));
    await client.apply(adds(CHUNK_MESSAGES + 1));
    expect(client.sent).toEqual({ netlink: 2, ipvsadm: 0 });
    // Acked up to ACKED_LINES, as ipvsadm asks; above, only refusals come back.
    expect(messages(socket.sends[1]!)[0]!.flags).toBe(0x5);
    expect(messages(socket.sends[2]!)[0]!.flags).toBe(0x1);
    // One lookup, then one send for 3 lines and two for CHUNK_MESSAGES + 1.
    expect(socket.sends.length).toBe(4);
    expect(ipvsadm.applied).toEqual([]);
    expect(ipvsadm.written).toEqual([3, CHUNK_MESSAGES + 1]);
  });

  test("refusals name their lines with ipvsadm's words and the line's text", async () => {
    const socket = new ScriptedSocket();
    const client = createNetlinkIpvsClient({ ipvsadm: recordingIpvsadm().client, socket });
    socket.refuse.set(1, 17);
    socket.refuse.set(CHUNK_MESSAGES + 2, 3);
    const err = await client.apply(adds(CHUNK_MESSAGES + 5)).catch((e) => e);
    expect(err).toBeInstanceOf(IpvsError);
    expect(err.kind).toBe("restore");
    expect(err.line).toBe(2);
    expect(err.failures).toEqual([
      {
        message: "Destination already exists",
        line: 2,
        text: "-a -t 192.0.2.1:80 -r 203.0.113.2:1000 -m -w 1",
        candidates: [2],
      },
      {
        message: "Service not defined",
        line: CHUNK_MESSAGES + 3,
        text: `-a -t 192.0.2.1:80 -r 203.0.113.${1 + ((CHUNK_MESSAGES + 2) % 200)}:${1000 + Math.floor((CHUNK_MESSAGES + 2) / 200)} -m -w 1`,
        candidates: [CHUNK_MESSAGES + 3],
      },
    ]);
    expect(err.isExists()).toBe(true);
  });

  test(`over ${ACKED_LINES} lines only refusals are answered, and still named by line`, async () => {
    const socket = new ScriptedSocket();
    const client = createNetlinkIpvsClient({ ipvsadm: recordingIpvsadm().client, socket });
    await client.apply(adds(ACKED_LINES + 1));
    const flags = messages(socket.sends[1]!).map((m) => m.flags);
    expect(new Set(flags)).toEqual(new Set([0x1]));
    socket.refuse.set(socket.sent() + ACKED_LINES, 17);
    const err = await client.apply(adds(ACKED_LINES + 1)).catch((e) => e);
    expect(err.failures.map((f: { line: number }) => f.line)).toEqual([ACKED_LINES + 1]);
  });

  test("without an IPVS family the write goes to ipvsadm, and the family is looked up again next time", async () => {
    const socket = new ScriptedSocket();
    socket.familyErrno = 2;
    const ipvsadm = recordingIpvsadm();
    const client = createNetlinkIpvsClient({ ipvsadm: ipvsadm.client, socket });
    await client.apply(adds(2));
    expect(ipvsadm.applied).toEqual([2]);
    socket.familyErrno = 0;
    await client.apply(adds(2));
    expect(client.sent).toEqual({ netlink: 1, ipvsadm: 1 });
  });

  test("a socket failure or a missing ack is an error, never taken for success", async () => {
    const socket = new ScriptedSocket();
    const client = createNetlinkIpvsClient({ ipvsadm: recordingIpvsadm().client, socket });
    await client.apply(adds(1));
    socket.fail = true;
    const failed = await client.apply(adds(1)).catch((e) => e);
    expect(failed).toBeInstanceOf(IpvsError);
    expect(failed.kind).toBe("failed");
    expect(failed.message).toContain("outcome of 1 changes is unknown");
    socket.fail = false;
    socket.dropAcks = true;
    const unanswered = await client.apply(adds(2)).catch((e) => e);
    expect(unanswered).toBeInstanceOf(IpvsError);
    expect(unanswered.message).toContain("left 2 of 2 changes unanswered");
  });

  test("input ipvsadm could not be given is refused before anything is sent (fast-check)", async () => {
    const hostile = fc.string({ maxLength: 40 });
    await fc.assert(
      fc.asyncProperty(hostile, hostile, fc.integer(), async (address, scheduler, port) => {
        fc.pre(!/^[0-9a-f:.]+$/i.test(address) || scheduler !== "rr" || port < 0 || port > 65535);
        const socket = new ScriptedSocket();
        const client = createNetlinkIpvsClient({ ipvsadm: recordingIpvsadm().client, socket });
        const change: IpvsChange = {
          op: "add-service",
          server: { address, port, protocol: "TCP", scheduler, timeout: 0, flags: [] },
        };
        let err: unknown;
        try {
          await client.apply([...adds(1), change]);
        } catch (e) {
          err = e;
        }
        // Either ipvsadm's checks refuse it (kind "invalid") before a send, or it is valid.
        if (err !== undefined) {
          expect(err).toBeInstanceOf(IpvsError);
          expect((err as IpvsError).kind).toBe("invalid");
          expect(socket.sends).toEqual([]);
        }
      }),
      { numRuns: 300 },
    );
  });
});
