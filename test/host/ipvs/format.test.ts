import { describe, expect, test } from "bun:test";
import { IpvsError } from "../../../src/host/ipvs/errors.ts";
import {
  formatIpvsList,
  formatIpvsSave,
  glibcSort,
  ipvsadmDestOrder,
  ipvsadmServiceOrder,
  ipvsListFromSave,
  parseIpvsList,
  parseIpvsSave,
  renderChange,
  renderRestore,
  renderRestorePieces,
  restoreInput,
} from "../../../src/host/ipvs/format.ts";
import { parseIpvsadmArgs, restoreLineWords } from "../../../src/host/ipvs/syntax.ts";
import type { IpvsChange, VirtualServer, VirtualServerKey } from "../../../src/host/ipvs/types.ts";

// `ipvsadm -L -n --exact` on a kind node in ipvs mode, laid out as ipvsadm 1.31 prints it
// ("%-4s %s" service names; "  -> %-28s %-7s %-6d %-10u %-10u" real servers, trailing blanks kept),
// in ipvsadm's order (172.18.0.2 before 10.96.0.1: see SAVE).
const LIST = `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  172.18.0.2:30080 sh (sh-fallback,sh-port)
  -> 10.244.1.7:8080              Local   1      0          0         
TCP  10.96.0.1:443 rr
  -> 172.18.0.2:6443              Masq    1      3          0         
TCP  10.96.0.10:53 rr
  -> 10.244.0.3:53                Masq    1      0          0         
  -> 10.244.0.4:53                Masq    1      0          0         
TCP  10.96.143.7:80 rr persistent 10800
  -> 10.244.1.7:8080              Masq    0      2          41        
  -> 10.244.2.9:8080              Masq    1      17         1234567890
UDP  10.96.0.10:53 rr
  -> 10.244.0.3:53                Masq    1      0          12        
SCTP 10.96.200.1:3868 rr
TCP  [fd00:10:96::1]:443 rr
  -> [fc00:f853:ccd:e793::2]:6443 Masq    1      0          0         
FWM  100 wlc
  -> 10.0.0.5:0                   Route   1      0          0         
`;

// The same table as `ipvsadm -S -n` prints it.
// In ipvsadm's order: libipvs compares addresses by a wrapping 32-bit difference, so
// 172.18.0.2 (more than 2^31 above 10.96.0.1) sorts before the 10.96 services.
const SAVE = `-A -t 172.18.0.2:30080 -s sh -b sh-fallback,sh-port
-a -t 172.18.0.2:30080 -r 10.244.1.7:8080 -g -w 1
-A -t 10.96.0.1:443 -s rr
-a -t 10.96.0.1:443 -r 172.18.0.2:6443 -m -w 1
-A -t 10.96.0.10:53 -s rr
-a -t 10.96.0.10:53 -r 10.244.0.3:53 -m -w 1
-a -t 10.96.0.10:53 -r 10.244.0.4:53 -m -w 1
-A -t 10.96.143.7:80 -s rr -p 10800
-a -t 10.96.143.7:80 -r 10.244.1.7:8080 -m -w 0
-a -t 10.96.143.7:80 -r 10.244.2.9:8080 -m -w 1
-A -u 10.96.0.10:53 -s rr
-a -u 10.96.0.10:53 -r 10.244.0.3:53 -m -w 1
-A --sctp-service 10.96.200.1:3868 -s rr
-A -t [fd00:10:96::1]:443 -s rr
-a -t [fd00:10:96::1]:443 -r [fc00:f853:ccd:e793::2]:6443 -m -w 1
-A -f 100 -s wlc
-a -f 100 -r 10.0.0.5:0 -g -w 1
`;

const vs = (
  address: string,
  port: number,
  protocol: VirtualServer["protocol"],
  extra: Partial<VirtualServer> = {},
) => ({
  address,
  port,
  protocol,
  scheduler: "rr",
  flags: [],
  timeout: 0,
  ...extra,
});
const rs = (address: string, port: number, weight = 1, activeConnections = 0, inactiveConnections = 0) => ({
  address,
  port,
  weight,
  activeConnections,
  inactiveConnections,
});

