// restore-text.ts for ipset: set names and entries are one word each or refused, so no text can
// add a line or an option to an `ipset restore` script. By hand, by property over hostile text,
// and against the real ipset in a netns with every set ipvs mode creates and generated entries.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { HostInputError } from "../../../src/host/errors.ts";
import { addLine, createLine, delLine, destroyLine, flushLine } from "../../../src/host/ipset/lines.ts";
import { count, entry, SET_NAME_MAX_BYTES, setName } from "../../../src/host/ipset/restore-text.ts";
import { ipsetWords } from "../../../src/host/ipset/save-parser.ts";
import { ipPortEntry, ipPortIPEntry, ipPortNetEntry, portEntry } from "../../../src/modes/ipvs/entries.ts";
import { familySetName, SET_IDS, setCatalog } from "../../../src/modes/ipvs/ipsets.ts";
import { hostileText, INJECTIONS } from "../../support/hostile-text.ts";
import { createTestNetns, type TestNetns } from "../iptables/netns.ts";

describe("setName()", () => {
  test("upstream's set names, IPv6 ones cut to 31 bytes, are taken as they are", () => {
    for (const family of ["IPv4", "IPv6"] as const) {
      for (const id of SET_IDS) {
        const name = setCatalog(family)[id].spec.name;
        expect(setName(name)).toBe(name);
      }
    }
    expect(familySetName("KUBE-LOAD-BALANCER-SOURCE-CIDR", "IPv6")).toHaveLength(SET_NAME_MAX_BYTES);
  });

  test("anything else is a HostInputError", () => {
    for (const bad of ["", "-x", "a b", "a\nb", 'a"b', "a#b", "é", "x".repeat(SET_NAME_MAX_BYTES + 1)]) {
      expect(() => setName(bad)).toThrow(HostInputError);
    }
  });
});

describe("entry() and the script lines", () => {
  test("the entries ipvs mode writes are one word", () => {
    for (const e of [
      ipPortEntry("198.51.100.1", "tcp", 80),
      ipPortIPEntry("fd00::5", "sctp", 8080, "fd00::5"),
      ipPortNetEntry("192.0.2.1", "udp", 53, "203.0.113.0/24"),
      portEntry(30080),
      "0-65535",
    ]) {
      expect(entry(e)).toBe(e);
    }
  });

  test("an entry that would add words or lines is refused, and so is its line", () => {
    for (const bad of [
      "",
      "1.2.3.4 timeout 0",
      "1.2.3.4\ncreate evil hash:ip",
      '"x"',
      "1.2.3.4#c",
      "-exist",
    ]) {
      expect(() => entry(bad)).toThrow(HostInputError);
      expect(() => addLine("KUBE-CLUSTER-IP", bad)).toThrow(HostInputError);
      expect(() => delLine("KUBE-CLUSTER-IP", bad)).toThrow(HostInputError);
    }
    expect(() => flushLine("KUBE CLUSTER")).toThrow(HostInputError);
    expect(() => destroyLine("KUBE-CLUSTER-IP\nflush")).toThrow(HostInputError);
    expect(() => count(0, "hashsize")).toThrow(HostInputError);
    expect(() => count(1.5, "maxelem")).toThrow(HostInputError);
  });

  test("property: hostile text is refused or is exactly one word of the line", () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        let line: string;
        try {
          line = addLine("KUBE-CLUSTER-IP", text);
        } catch (err) {
          expect(err).toBeInstanceOf(HostInputError);
          return;
        }
        expect(ipsetWords(line)).toEqual(["add", "KUBE-CLUSTER-IP", text]);
      }),
      { seed: 7, numRuns: 2000 },
    );
    for (const [, text] of INJECTIONS) expect(() => entry(text)).toThrow(HostInputError);
  });
});

// Addresses the kernel takes in a set (not 0.0.0.0 or ::): the documentation ranges.
const v4 = fc
  .tuple(fc.constantFrom("192.0.2", "198.51.100", "203.0.113"), fc.nat(255))
  .map((p) => p.join("."));
const hex = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
const v6 = fc.tuple(hex, hex, hex).map(([a, b, c]) => `2001:db8:${a}:${b}::${c}`);
const proto = fc.constantFrom("tcp", "udp", "sctp") as fc.Arbitrary<"tcp" | "udp" | "sctp">;
const port = fc.integer({ min: 0, max: 65535 });

describe("the real ipset takes every set and generated entry (netns)", () => {
  let ns: TestNetns;
  beforeAll(async () => {
    ns = await createTestNetns();
  });
  afterAll(async () => {
    await ns?.remove();
  });

  test("create lines of both families, add lines of each type", async () => {
    const lines: string[] = [];
    for (const family of ["IPv4", "IPv6"] as const) {
      for (const id of SET_IDS) lines.push(createLine(setCatalog(family)[id].spec));
    }
    const sets = setCatalog("IPv4");
    for (const [ip, p, n] of fc.sample(fc.tuple(v4, proto, port), { seed: 11, numRuns: 100 })) {
      lines.push(addLine(sets.clusterIP.spec.name, ipPortEntry(ip, p, n)));
      lines.push(addLine(sets.loopBack.spec.name, ipPortIPEntry(ip, p, n, ip)));
      lines.push(addLine(sets.loadBalancerSourceCIDR.spec.name, ipPortNetEntry(ip, p, n, `${ip}/24`)));
      lines.push(addLine(sets.nodePortTCP.spec.name, portEntry(n)));
    }
    const sets6 = setCatalog("IPv6");
    for (const [ip, p, n] of fc.sample(fc.tuple(v6, proto, port), { seed: 12, numRuns: 50 })) {
      lines.push(addLine(sets6.clusterIP.spec.name, ipPortEntry(ip, p, n)));
      lines.push(addLine(sets6.loadBalancerSourceCIDR.spec.name, ipPortNetEntry(ip, p, n, `${ip}/64`)));
    }
    const res = await ns.exec.run({
      cmd: "ipset",
      args: ["restore", "-exist"],
      stdin: `${lines.join("\n")}\n`,
    });
    expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: "" });
  }, 60_000);
});
