// restore-text.ts for ipvsadm: only checked addresses, ports, schedulers, flags, timeouts and
// weights reach a restore line. By hand, and by property: whatever text is offered as an address
// or scheduler, the line is refused or is exactly the words ipvsadm's parser (syntax.ts, a model
// of config_stream_read and its option parser) reads back as the canonical values. There is no
// real ipvsadm here (IPVS needs the VM tests); the model is checked against it there.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { IPVS_SCHEDULERS } from "../../../src/config/validate.ts";
import { IpvsError } from "../../../src/host/ipvs/errors.ts";
import { renderChange } from "../../../src/host/ipvs/format.ts";
import {
  ipvsAddress,
  ipvsPort,
  ipvsScheduler,
  ipvsSchedulerFlags,
  ipvsTimeout,
  ipvsWeight,
  KERNEL_SCHEDULERS,
} from "../../../src/host/ipvs/restore-text.ts";
import { parseIpvsadmArgs, restoreLineWords } from "../../../src/host/ipvs/syntax.ts";
import type { IpvsChange } from "../../../src/host/ipvs/types.ts";
import { hostileText, INJECTIONS } from "../../support/hostile-text.ts";

const refused = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(IpvsError);
    expect((err as IpvsError).kind).toBe("invalid");
    return;
  }
  throw new Error("expected a refusal");
};

describe("each word is checked", () => {
  test("addresses parse and come out canonical", () => {
    expect(ipvsAddress("10.96.0.1", "x")).toEqual({ ip: "10.96.0.1", family: "IPv4" });
    expect(ipvsAddress("FD00:0:0::1", "x")).toEqual({ ip: "fd00::1", family: "IPv6" });
    for (const bad of ["", "10.96.0", "10.96.0.1 -C", "10.96.0.1\n-C", "[fd00::1]", "host"]) {
      refused(() => ipvsAddress(bad, "x"));
    }
  });

  test("ports, timeouts and weights are whole numbers in range", () => {
    expect(ipvsPort(0, "x", true)).toBe(0);
    expect(ipvsPort(65535, "x", false)).toBe(65535);
    for (const bad of [0, -1, 65536, 1.5, Number.NaN]) refused(() => ipvsPort(bad, "x", false));
    expect(ipvsTimeout(10800)).toBe(10800);
    for (const bad of [-1, 1.5, 86400 * 31 + 1]) refused(() => ipvsTimeout(bad));
    expect(ipvsWeight(0)).toBe(0);
    for (const bad of [-1, 65536, 0.5]) refused(() => ipvsWeight(bad));
  });

  test("schedulers are the kernel's, and every one the config accepts is among them", () => {
    for (const s of KERNEL_SCHEDULERS) expect(ipvsScheduler(s)).toBe(s);
    for (const s of IPVS_SCHEDULERS) expect(KERNEL_SCHEDULERS).toContain(s);
    for (const bad of ["", "nosuch", "rr -C", "rr\n-C", "RR", "rr;"]) refused(() => ipvsScheduler(bad));
  });

  test("scheduler flags must apply to the scheduler", () => {
    expect(ipvsSchedulerFlags("sh", ["sh-fallback", "sh-port"])).toBe("sh-fallback,sh-port");
    for (const bad of [["sh-port"], ["x y"], ["flag-1\n-C"]]) refused(() => ipvsSchedulerFlags("rr", bad));
  });
});

describe("hostile text never adds a word to a restore line (property)", () => {
  const service = (address: string, scheduler: string): IpvsChange => ({
    op: "add-service",
    server: { address, port: 80, protocol: "TCP", scheduler, flags: [], timeout: 0 },
  });

  test("as an address or a scheduler: refused, or read back exactly as written", () => {
    fc.assert(
      fc.property(hostileText, fc.boolean(), (text, asAddress) => {
        const change = asAddress ? service(text, "rr") : service("10.96.0.1", text);
        let line: string;
        try {
          line = renderChange(change);
        } catch (err) {
          expect(err).toBeInstanceOf(IpvsError);
          return;
        }
        expect(line.includes("\n")).toBe(false);
        const parsed = parseIpvsadmArgs(restoreLineWords(line));
        expect(parsed.ok).toBe(true);
        expect(restoreLineWords(line)).toHaveLength(5);
      }),
      { seed: 99, numRuns: 2000 },
    );
    for (const [, text] of INJECTIONS) {
      expect(() => renderChange(service(text, "rr"))).toThrow(IpvsError);
      expect(() => renderChange(service("10.96.0.1", text))).toThrow(IpvsError);
    }
  });
});