describe("parseIpvsList", () => {
  test("reads services, flags, persistence and connection counts; skips fwmark services", () => {
    expect(parseIpvsList(LIST)).toEqual([
      {
        server: vs("172.18.0.2", 30080, "TCP", { scheduler: "sh", flags: ["sh-fallback", "sh-port"] }),
        reals: [rs("10.244.1.7", 8080)],
      },
      { server: vs("10.96.0.1", 443, "TCP"), reals: [rs("172.18.0.2", 6443, 1, 3, 0)] },
      { server: vs("10.96.0.10", 53, "TCP"), reals: [rs("10.244.0.3", 53), rs("10.244.0.4", 53)] },
      {
        server: vs("10.96.143.7", 80, "TCP", { timeout: 10800 }),
        reals: [rs("10.244.1.7", 8080, 0, 2, 41), rs("10.244.2.9", 8080, 1, 17, 1234567890)],
      },
      { server: vs("10.96.0.10", 53, "UDP"), reals: [rs("10.244.0.3", 53, 1, 0, 12)] },
      { server: vs("10.96.200.1", 3868, "SCTP"), reals: [] },
      { server: vs("fd00:10:96::1", 443, "TCP"), reals: [rs("fc00:f853:ccd:e793::2", 6443)] },
    ]);
  });

  test("an empty table is just the headers", () => {
    const empty = LIST.split("\n").slice(0, 3).join("\n");
    expect(parseIpvsList(`${empty}\n`)).toEqual([]);
  });

  test("a line it does not understand is a typed parse error with the line number", () => {
    const bad = `${LIST}garbage here\n`;
    try {
      parseIpvsList(bad);
      throw new Error("expected a parse error");
    } catch (err) {
      expect(err).toBeInstanceOf(IpvsError);
      expect((err as IpvsError).kind).toBe("parse");
      expect((err as IpvsError).message).toContain(`line ${LIST.split("\n").length}`);
    }
  });
});

describe("parseIpvsList, line by line", () => {
  test("CRLF line ends, no final newline and blank lines read the same", () => {
    const want = parseIpvsList(LIST);
    expect(parseIpvsList(LIST.replaceAll("\n", "\r\n"))).toEqual(want);
    expect(parseIpvsList(LIST.trimEnd())).toEqual(want);
    expect(parseIpvsList(`\n${LIST.replaceAll("\n", "\n  \n")}`)).toEqual(want);
  });

  test("addresses the fast path does not take (IPv6, out-of-range ports) go the whole way", () => {
    const list = [
      "TCP  10.96.0.1:443 rr",
      "  -> 10.244.1.7:65535              Masq    1      0          0         ",
      "TCP  [fd00::1]:53 wrr (mh-port)",
      "  -> [fd00:10:244::5]:53           Masq    0      1          2         ",
      "",
    ].join("\n");
    const [a, b] = parseIpvsList(list);
    expect(a!.server).toEqual({
      address: "10.96.0.1",
      port: 443,
      protocol: "TCP",
      scheduler: "rr",
      flags: [],
      timeout: 0,
    });
    expect(a!.reals[0]).toMatchObject({ address: "10.244.1.7", port: 65535, weight: 1 });
    expect(b!.server).toMatchObject({ address: "fd00::1", port: 53, scheduler: "wrr", flags: ["mh-port"] });
    expect(b!.reals[0]).toMatchObject({ address: "fd00:10:244::5", weight: 0, inactiveConnections: 2 });
    for (const bad of ["10.96.0.1:65536", "10.96.0.01:80", "10.96.0.1:"]) {
      expect(() => parseIpvsList(`TCP  ${bad} rr\n`)).toThrow(IpvsError);
    }
  });
});

