// Unit tests for src/util/net: each parse rule on the inputs that tell the rules apart,
// canonical text, family and protocol spellings, and host:port joining and splitting.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  canonicalCIDRLenient,
  canonicalIPInet,
  canonicalIPLenient,
  cidrContains,
  compareIPs,
  formatIPv6Inet,
  isLoopback,
  isLoopbackLenient,
  netContains,
  parseCIDRInet,
  parseCIDRLenient,
  parseCIDRStrict,
  parseIPInet,
  parseIPLenient,
  parseIPStrict,
  parseNetLenient,
  platformIPFamily,
} from "../../src/util/net/address.ts";
import {
  familyFlag,
  familyFromNumber,
  familyNumber,
  familyOf,
  inetFamily,
  maxPrefixLen,
  ofFamily,
} from "../../src/util/net/family.ts";
import { isPortNumber, joinHostPort, splitHostPort } from "../../src/util/net/host-port.ts";
import { isProtocol, lowerProtocol, parseProtocol } from "../../src/util/net/protocol.ts";

describe("parse rules side by side", () => {
  // [input, strict family, lenient text, inet text]
  test.each([
    ["192.0.2.1", "IPv4", "192.0.2.1", "192.0.2.1"],
    ["192.000.002.001", undefined, "192.0.2.1", undefined],
    ["010.1.1.1", undefined, "10.1.1.1", undefined],
    ["::ffff:192.0.2.1", "IPv6", "192.0.2.1", "::ffff:192.0.2.1"],
    ["::ffff:c000:201", "IPv6", "192.0.2.1", "::ffff:192.0.2.1"],
    ["::c000:201", "IPv6", "::c000:201", "::192.0.2.1"],
    ["2001:DB8:0:0::1", "IPv6", "2001:db8::1", "2001:db8::1"],
    ["fe80::1%eth0", undefined, undefined, undefined],
    [" 192.0.2.1", undefined, undefined, undefined],
    ["192.0.2.1 ", undefined, undefined, undefined],
    ["192.0.2.256", undefined, undefined, undefined],
    ["192.0.2.1/32", undefined, undefined, undefined],
    ["", undefined, undefined, undefined],
  ] as const)("%p: strict %p, lenient %p, inet %p", (text, strict, lenient, inet) => {
    expect(parseIPStrict(text)?.family).toBe(strict);
    expect(parseIPLenient(text)?.ip).toBe(lenient);
    expect(canonicalIPInet(text)).toBe(inet);
  });

  test("strict keeps the text as written; lenient maps IPv4-mapped addresses to IPv4", () => {
    expect(parseIPStrict("2001:DB8::1")).toEqual({ ip: "2001:DB8::1", family: "IPv6" });
    expect(parseIPLenient("::ffff:192.0.2.1")).toEqual({ ip: "192.0.2.1", family: "IPv4" });
    expect(parseIPInet("::ffff:192.0.2.1")?.family).toBe("IPv6");
    expect(parseIPLenient(42)).toBeUndefined();
  });
});

describe("CIDRs", () => {
  test("strict keeps host bits and does not trim", () => {
    expect(parseCIDRStrict("192.0.2.7/24")).toEqual({ family: "IPv4", address: "192.0.2.7", prefix: 24 });
    expect(parseCIDRStrict(" 192.0.2.0/24")).toBeUndefined();
    expect(parseCIDRStrict("192.000.2.0/24")).toBeUndefined();
    expect(parseCIDRStrict("2001:db8::/129")).toBeUndefined();
  });

  test("lenient trims, accepts leading zeros and clears host bits", () => {
    expect(parseCIDRLenient(" 192.000.2.7/24 ")).toEqual({ cidr: "192.0.2.0/24", family: "IPv4" });
    expect(parseCIDRLenient("2001:db8:ffff::1/33")).toEqual({ cidr: "2001:db8:8000::/33", family: "IPv6" });
    expect(parseCIDRLenient("::ffff:192.0.2.0/120")).toBeUndefined();
    expect(parseCIDRLenient("192.0.2.0/x")).toBeUndefined();
  });

  test("inet: bare address is a host prefix; mask clears host bits", () => {
    expect(parseCIDRInet("10.0.0.1")?.prefix).toBe(32);
    expect(parseCIDRInet("10.1.2.3/23", { mask: true })?.ip).toBe("10.1.2.0");
    expect(parseCIDRInet("010.1.2.3/23")).toBeUndefined();
  });

  test("containment", () => {
    expect(cidrContains("192.0.2.0/24", "192.0.2.200")).toBe(true);
    expect(cidrContains("192.0.2.0/24", "192.0.3.1")).toBe(false);
    expect(cidrContains("192.0.2.0/24", "::ffff:192.0.2.9")).toBe(true);
    expect(cidrContains("2001:db8::/32", "192.0.2.1")).toBe(false);
    expect(cidrContains("bogus", "192.0.2.1")).toBe(false);
    const net = parseNetLenient("2001:db8::/32")!;
    expect(netContains(net, "2001:db8:1::1")).toBe(true);
    expect(netContains(net, "2001:db9::1")).toBe(false);
  });
});

