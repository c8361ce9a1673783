// ipvsDrift: the virtual and real servers the last sync programmed against the IPVS table. A
// table made from the record has no drift; one real server deleted from it (ipvsadm -d) is one
// difference naming it; virtual servers another family's or excluded are not looked at. And
// ipsetDrift: our sets' members against the kernel's, the same way.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { IpsetSet } from "../../../src/host/ipset/types.ts";
import type { IpvsService } from "../../../src/host/ipvs/types.ts";
import { ipsetDrift, ipvsDrift, type RecordedVirtualServer } from "../../../src/modes/ipvs/drift.ts";

const owns = (a: string) => !a.includes(":") && !a.startsWith("192.0.2.");

function tableOf(recorded: readonly RecordedVirtualServer[]): IpvsService[] {
  return recorded.map((vs) => ({
    server: {
      address: vs.address,
      port: vs.port,
      protocol: vs.protocol as "TCP",
      scheduler: vs.scheduler,
      flags: [],
      timeout: vs.timeout,
    },
    reals: [...vs.realServers].map((r) => ({ ...r, activeConnections: 0, inactiveConnections: 0 })),
  }));
}

const WEB: RecordedVirtualServer = {
  address: "198.51.100.10",
  port: 80,
  protocol: "TCP",
  scheduler: "rr",
  timeout: 0,
  realServers: [
    { address: "203.0.113.11", port: 8080, weight: 1 },
    { address: "203.0.113.12", port: 8080, weight: 0 },
  ],
};

describe("ipvsDrift", () => {
  test("each kind of difference is named; other families and excluded addresses are not ours", () => {
    const kernel = tableOf([WEB]);
    kernel[0] = {
      server: { ...kernel[0]!.server, scheduler: "wrr" },
      reals: [
        { address: "203.0.113.12", port: 8080, weight: 1, activeConnections: 0, inactiveConnections: 0 },
        { address: "203.0.113.13", port: 8080, weight: 1, activeConnections: 0, inactiveConnections: 0 },
      ],
    };
    const extra = (address: string) => tableOf([{ ...WEB, address, realServers: [] }])[0]!;
    kernel.push(extra("198.51.100.99"), extra("2001:db8::1"), extra("192.0.2.7"));
    const sticky = { ...WEB, address: "198.51.100.11", timeout: 600 };
    expect(ipvsDrift([WEB, sticky], kernel, { owns, family: "IPv4" })).toEqual([
      {
        kind: "virtual-server",
        what: "TCP 198.51.100.10:80",
        expected: "scheduler rr",
        found: "scheduler wrr",
        ipFamily: "IPv4",
      },
      {
        kind: "real-server",
        what: "TCP 198.51.100.10:80 -> 203.0.113.11:8080",
        expected: "weight 1",
        found: "absent",
        ipFamily: "IPv4",
      },
      {
        kind: "real-server",
        what: "TCP 198.51.100.10:80 -> 203.0.113.12:8080",
        expected: "weight 0",
        found: "weight 1",
        ipFamily: "IPv4",
      },
      {
        kind: "real-server",
        what: "TCP 198.51.100.10:80 -> 203.0.113.13:8080",
        expected: "absent",
        found: "weight 1",
        ipFamily: "IPv4",
      },
      {
        kind: "virtual-server",
        what: "TCP 198.51.100.11:80",
        expected: "scheduler rr, persistent 600",
        found: "absent",
        ipFamily: "IPv4",
      },
      {
        kind: "virtual-server",
        what: "TCP 198.51.100.99:80",
        expected: "absent",
        found: "scheduler rr",
        ipFamily: "IPv4",
      },
    ]);
  });

  test("random records: none against their own table; a real server deleted is one difference", () => {
    const real = fc.record({
      address: fc.integer({ min: 1, max: 254 }).map((n) => `203.0.113.${n}`),
      port: fc.integer({ min: 1, max: 65535 }),
      weight: fc.constantFrom(0, 1),
    });
    const vs = fc.record({
      address: fc.integer({ min: 1, max: 254 }).map((n) => `198.51.100.${n}`),
      port: fc.integer({ min: 1, max: 65535 }),
      protocol: fc.constantFrom("TCP", "UDP", "SCTP"),
      scheduler: fc.constantFrom("rr", "wrr", "lc"),
      timeout: fc.constantFrom(0, 10800),
      realServers: fc.uniqueArray(real, { selector: (r) => `${r.address}:${r.port}`, maxLength: 5 }),
    });
    const table = fc.uniqueArray(vs, {
      selector: (v) => `${v.protocol} ${v.address}:${v.port}`,
      maxLength: 6,
    });
    fc.assert(
      fc.property(table, fc.nat(), (recorded, pick) => {
        expect(ipvsDrift(recorded, tableOf(recorded), { owns })).toEqual([]);
        const withReals = recorded.filter((v) => v.realServers.length > 0);
        if (withReals.length === 0) return;
        const v = withReals[pick % withReals.length]!;
        const gone = v.realServers[pick % v.realServers.length]!;
        const kernel = tableOf(recorded).map((s) =>
          s.server.address === v.address && s.server.port === v.port && s.server.protocol === v.protocol
            ? { ...s, reals: s.reals.filter((r) => r.address !== gone.address || r.port !== gone.port) }
            : s,
        );
        expect(ipvsDrift(recorded, kernel, { owns })).toEqual([
          {
            kind: "real-server",
            what: `${v.protocol} ${v.address}:${v.port} -> ${gone.address}:${gone.port}`,
            expected: `weight ${gone.weight}`,
            found: "absent",
          },
        ]);
      }),
    );
  });
});