describe("parseIpvsSave", () => {
  test("reads the -S form (no connection counts), skipping fwmark services", () => {
    const fromList = parseIpvsList(LIST).map((s) => ({
      ...s,
      reals: s.reals.map((r) => ({ ...r, activeConnections: 0, inactiveConnections: 0 })),
    }));
    // "Local" real servers print as -g in -S output; the weight and address still match.
    expect(parseIpvsSave(SAVE)).toEqual(fromList);
  });
});

describe("renderRestore", () => {
  const tcp: VirtualServerKey = { address: "10.96.0.1", port: 443, protocol: "TCP" };
  const v6: VirtualServerKey = { address: "FD00:10:96:0::1", port: 53, protocol: "UDP" };
  const sctp: VirtualServerKey = { address: "10.96.200.1", port: 3868, protocol: "SCTP" };
  const changes: IpvsChange[] = [
    { op: "add-service", server: { ...tcp, scheduler: "rr", flags: [], timeout: 0 } },
    {
      op: "add-service",
      server: { ...v6, scheduler: "sh", flags: ["sh-fallback", "sh-port"], timeout: 10800 },
    },
    { op: "edit-service", server: { ...sctp, scheduler: "wrr", flags: [], timeout: 0 } },
    { op: "delete-service", key: { ...tcp, port: 80 } },
    { op: "add-real", key: tcp, real: { address: "172.18.0.2", port: 6443, weight: 1 } },
    { op: "edit-real", key: v6, real: { address: "fd00:10:244::5", port: 53, weight: 0 } },
    { op: "delete-real", key: sctp, real: { address: "10.244.3.3", port: 3868 } },
  ];

  test("one line per change, in order, masquerading real servers", () => {
    expect(renderRestore(changes)).toBe(
      [
        "-A -t 10.96.0.1:443 -s rr",
        "-A -u [fd00:10:96::1]:53 -s sh -p 10800 -b sh-fallback,sh-port",
        "-E --sctp-service 10.96.200.1:3868 -s wrr",
        "-D -t 10.96.0.1:80",
        "-a -t 10.96.0.1:443 -r 172.18.0.2:6443 -m -w 1",
        "-e -u [fd00:10:96::1]:53 -r [fd00:10:244::5]:53 -m -w 0",
        "-d --sctp-service 10.96.200.1:3868 -r 10.244.3.3:3868",
        "",
      ].join("\n"),
    );
  });

  test("every rendered line is one ipvsadm accepts", () => {
    for (const line of renderRestore(changes).trim().split("\n")) {
      const res = parseIpvsadmArgs(restoreLineWords(line));
      expect({ line, ok: res.ok }).toEqual({ line, ok: true });
    }
  });

  const bad: [string, IpvsChange][] = [
    ["address", { op: "delete-service", key: { address: "10.96.0", port: 80, protocol: "TCP" } }],
    ["port", { op: "delete-service", key: { address: "10.96.0.1", port: 70000, protocol: "TCP" } }],
    ["scheduler", { op: "add-service", server: { ...tcp, scheduler: "rr -C", flags: [], timeout: 0 } }],
    ["timeout", { op: "add-service", server: { ...tcp, scheduler: "rr", flags: [], timeout: -1 } }],
    ["flags", { op: "add-service", server: { ...tcp, scheduler: "rr", flags: ["sh-port"], timeout: 0 } }],
    ["weight", { op: "add-real", key: tcp, real: { address: "10.0.0.1", port: 1, weight: 70000 } }],
    ["family", { op: "add-real", key: tcp, real: { address: "fd00::1", port: 1, weight: 1 } }],
  ];
  for (const [what, change] of bad) {
    test(`refuses a bad ${what} before anything runs`, () => {
      expect(() => renderChange(change)).toThrow(IpvsError);
    });
  }

  // Many virtual servers, each followed by its real servers (the key object shared, as the
  // proxier hands them over), then edits and deletes with keys of their own.
  const many = (n: number): IpvsChange[] => {
    const out: IpvsChange[] = [];
    const reals = ["10.244.0.3", "10.244.0.4", "10.244.1.9"].map((address) => ({
      address,
      port: 8080,
      weight: 1,
    }));
    for (let i = 0; i < n; i++) {
      const server = { address: `203.0.${i >> 8}.${i & 255}`, port: 80 + (i % 3), protocol: "TCP" as const };
      out.push({ op: "add-service", server: { ...server, scheduler: "rr", flags: [], timeout: 0 } });
      for (const real of reals) out.push({ op: "add-real", key: server, real });
      if (i % 7 === 0)
        out.push({ op: "delete-real", key: { ...server }, real: { address: "10.244.2.2", port: 1 } });
    }
    return out;
  };

  test("in pieces: whole lines, each piece under ~64 KiB, the same text as line by line", () => {
    const changes = many(3000);
    const pieces = renderRestorePieces(changes);
    expect(pieces.length).toBeGreaterThan(2);
    for (const piece of pieces) {
      expect(piece.endsWith("\n")).toBe(true);
      expect(piece.length).toBeLessThan(70_000);
    }
    expect(pieces.join("")).toBe(changes.map((c) => `${renderChange(c)}\n`).join(""));
    expect(renderRestore(changes)).toBe(pieces.join(""));
  });

  test("in pieces: a bad line anywhere is refused before any piece is handed over", () => {
    const changes = many(2000);
    const at = changes.findIndex((c, i) => i > 4000 && c.op === "add-real");
    const { key } = changes[at] as Extract<IpvsChange, { op: "add-real" }>;
    // Same key object as the line before (whose check is reused), wrong family.
    changes.splice(at + 1, 0, { op: "add-real", key, real: { address: "fd00::1", port: 1, weight: 1 } });
    expect(() => renderRestorePieces(changes)).toThrow(IpvsError);
    changes.splice(at + 1, 1, { op: "add-real", key, real: { address: "10.244.0.300", port: 1, weight: 1 } });
    expect(() => renderRestorePieces(changes)).toThrow(IpvsError);
    // The input made as it is read is checked whole when asked for, before any piece is made.
    expect(() => restoreInput(changes)).toThrow(IpvsError);
  });

  test("made as it is read: the same pieces, a piece at a time, anew on every read", () => {
    const changes = many(3000);
    const input = restoreInput(changes);
    const reading = input[Symbol.iterator]();
    const first = reading.next();
    expect(first.done).toBe(false);
    expect(first.value!.endsWith("\n")).toBe(true);
    expect([first.value!, ...{ [Symbol.iterator]: () => reading }].join("")).toBe(renderRestore(changes));
    expect([...input]).toEqual(renderRestorePieces(changes));
  });
});