describe("canonical text and order", () => {
  test("inet_ntop spelling embeds IPv4 only for ::/96 and ::ffff:0:0/96", () => {
    const bytes = (words: number[]) => words.flatMap((w) => [w >> 8, w & 255]);
    expect(formatIPv6Inet(bytes([0, 0, 0, 0, 0, 0xffff, 0xc000, 0x201]))).toBe("::ffff:192.0.2.1");
    expect(formatIPv6Inet(bytes([0, 0, 0, 0, 0, 0, 0, 1]))).toBe("::1");
    expect(formatIPv6Inet(bytes([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1]))).toBe("2001:db8::1:0:0:1");
  });

  test("compareIPs: numeric, IPv4 before IPv6", () => {
    expect(["fd00::1", "10.0.0.10", "::1", "10.0.0.9"].sort(compareIPs)).toEqual([
      "10.0.0.9",
      "10.0.0.10",
      "::1",
      "fd00::1",
    ]);
  });

  test("loopback by rule", () => {
    expect(isLoopback("127.0.0.53")).toBe(true);
    expect(isLoopback("::ffff:127.0.0.1")).toBe(false);
    expect(isLoopbackLenient("::ffff:127.0.0.1")).toBe(true);
    expect(isLoopbackLenient("127.000.0.1")).toBe(true);
  });
});

describe("family", () => {
  test("spellings", () => {
    expect(familyOf("2001:db8::1")).toBe("IPv6");
    expect(familyOf("192.0.2.1")).toBe("IPv4");
    expect(familyNumber("IPv4")).toBe(4);
    expect(familyFromNumber(6)).toBe("IPv6");
    expect(inetFamily("IPv6")).toBe("inet6");
    expect(familyFlag("IPv4")).toBe("-4");
    expect(maxPrefixLen("IPv6")).toBe(128);
    expect(ofFamily(["192.0.2.1", "::1", "192.0.2.2"], "IPv4")).toEqual(["192.0.2.1", "192.0.2.2"]);
  });
});

describe("protocol", () => {
  test("API rule and rendering", () => {
    expect(parseProtocol(undefined)).toBe("TCP");
    expect(parseProtocol("tcp")).toBeUndefined();
    expect(isProtocol("SCTP")).toBe(true);
    expect(lowerProtocol("SCTP")).toBe("sctp");
  });
});

describe("host:port", () => {
  test("joinHostPort brackets IPv6 only", () => {
    expect(joinHostPort("192.0.2.1", 80)).toBe("192.0.2.1:80");
    expect(joinHostPort("2001:db8::1", "443")).toBe("[2001:db8::1]:443");
    expect(joinHostPort("node-a", 10256)).toBe("node-a:10256");
  });

  test("splitHostPort follows Go", () => {
    expect(splitHostPort("[::1]:80")).toEqual({ ok: true, host: "::1", port: "80" });
    expect(splitHostPort("::1:80")).toEqual({ ok: false, error: "too many colons in address" });
    expect(splitHostPort("192.0.2.1")).toEqual({ ok: false, error: "missing port in address" });
  });

  test("isPortNumber", () => {
    expect(isPortNumber(65535)).toBe(true);
    expect(isPortNumber(0)).toBe(false);
    expect(isPortNumber("80")).toBe(false);
  });
});

