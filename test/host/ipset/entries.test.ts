import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { entryProblem, validateEntry } from "../../../src/host/ipset/entries.ts";
import type { IpsetType } from "../../../src/host/ipset/types.ts";

// validateEntry recognises the entries the proxier writes by the million without parsing them;
// its verdict must be parseEntry's for every text, near misses above all.
const TYPES: IpsetType[] = [
  "hash:ip,port",
  "hash:ip,port,ip",
  "hash:ip,port,net",
  "hash:ip",
  "hash:net",
  "bitmap:port",
];

const octet = fc.oneof(
  fc.integer({ min: 0, max: 255 }).map(String),
  fc.constantFrom("256", "00", "01", "999", "", "1a", " 1", "0x1"),
);
const ipv4 = fc.oneof(
  fc.tuple(octet, octet, octet, octet).map((o) => o.join(".")),
  fc.constantFrom("1.2.3", "1.2.3.4.5", "::1", "fd00::1", "1.2.3.4 ", ".1.2.3", "1..2.3"),
);
const port = fc.oneof(
  fc.integer({ min: 0, max: 70000 }).map(String),
  fc.constantFrom("", "080", "80-81", "80-80", "-1", "1e3", "00000", "123456"),
);
const proto = fc.constantFrom("tcp", "udp", "sctp", "TCP", "udplite", "icmp", "");
const prefix = fc.oneof(
  fc.integer({ min: 0, max: 40 }).map((n) => `/${n}`),
  fc.constantFrom("", "/", "/08", "/032", "/x"),
);
const entry = fc.oneof(
  fc.tuple(ipv4, proto, port).map(([a, p, n]) => `${a},${p}:${n}`),
  fc.tuple(ipv4, proto, port, ipv4, prefix).map(([a, p, n, b, l]) => `${a},${p}:${n},${b}${l}`),
  fc.tuple(ipv4, port).map(([a, n]) => `${a},${n}`),
  fc.tuple(ipv4, proto, port, ipv4).map(([a, p, n, b]) => `${a},${p}:${n},${b},${b}`),
  fc.string({ maxLength: 40 }),
);

describe("validateEntry", () => {
  test("agrees with entryProblem on every text, for every type (property)", () => {
    fc.assert(
      fc.property(fc.constantFrom(...TYPES), entry, (type, text) => {
        expect({ type, text, valid: validateEntry(type, text) }).toEqual({
          type,
          text,
          valid: entryProblem(type, text) === undefined,
        });
      }),
      { numRuns: 20_000 },
    );
  });

  test("the proxier's own entries are valid; near misses are not", () => {
    expect(validateEntry("hash:ip,port", "203.0.113.7,tcp:80")).toBe(true);
    expect(validateEntry("hash:ip,port,ip", "192.0.2.5,udp:53,192.0.2.5")).toBe(true);
    expect(validateEntry("hash:ip,port,net", "203.0.113.7,tcp:443,198.51.100.0/24")).toBe(true);
    expect(validateEntry("hash:ip,port,net", "203.0.113.7,tcp:443,198.51.100.0/0")).toBe(false);
    expect(validateEntry("hash:ip,port", "203.0.113.07,tcp:80")).toBe(false);
    expect(validateEntry("hash:ip,port", "203.0.113.7,tcp:65536")).toBe(false);
    expect(validateEntry("hash:ip,port,ip", "192.0.2.5,udp:53,192.0.2.0/24")).toBe(false);
    expect(validateEntry("hash:ip,port", "2001:db8::1,tcp:80", "inet6")).toBe(true);
    expect(validateEntry("hash:ip,port", "203.0.113.7,tcp:80", "inet6")).toBe(false);
  });
});
