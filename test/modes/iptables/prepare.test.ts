// prepare(): the first full sync's jump rules and counters, made before the cluster is listed.
// The first full sync then skips them; later full syncs ensure them again, as upstream does.

import { describe, expect, test } from "bun:test";
import type { ExecRequest } from "../../../src/exec/types.ts";
import { memoryLogger } from "../../../src/log/logger.ts";
import type { IptablesProxier } from "../../../src/modes/iptables/proxier.ts";
import { MultiFamilyProxier } from "../../../src/proxy/multi-family.ts";
import type { Proxier, SyncInput } from "../../../src/proxy/proxier.ts";
import { endpointSlice, ep, fakeNfacct, type Setup, service, setup } from "./harness.ts";

/** -N/-C/-I runs of the iptables binary, as "-N KUBE-SERVICES nat"-style strings. */
function ensureCalls(s: Setup): string[] {
  return s.ipt.exec.calls
    .filter((c: ExecRequest) => !c.cmd.includes("restore") && !c.cmd.includes("save"))
    .map((c) => c.args.filter((a) => !["-w", "5"].includes(a)).join(" "))
    .filter((a) => /^-[NCI] /.test(a));
}

function oneService(s: Setup) {
  s.cluster.apply(
    service("ns1", "svc1", { clusterIP: "198.51.100.41" }),
    endpointSlice("ns1", "svc1", [ep("192.0.2.11")]),
  );
}

describe("IptablesProxier.prepare", () => {
  test("ensures the jump rules and counters before any sync; the first full sync does not repeat them", async () => {
    const nf = fakeNfacct();
    const s = setup({ deps: { nfacct: nf.client } });
    await s.proxier.prepare();
    const prepared = ensureCalls(s);
    expect(prepared.some((a) => a.startsWith("-N KUBE-SERVICES"))).toBe(true);
    expect(prepared.some((a) => a.startsWith("-I PREROUTING"))).toBe(true);
    expect(s.ipt.restores).toEqual([]);
    expect(nf.fake.names).toEqual(["ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts"]);

    oneService(s);
    await s.sync();
    expect(ensureCalls(s)).toEqual(prepared);
    // The rules it made are there, once.
    expect(s.ipt.rules("nat", "PREROUTING")).toEqual([
      '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    ]);
  });

  test("creates the canary chains (as upstream's monitor does at start); the monitor's first check then only looks", async () => {
    const s = setup();
    await s.proxier.prepare();
    for (const t of ["mangle", "nat", "filter"] as const) {
      expect(await s.ipt.chainExists(t, "KUBE-PROXY-CANARY")).toBe(true);
    }
    oneService(s);
    await s.sync();
    const canaryCreates = () => ensureCalls(s).filter((a) => a.startsWith("-N KUBE-PROXY-CANARY")).length;
    expect(canaryCreates()).toBe(3);
    // After the first sync: present, nothing created (no big-table rewrite), no flush reported.
    expect(await s.proxier.checkCanaries()).toBe(false);
    expect(canaryCreates()).toBe(3);
    s.ipt.flushAll();
    expect(await s.proxier.checkCanaries()).toBe(true);
  });

  test("a later full sync ensures them again (someone may have removed a jump rule)", async () => {
    const s = setup();
    await s.proxier.prepare();
    oneService(s);
    await s.sync();
    const checks = () => ensureCalls(s).filter((a) => a.startsWith("-C PREROUTING")).length;
    expect(checks()).toBe(1);
    s.proxier.requestFullSync();
    await s.sync();
    expect(checks()).toBe(2);
  });

  test("a failed preparation is logged and the first sync does the work itself", async () => {
    const logger = memoryLogger();
    const s = setup({ logger });
    s.ipt.ensureRuleError = new Error("xtables lock held");
    await s.proxier.prepare(); // never rejects
    expect(logger.lines.join("\n")).toContain("Failed to ensure chain jumps");
    s.ipt.ensureRuleError = undefined;
    oneService(s);
    await s.sync();
    expect(s.ipt.rules("nat", "PREROUTING")).toEqual([
      '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    ]);
  });

  test("a sync without prepare() ensures as before", async () => {
    const s = setup();
    oneService(s);
    await s.sync();
    expect(ensureCalls(s).some((a) => a.startsWith("-I PREROUTING"))).toBe(true);
  });
});

describe("MultiFamilyProxier.prepare", () => {
  test("families prepare in order, and a sync waits until every family is prepared", async () => {
    const events: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const family = (name: string, wait?: Promise<void>): Proxier => ({
      async prepare() {
        events.push(`${name} prepare start`);
        await wait;
        events.push(`${name} prepare done`);
      },
      async sync() {
        events.push(`${name} sync`);
      },
    });
    const multi = new MultiFamilyProxier([family("IPv4"), family("IPv6", gate)]);
    void multi.prepare();
    const synced = multi.sync({} as SyncInput);
    await new Promise((r) => setTimeout(r, 10));
    expect(events).toEqual(["IPv4 prepare start", "IPv4 prepare done", "IPv6 prepare start"]);
    release();
    await synced;
    expect(events).toEqual([
      "IPv4 prepare start",
      "IPv4 prepare done",
      "IPv6 prepare start",
      "IPv6 prepare done",
      "IPv4 sync",
      "IPv6 sync",
    ]);
    // Preparing twice runs nothing again.
    await multi.prepare();
    expect(events.filter((e) => e.endsWith("prepare start"))).toHaveLength(2);
  });

  test("proxiers without prepare() are fine", async () => {
    const p: Pick<IptablesProxier, "sync"> = { sync: async () => {} };
    await new MultiFamilyProxier([p]).prepare();
  });
});