describe("platform rule (Node status addresses, --bind-address)", () => {
  test("only the family is asked for; IPv6 zones are accepted, unlike the strict rule", () => {
    expect(platformIPFamily("192.0.2.10")).toBe("IPv4");
    expect(platformIPFamily("2001:db8::1")).toBe("IPv6");
    expect(platformIPFamily("fe80::1%eth0")).toBe("IPv6");
    expect(parseIPStrict("fe80::1%eth0")).toBeUndefined();
    expect(platformIPFamily("node-a.example")).toBeUndefined();
    expect(platformIPFamily("")).toBeUndefined();
  });
});

describe("the canonical dotted-quad fast path of the lenient readers", () => {
  // Octets as an API object may spell them: canonical, with leading zeros, too big; prefixes
  // with leading zeros or too long; blanks around.
  const octet = fc.oneof(
    fc.integer({ min: 0, max: 255 }).map(String),
    fc.integer({ min: 0, max: 999 }).map((n) => `0${n}`),
    fc.integer({ min: 256, max: 9999 }).map(String),
  );
  const quad = fc.array(octet, { minLength: 3, maxLength: 5 }).map((o) => o.join("."));
  const prefix = fc.oneof(fc.integer({ min: 0, max: 40 }).map(String), fc.constantFrom("08", "032", "", "x"));
  const pad = fc.constantFrom("", " ", "\t");

  test("an address reads as the general reader reads it", () => {
    fc.assert(
      fc.property(quad, pad, (q, p) => {
        const text = `${p}${q}`;
        // The general reader: a /32 network of the same text is the address itself.
        const net = parseNetLenient(`${text}/32`);
        const want =
          net && !/^\s/.test(text) ? { ip: net.bytes.join("."), family: "IPv4" as const } : undefined;
        expect(parseIPLenient(text)).toEqual(want);
      }),
      { numRuns: 2000 },
    );
  });

  test("a CIDR reads as the general reader reads it, host bits cleared", () => {
    fc.assert(
      fc.property(quad, prefix, pad, (q, bits, p) => {
        const text = `${p}${q}/${bits}${p}`;
        const net = parseNetLenient(text);
        const want = net && { cidr: `${net.bytes.join(".")}/${net.prefix}`, family: net.family };
        expect(parseCIDRLenient(text)).toEqual(want);
      }),
      { numRuns: 2000 },
    );
  });

  test("the text-only readers answer the text of the general readers", () => {
    fc.assert(
      fc.property(quad, prefix, pad, (q, bits, p) => {
        const ip = `${p}${q}`;
        const cidr = `${p}${q}/${bits}${p}`;
        expect(canonicalIPLenient(ip)).toBe(parseIPLenient(ip)?.ip);
        expect(canonicalCIDRLenient(cidr)).toBe(parseCIDRLenient(cidr)?.cidr);
      }),
      { numRuns: 2000 },
    );
    for (const odd of [undefined, 7, "2001:DB8::1", "::ffff:192.0.2.1", "2001:db8::1/64"]) {
      expect(canonicalIPLenient(odd)).toBe(parseIPLenient(odd)?.ip);
      expect(canonicalCIDRLenient(odd)).toBe(parseCIDRLenient(odd)?.cidr);
    }
  });

  test("containment answers as the general readers do, host bits of either side ignored", () => {
    const ip = fc.oneof(quad, fc.constantFrom("::ffff:192.0.2.1", "2001:db8::1", "192.0.2.1 "));
    // Near addresses too, so that some containments hold.
    const near = fc
      .tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 255 }))
      .map(([a, b]) => `10.${a}.${b}.7`);
    fc.assert(
      fc.property(fc.oneof(quad, near), prefix, pad, fc.oneof(ip, near), (q, bits, p, address) => {
        const cidr = `${p}${q}/${bits}`;
        const net = parseNetLenient(cidr);
        expect(cidrContains(cidr, address)).toBe(net !== undefined && netContains(net, address));
      }),
      { numRuns: 3000 },
    );
    expect(cidrContains("10.1.0.0/16", "10.1.255.9")).toBe(true);
    expect(cidrContains("10.1.2.3/16", "10.2.0.1")).toBe(false);
    expect(cidrContains("0.0.0.0/0", "192.0.2.1")).toBe(true);
  });
});