describe("ipsetDrift", () => {
  const set = (name: string, entries: string[]): [string, IpsetSet] => [
    name,
    { spec: { name, type: "hash:ip,port", family: "inet", comment: "" }, entries: new Set(entries) },
  ];

  test("a set gone, a member gone and a member added are each named", () => {
    const kernel = new Map([
      set("KUBE-CLUSTER-IP", ["198.51.100.10,tcp:80", "198.51.100.99,tcp:80"]),
      set("KUBE-OTHER", ["192.0.2.1,tcp:1"]),
    ]);
    const recorded = [
      { name: "KUBE-CLUSTER-IP", members: ["198.51.100.10,tcp:80", "198.51.100.11,udp:53"] },
      { name: "KUBE-LOOP-BACK", members: [] },
    ];
    expect(ipsetDrift(recorded, kernel, "IPv4")).toEqual([
      {
        kind: "set-element",
        what: "ipset KUBE-CLUSTER-IP 198.51.100.11,udp:53",
        expected: "present",
        found: "absent",
        ipFamily: "IPv4",
      },
      {
        kind: "set-element",
        what: "ipset KUBE-CLUSTER-IP 198.51.100.99,tcp:80",
        expected: "absent",
        found: "present",
        ipFamily: "IPv4",
      },
      { kind: "set", what: "ipset KUBE-LOOP-BACK", expected: "present", found: "absent", ipFamily: "IPv4" },
    ]);
  });

  test("random sets: none against themselves; a member deleted is one difference", () => {
    const member = fc.integer({ min: 1, max: 254 }).map((n) => `198.51.100.${n},tcp:80`);
    fc.assert(
      fc.property(fc.uniqueArray(member, { minLength: 1, maxLength: 20 }), fc.nat(), (members, pick) => {
        const recorded = [{ name: "KUBE-CLUSTER-IP", members }];
        expect(ipsetDrift(recorded, new Map([set("KUBE-CLUSTER-IP", members)]))).toEqual([]);
        const gone = members[pick % members.length]!;
        const left = members.filter((m) => m !== gone);
        expect(ipsetDrift(recorded, new Map([set("KUBE-CLUSTER-IP", left)]))).toEqual([
          {
            kind: "set-element",
            what: `ipset KUBE-CLUSTER-IP ${gone}`,
            expected: "present",
            found: "absent",
          },
        ]);
      }),
    );
  });
});