describe("formatIpvsList / formatIpvsSave", () => {
  test("what the fake prints reads back to the same table", () => {
    const services = parseIpvsSave(SAVE).map((s) => {
      const key = { address: s.server.address, port: s.server.port, protocol: s.server.protocol };
      const flagsLine = s.server.flags.length ? ` -b ${s.server.flags.join(",")}` : "";
      const svc = parseIpvsadmArgs(
        restoreLineWords(
          `-A ${renderChange({ op: "delete-service", key }).slice(3)} -s ${s.server.scheduler}${s.server.timeout ? ` -p ${s.server.timeout}` : ""}${flagsLine}`,
        ),
      );
      if (!svc.ok || svc.command.kind !== "add-service") throw new Error("bad fixture");
      return {
        service: svc.command.service,
        dests: s.reals.map((r) => ({ ...r, forward: "masq" as const })),
      };
    });
    expect(parseIpvsList(formatIpvsList(services))).toEqual(parseIpvsSave(SAVE));
    expect(parseIpvsSave(formatIpvsSave(services))).toEqual(parseIpvsSave(SAVE));
  });
});

describe("ipvsListFromSave", () => {
  test("a saved table lists as ipvsadm -L -n would show it", () => {
    const listed = parseIpvsList(ipvsListFromSave(SAVE));
    expect(listed).toEqual(parseIpvsSave(SAVE));
  });
});

