import { describe, expect, test } from "bun:test";
import { createRecordingSysctl } from "../../src/dryrun/recording-sysctl.ts";
import { createFakeSysctl } from "../../src/host/sysctl/testing/fake.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { ipvsSysctls } from "../../src/modes/ipvs/sysctls.ts";
import { applySysctls, planSysctls, type SysctlInputs } from "../../src/proxy/sysctls.ts";

const conntrack = {
  maxPerCore: 32768,
  min: 131072,
  tcpEstablishedTimeoutMs: 24 * 3600_000,
  tcpCloseWaitTimeoutMs: 3600_000,
  tcpBeLiberal: false,
  udpTimeoutMs: 0,
  udpStreamTimeoutMs: 0,
};
const base: SysctlInputs = {
  modeSysctls: ipvsSysctls,
  kernelVersion: "6.1.0",
  strictARP: false,
  conntrack,
  cpus: 2,
};
const names = (i: SysctlInputs) => Object.fromEntries(planSysctls(i).settings.map((s) => [s.name, s.value]));

describe("sysctl plan", () => {
  test("ipvs on a new kernel: conntrack, expire knobs, ip_forward; no conn_reuse_mode", () => {
    const n = names(base);
    expect(n["net/ipv4/vs/conntrack"]).toBe(1);
    expect(n["net/ipv4/vs/expire_nodest_conn"]).toBe(1);
    expect(n["net/ipv4/vs/expire_quiescent_template"]).toBe(1);
    expect(n["net/ipv4/ip_forward"]).toBe(1);
    expect("net/ipv4/vs/conn_reuse_mode" in n).toBe(false);
    expect("net/ipv4/conf/all/arp_ignore" in n).toBe(false);
  });

  test.each([
    ["4.0.9", false, true],
    ["4.1.0", true, false],
    ["5.8.18", true, false],
    ["5.9.0", false, false],
  ])("conn_reuse_mode on kernel %s: set=%p note=%p", (kernelVersion, set, note) => {
    const plan = planSysctls({ ...base, kernelVersion });
    expect(plan.settings.some((s) => s.name === "net/ipv4/vs/conn_reuse_mode" && s.value === 0)).toBe(set);
    expect(plan.notes.length > 0).toBe(note);
  });

  test("strict ARP adds arp_ignore=1 and arp_announce=2", () => {
    const n = names({ ...base, strictARP: true });
    expect(n["net/ipv4/conf/all/arp_ignore"]).toBe(1);
    expect(n["net/ipv4/conf/all/arp_announce"]).toBe(2);
  });

  test("iptables: no ipvs knobs, and route_localnet is left to the mode assembly", () => {
    // route_localnet needs the node IPs and the IPv4 proxier (proxy/localhost-nodeports.ts).
    expect("net/ipv4/conf/all/route_localnet" in names({ ...base, modeSysctls: undefined })).toBe(false);
    expect("net/ipv4/vs/conntrack" in names({ ...base, modeSysctls: undefined })).toBe(false);
  });

  test("conntrack: max is per-core times cores but never below min; timeouts in seconds", () => {
    expect(names(base)["net/netfilter/nf_conntrack_max"]).toBe(131072);
    expect(names({ ...base, cpus: 8 })["net/netfilter/nf_conntrack_max"]).toBe(262144);
    // 1.36: the scaled value is capped at 1,048,576; an explicit min above it still wins.
    expect(names({ ...base, cpus: 64 })["net/netfilter/nf_conntrack_max"]).toBe(1_048_576);
    expect(
      names({ ...base, cpus: 64, conntrack: { ...base.conntrack, min: 2_000_000 } })[
        "net/netfilter/nf_conntrack_max"
      ],
    ).toBe(2_000_000);
    expect(names(base)["net/netfilter/nf_conntrack_tcp_timeout_established"]).toBe(86400);
    expect(names(base)["net/netfilter/nf_conntrack_tcp_timeout_close_wait"]).toBe(3600);
    expect("net/netfilter/nf_conntrack_udp_timeout" in names(base)).toBe(false);
    expect(
      "net/netfilter/nf_conntrack_max" in names({ ...base, conntrack: { ...conntrack, maxPerCore: 0 } }),
    ).toBe(false);
    expect(
      names({ ...base, conntrack: { ...conntrack, tcpBeLiberal: true } })[
        "net/netfilter/nf_conntrack_tcp_be_liberal"
      ],
    ).toBe(1);
  });

  test("bridge-nf-call-iptables is an expectation (warned about), never written", () => {
    const plan = planSysctls(base);
    expect(plan.expectations.map((e) => e.name)).toEqual(["net/bridge/bridge-nf-call-iptables"]);
    expect(plan.settings.some((s) => s.name.startsWith("net/bridge"))).toBe(false);
  });
});

describe("applying the plan", () => {
  const plan = planSysctls({ ...base, strictARP: true });

  test("writes what differs, keeps what matches, never lowers nf_conntrack_max", async () => {
    const sysctl = createFakeSysctl({
      "net/netfilter/nf_conntrack_max": 262144,
      "net/ipv4/ip_forward": 1,
      "net/bridge/bridge-nf-call-iptables": 1,
    });
    const log = memoryLogger();
    const out = await applySysctls(plan, sysctl, log);
    const byName = Object.fromEntries(out.map((o) => [o.name, o.action]));
    expect(byName["net/netfilter/nf_conntrack_max"]).toBe("kept-higher");
    expect(byName["net/ipv4/ip_forward"]).toBe("unchanged");
    expect(byName["net/ipv4/vs/conntrack"]).toBe("set");
    expect(sysctl.values.get("net/ipv4/conf/all/arp_announce")).toBe("2");
    expect(sysctl.writes.some((w) => w.name === "net/ipv4/ip_forward")).toBe(false);
    expect(log.lines.some((l) => l.includes("bridge-nf-call-iptables"))).toBe(false);
  });

  test("a failed write is reported, not thrown; a missing br_netfilter is warned about", async () => {
    const sysctl = createFakeSysctl({}, { readOnly: ["net/ipv4/ip_forward"] });
    const log = memoryLogger();
    const out = await applySysctls(plan, sysctl, log);
    expect(out.find((o) => o.name === "net/ipv4/ip_forward")?.action).toBe("failed");
    expect(log.lines.some((l) => l.startsWith("E") && l.includes("net/ipv4/ip_forward"))).toBe(true);
    expect(log.lines.some((l) => l.startsWith("W") && l.includes("bridge-nf-call-iptables"))).toBe(true);
  });

  test("under --dry-run each write becomes a sysctl -w command", async () => {
    const recorded: string[][] = [];
    const sysctl = createRecordingSysctl(createFakeSysctl({ "net/ipv4/ip_forward": 0 }), (a) =>
      recorded.push(a),
    );
    await applySysctls(planSysctls({ ...base, modeSysctls: undefined }), sysctl, memoryLogger());
    expect(recorded).toContainEqual([
      "sysctl",
      "-w",
      "net.netfilter.nf_conntrack_tcp_timeout_established=86400",
    ]);
    expect(recorded).toContainEqual(["sysctl", "-w", "net.netfilter.nf_conntrack_max=131072"]);
  });
});
