import { describe, expect, test } from "bun:test";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import type { ExecRequest } from "../../../src/exec/types.ts";
import { boundAddresses, endpointSlice, ep, realsOf, type Setup, service, setup } from "./harness.ts";

/** Service i: a cluster IP, every fourth one a NodePort, ten endpoints (the first on this node). */
function populate(s: Setup, count: number): void {
  for (let i = 0; i < count; i++) {
    const name = `svc${i}`;
    const clusterIP = `198.51.${100 + Math.floor(i / 250)}.${(i % 250) + 1}`;
    const nodePort =
      i % 4 === 0
        ? { type: "NodePort", ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30000 + i }] }
        : {};
    s.cluster.apply(
      service("ns", name, { clusterIP, ...nodePort }),
      endpointSlice("ns", name, endpointsOf(i, 10)),
    );
  }
}

function endpointsOf(i: number, n: number) {
  return Array.from({ length: n }, (_, k) =>
    ep(`10.${Math.floor(i / 250)}.${i % 250}.${k + 1}`, { node: k === 0 ? "node-a" : "node-b" }),
  );
}

/** "program first-arguments" -> count, for the calls of one sync. */
function commandCounts(calls: readonly ExecRequest[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of calls) {
    const args = c.args.filter((a) => !["-w", "5"].includes(a));
    // iptables -N/-C/-I calls are counted by verb; everything else by its first two words.
    const words = c.cmd === "iptables-nft" ? 1 : 2;
    const key = `${c.cmd} ${args.slice(0, words).join(" ")}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

async function countsOfSyncs(count: number) {
  const s = setup();
  populate(s, count);
  const mark = () => s.host.exec.calls.length;
  const first = mark();
  await s.sync();
  const afterFull = mark();
  // One endpoint of one Service changes: its local endpoint is replaced by another local one.
  s.cluster.apply(
    endpointSlice("ns", "svc1", [ep("10.0.1.99", { node: "node-a" }), ...endpointsOf(1, 10).slice(1)]),
  );
  await s.sync();
  const afterChange = mark();
  const changeStats = s.proxier.lastSyncStats()!;
  await s.sync();
  const calls = s.host.exec.calls;
  return {
    full: commandCounts(calls.slice(first, afterFull)),
    change: commandCounts(calls.slice(afterFull, afterChange)),
    quiet: commandCounts(calls.slice(afterChange)),
    changeStats,
    quietStats: s.proxier.lastSyncStats()!,
    virtualServers: s.host.ipvs.services().length,
  };
}

describe("batching", () => {
  test("10 and 1,000 Services: the same commands, the same number of times, per sync", async () => {
    const small = await countsOfSyncs(10);
    const large = await countsOfSyncs(1000);
    expect(large.virtualServers).toBe(1000 + 250 * 2);
    expect(large.full).toEqual(small.full);
    expect(large.change).toEqual(small.change);
    expect(large.quiet).toEqual(small.quiet);
    // A sync after a change: the changed virtual server read, one write per tool. The sets and
    // addresses it touched are known from the last sync (SyncScope): no `ipset save`, no
    // address listing.
    expect(large.change).toEqual({
      "ipvsadm -L -n": 1,
      "ipvsadm --restore": 1,
      "ipset restore -exist": 1,
      "iptables-nft-restore --noflush --counters": 1,
    });
    // Nothing changed: no reads (the periodic full reconcile compares everything), only the
    // iptables rules rewritten as upstream does each sync.
    expect(large.quiet).toEqual({ "iptables-nft-restore --noflush --counters": 1 });
  });

  test("the first (full) sync adds the dummy device, chains and jumps, and one write per tool", async () => {
    const { full } = await countsOfSyncs(10);
    expect(full["ip link add"]).toBe(1);
    expect(full["ip -force -batch"]).toBe(1);
    expect(full["ipvsadm --restore"]).toBe(1);
    expect(full["ipset restore -exist"]).toBe(1);
    expect(full["iptables-nft-restore --noflush --counters"]).toBe(1);
    // Eleven chains ensured, nine jump rules checked (-C) and inserted (-I).
    expect(full["iptables-nft -N"]).toBe(11);
    expect(full["iptables-nft -C"]).toBe(9);
    expect(full["iptables-nft -I"]).toBe(9);
  });

  test("a partial sync unbinds and unlists what it touched from the last sync's state alone", async () => {
    const s = setup();
    populate(s, 20);
    await s.sync();
    const ip = "198.51.100.2";
    expect(boundAddresses(s.host)).toContain(ip);
    const svc1 = service("ns", "svc1", { clusterIP: ip });
    const from = s.host.exec.calls.length;
    s.cluster.remove(svc1);
    await s.sync();
    const counts = commandCounts(s.host.exec.calls.slice(from));
    expect(counts["ipset save"]).toBeUndefined();
    expect(counts["ip -o"]).toBeUndefined();
    expect(s.proxier.lastSyncStats()).toMatchObject({ reconcile: "partial", ipBatchLines: 1 });
    expect(boundAddresses(s.host)).not.toContain(ip);
    expect(s.host.ipset.entries("KUBE-CLUSTER-IP")).not.toContain(`${ip},tcp:80`);
    expect(s.host.ipvs.services().some((v) => v.server.address === ip)).toBe(false);
    // Back again: bound and listed again, still without reading the sets or addresses.
    const again = s.host.exec.calls.length;
    s.cluster.apply(svc1, endpointSlice("ns", "svc1", endpointsOf(1, 10)));
    await s.sync();
    expect(commandCounts(s.host.exec.calls.slice(again))["ipset save"]).toBeUndefined();
    expect(s.proxier.lastSyncStats()).toMatchObject({ reconcile: "partial", ipBatchLines: 1 });
    expect(realsOf(s.host, "TCP", ip, 80)).toHaveLength(10);
    expect(boundAddresses(s.host)).toContain(ip);
    expect(s.host.ipset.entries("KUBE-CLUSTER-IP")).toContain(`${ip},tcp:80`);
  });

  test("a change to more virtual servers than are read one by one reads the whole table", async () => {
    const s = setup();
    populate(s, 10);
    await s.sync();
    const from = s.host.exec.calls.length;
    s.cluster.apply(
      ...Array.from({ length: 20 }, (_, i) =>
        service("ns", `more${i}`, { clusterIP: `198.51.110.${i + 1}` }),
      ),
    );
    await s.sync();
    const lists = s.host.exec.calls.slice(from).filter((c) => c.cmd === "ipvsadm" && c.args[0] === "-L");
    expect(lists.map((c) => c.args)).toEqual([["-L", "-n", "--exact"]]);
    expect(s.proxier.lastSyncStats()).toMatchObject({ reconcile: "partial", ipvsRestoreLines: 20 });
  });

  test("a one-endpoint change replans one port and writes a handful of lines", async () => {
    const { changeStats, quietStats } = await countsOfSyncs(1000);
    // The old real server goes (it has no connections), the new one comes; the hairpin entry moves.
    expect(changeStats).toMatchObject({
      fullSync: false,
      recomputedPorts: 1,
      ipvsRestoreLines: 2,
      ipsetRestoreLines: 2,
      ipBatchLines: 0,
    });
    expect(quietStats).toMatchObject({ recomputedPorts: 0, ipvsRestoreLines: 0, ipsetRestoreLines: 0 });
  });
});

describe("write order", () => {
  const writes = (calls: readonly ExecRequest[]) =>
    calls
      .map((c) => `${c.cmd} ${c.args[0]}`)
      .filter(
        (w) => ["ipset restore", "ipvsadm --restore", "ip -force"].includes(w) || w.endsWith("-restore -w"),
      );

  test("a full reconcile starts the sets and IPVS together; a change writes IPVS first, then the sets, then iptables", async () => {
    const s = setup();
    populate(s, 3);
    await s.sync();
    expect(s.proxier.lastSyncStats()?.reconcile).toBe("full");
    const full = writes(s.host.exec.calls);
    expect(full.slice(0, 3)).toEqual(["ipset restore", "ipvsadm --restore", "ip -force"]);
    const mark = s.host.exec.calls.length;
    // A new local endpoint: a real server and a KUBE-LOOP-BACK member.
    s.cluster.apply(
      endpointSlice("ns", "svc1", [ep("10.0.1.99", { node: "node-a" }), ...endpointsOf(1, 10)]),
    );
    await s.sync();
    expect(s.proxier.lastSyncStats()?.reconcile).toBe("partial");
    expect(writes(s.host.exec.calls.slice(mark)).slice(0, 2)).toEqual(["ipvsadm --restore", "ipset restore"]);
    expect(s.host.exec.calls.at(-1)?.cmd).toBe("iptables-nft-restore");
    expect(realsOf(s.host, "TCP", "198.51.100.2", 80)).toContain("10.0.1.99:8080 w1");
    expect(s.host.ipset.entries("KUBE-LOOP-BACK")).toContain("10.0.1.99,tcp:8080,10.0.1.99");
  });
});

test("a full reconcile has IPVS written while ipset restore is still running", async () => {
  const s = setup();
  populate(s, 3);
  let ipvsStarted!: () => void;
  const started = new Promise<void>((resolve) => {
    ipvsStarted = resolve;
  });
  const ipset = s.host.ipset.install(new FakeExec());
  const ipvs = s.host.ipvs.install(new FakeExec());
  s.host.exec.on("ipvsadm", (req) => {
    if (req.args[0] === "--restore") ipvsStarted();
    return ipvs.run(req);
  });
  // The restore of the sets finishes only once IPVS is being written.
  s.host.exec.on("ipset", async (req) => {
    if (req.args[0] === "restore") await started;
    return ipset.run(req);
  });
  await s.sync();
  expect(realsOf(s.host, "TCP", "198.51.100.2", 80)).toHaveLength(10);
  expect(s.host.ipset.entries("KUBE-CLUSTER-IP")).toHaveLength(3);
});

describe("partial syncs that only add", () => {
  const lists = (calls: readonly ExecRequest[]) =>
    calls.filter((c) => c.cmd === "ipvsadm" && c.args[0] === "-L").length;

  test("a new endpoint or a new Service is written without listing IPVS; a gone endpoint is listed first", async () => {
    const s = setup();
    populate(s, 3);
    await s.sync();
    let mark = s.host.exec.calls.length;
    s.cluster.apply(
      endpointSlice("ns", "svc1", [...endpointsOf(1, 10), ep("10.0.1.99", { node: "node-b" })]),
    );
    await s.sync();
    expect(s.proxier.lastSyncStats()?.reconcile).toBe("partial");
    expect(lists(s.host.exec.calls.slice(mark))).toBe(0);
    expect(realsOf(s.host, "TCP", "198.51.100.2", 80)).toContain("10.0.1.99:8080 w1");

    mark = s.host.exec.calls.length;
    s.cluster.apply(
      service("ns", "new", { clusterIP: "198.51.101.9" }),
      endpointSlice("ns", "new", [ep("10.9.9.9")]),
    );
    await s.sync();
    expect(lists(s.host.exec.calls.slice(mark))).toBe(0);
    expect(realsOf(s.host, "TCP", "198.51.101.9", 80)).toEqual(["10.9.9.9:8080 w1"]);

    // A real server that goes needs the kernel's connection counts.
    mark = s.host.exec.calls.length;
    s.cluster.apply(endpointSlice("ns", "svc1", endpointsOf(1, 10)));
    await s.sync();
    expect(lists(s.host.exec.calls.slice(mark))).toBe(1);
    expect(realsOf(s.host, "TCP", "198.51.100.2", 80)).not.toContain("10.0.1.99:8080 w1");
  });

  test("a virtual server deleted behind our back fails the adding sync, and the retry restores it", async () => {
    const s = setup();
    populate(s, 3);
    await s.sync();
    s.host.ipvs.load("-D -t 198.51.100.2:80\n");
    expect(realsOf(s.host, "TCP", "198.51.100.2", 80)).toBeUndefined();
    s.cluster.apply(
      endpointSlice("ns", "svc1", [...endpointsOf(1, 10), ep("10.0.1.99", { node: "node-b" })]),
    );
    await expect(s.sync()).rejects.toThrow();
    await s.sync();
    expect(realsOf(s.host, "TCP", "198.51.100.2", 80)).toHaveLength(11);
  });
});