describe("ipvsadm's sort order", () => {
  const hp = (text: string) => {
    const at = text.lastIndexOf(":");
    return { address: text.slice(0, at).replace(/[[\]]/g, ""), port: Number(text.slice(at + 1)) };
  };
  const show = (ds: { address: string; port: number }[]) =>
    ds.map((d) => (d.address.includes(":") ? `[${d.address}]:${d.port}` : `${d.address}:${d.port}`));

  test("real servers sort as ipvsadm 1.31 printed them on kernel 6.1 (wrapping compare, glibc merge)", () => {
    // The kernel's order (newest first) of one service's real servers, and what `ipvsadm -Ln`
    // printed for them: 203.0.113.x (above 2^31) sorts before 10.0.0.1, 127.0.0.1 comes last.
    const kernelOrder = [
      "127.0.0.1:80",
      "10.0.0.1:80",
      "[2001:db8::5]:80",
      "203.0.113.10:7",
      "203.0.113.5:80",
      "203.0.113.4:80",
      "203.0.113.1:80",
      "203.0.113.1:8080",
      "203.0.113.9:8080",
    ].map(hp);
    expect(show(glibcSort(kernelOrder, ipvsadmDestOrder))).toEqual([
      "203.0.113.1:80",
      "203.0.113.1:8080",
      "203.0.113.4:80",
      "203.0.113.5:80",
      "203.0.113.9:8080",
      "203.0.113.10:7",
      "10.0.0.1:80",
      "[2001:db8::5]:80",
      "127.0.0.1:80",
    ]);
  });

  test("services: family, then protocol, then the wrapping address compare, then port", () => {
    const key = (address: string, port: number, protocol: "TCP" | "UDP" | "SCTP" = "TCP") => ({
      address,
      port,
      protocol,
    });
    const keys = [
      key("fd00::1", 80),
      key("10.96.0.1", 443, "UDP"),
      key("10.96.0.1", 443),
      key("172.18.0.2", 30080),
      key("10.96.0.10", 53, "SCTP"),
      key("10.96.0.1", 80),
    ];
    expect(glibcSort(keys, ipvsadmServiceOrder)).toEqual([
      key("172.18.0.2", 30080),
      key("10.96.0.1", 80),
      key("10.96.0.1", 443),
      key("10.96.0.1", 443, "UDP"),
      key("10.96.0.10", 53, "SCTP"),
      key("fd00::1", 80),
    ]);
  });
});

describe("reading what the real ipvsadm 1.31 printed on kernel 6.1", () => {
  // `ipvsadm -S -n` lines as the guest suite saw them: tunnelling real servers name their tunnel
  // type, masks print as a dotted quad (IPv4) or a prefix length (IPv6), weights go past 65535.
  const REAL_SAVE = `-A -t 192.0.2.1:80 -s rr
-a -t 192.0.2.1:80 -r 203.0.113.1:80 -m -w 2147483647
-a -t 192.0.2.1:80 -r 203.0.113.5:80 -i -w 1 --tun-type ipip
-a -t 192.0.2.1:80 -r [2001:db8::5]:80 -i -w 1 --tun-type ipip
-A -t 192.0.2.4:80 -s wlc -p 60 -M 0.0.0.24
-A -t [2001:db8::2]:80 -s wlc -p 60 -M 64
`;

  test("parseIpvsSave and ipvsListFromSave take it", () => {
    const services = parseIpvsSave(REAL_SAVE);
    expect(services.map((s) => [s.server.address, s.server.timeout, s.reals.length])).toEqual([
      ["192.0.2.1", 0, 3],
      ["192.0.2.4", 60, 0],
      ["2001:db8::2", 60, 0],
    ]);
    expect(services[0]?.reals.map((r) => r.weight)).toEqual([2147483647, 1, 1]);
    expect(parseIpvsList(ipvsListFromSave(REAL_SAVE))).toEqual(
      services.map((s) => ({ ...s, reals: glibcSort(s.reals, ipvsadmDestOrder) })),
    );
  });
});
