// ip-text.ts: device names and addresses are the only text in `ip` argv and `ip -batch` lines,
// and each is checked. By hand, by property over hostile text, and against the real `ip` in a
// netns: names the check takes (keywords such as "help" and "dev" among them, written after
// "name"/"dev" as the client does) make devices, and the client's batch binds addresses on them.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { HostInputError } from "../../../src/host/errors.ts";
import { renderBindBatch } from "../../../src/host/netlink/client.ts";
import { hostPrefix, IFNAME_MAX_BYTES, ifName } from "../../../src/host/netlink/ip-text.ts";
import { hostileText, INJECTIONS } from "../../support/hostile-text.ts";
import { createTestNetns, type TestNetns } from "../iptables/netns.ts";

describe("ifName() and hostPrefix()", () => {
  test("device names the kernel and iproute2 take as one name", () => {
    for (const name of ["kube-ipvs0", "eth0", "veth1a2b3c4d", "br_0.100", "help", "dev", "x".repeat(15)]) {
      expect(ifName(name)).toBe(name);
    }
  });

  test("anything else is a HostInputError", () => {
    for (const bad of ["", ".", "..", "-x", "a b", "a/b", "a:b", "a\nb", 'a"b', "a#b", "é", "x".repeat(16)]) {
      expect(() => ifName(bad)).toThrow(HostInputError);
    }
  });

  test("addresses are canonical with their host prefix, or refused", () => {
    expect(hostPrefix("10.96.0.1")).toBe("10.96.0.1/32");
    expect(hostPrefix("2001:DB8::1")).toBe("2001:db8::1/128");
    for (const bad of ["", "10.96.0.1/24", "10.96.0.1 dev lo", "10.96.0.1\naddress flush", "host"]) {
      expect(() => hostPrefix(bad)).toThrow(HostInputError);
    }
  });

  test("property: hostile text is refused, or a batch line of exactly five words", () => {
    fc.assert(
      fc.property(hostileText, fc.boolean(), (text, asDevice) => {
        let batch: string;
        try {
          batch = asDevice
            ? renderBindBatch(text, ["10.96.0.1"], [])
            : renderBindBatch("kube-ipvs0", [text], []);
        } catch (err) {
          expect(err).toBeInstanceOf(HostInputError);
          return;
        }
        expect(batch.endsWith("\n")).toBe(true);
        const lines = batch.slice(0, -1).split("\n");
        expect(lines).toHaveLength(1);
        expect(lines[0]!.split(" ")).toHaveLength(5);
        expect(lines[0]).not.toMatch(/["'#\\]/);
      }),
      { seed: 31, numRuns: 2000 },
    );
    for (const [, text] of INJECTIONS) {
      expect(() => ifName(text)).toThrow(HostInputError);
      expect(() => hostPrefix(text)).toThrow(HostInputError);
    }
  });
});

const nameChar = fc.constantFrom(..."abhdevlpAZ09_.-");
const plausibleName = fc
  .tuple(fc.constantFrom(..."ahdAZ09_"), fc.string({ unit: nameChar, maxLength: IFNAME_MAX_BYTES - 1 }))
  .map(([a, b]) => a + b);

describe("the real ip takes every name ifName() accepts (netns)", () => {
  let ns: TestNetns;
  beforeAll(async () => {
    ns = await createTestNetns();
  });
  afterAll(async () => {
    await ns?.remove();
  });

  test("devices made after `name`, addresses bound by the client's batch, read back", async () => {
    const names = [
      ...new Set([
        "help",
        "h",
        "dev",
        "name",
        "type",
        ...fc.sample(plausibleName, { seed: 32, numRuns: 40 }),
      ]),
    ];
    for (const [i, name] of names.entries()) {
      ifName(name);
      // veth, as this kernel may have no dummy module; the peer gets a name of its own.
      const add = await ns.exec.run({
        cmd: "ip",
        args: ["link", "add", "name", name, "type", "veth", "peer", "name", `kpts-peer${i}`],
      });
      expect({ name, code: add.code, stderr: add.stderr }).toEqual({ name, code: 0, stderr: "" });
      const ip = `198.51.100.${i + 1}`;
      const batch = await ns.exec.run({
        cmd: "ip",
        args: ["-batch", "-"],
        stdin: renderBindBatch(name, [ip], []),
      });
      expect({ name, code: batch.code, stderr: batch.stderr }).toEqual({ name, code: 0, stderr: "" });
      const shown = await ns.exec.run({ cmd: "ip", args: ["-o", "addr", "show", "dev", name] });
      expect(shown.stdout).toContain(`inet ${ip}/32`);
    }
  }, 60_000);
});
