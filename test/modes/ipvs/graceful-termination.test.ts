import { describe, expect, test } from "bun:test";
import { GRACEFUL_CHECK_INTERVAL_MS } from "../../../src/modes/ipvs/graceful-termination.ts";
import type { Protocol } from "../../../src/util/net/protocol.ts";
import { endpointSlice, ep, realsOf, type Setup, service, setup, virtualServerKeys } from "./harness.ts";

const VIP = "198.51.100.41";

function web(protocol: Protocol = "TCP") {
  const ports = [{ name: "p80", port: 80, protocol }];
  return {
    svc: service("ns1", "web", { clusterIP: VIP, ports }),
    slice: (...ips: string[]) =>
      endpointSlice(
        "ns1",
        "web",
        ips.map((ip) => ep(ip)),
        { ports: [{ name: "p80", port: 8080, protocol }] },
      ),
  };
}

/** Syncs two endpoints, gives `busy` open connections, then removes it. */
async function removeBusyEndpoint(s: Setup, protocol: Protocol, active: number, inactive = 0) {
  const w = web(protocol);
  s.cluster.apply(w.svc, w.slice("192.0.2.11", "192.0.2.12"));
  await s.sync();
  s.host.ipvs.setConnections(
    { address: VIP, port: 80, protocol },
    { address: "192.0.2.12", port: 8080 },
    active,
    inactive,
  );
  s.cluster.apply(w.slice("192.0.2.11"));
  await s.sync();
  return w;
}

const restores = (s: Setup) => s.host.exec.callsTo("ipvsadm").filter((c) => c.args[0] === "--restore");

describe("graceful termination", () => {
  test("a removed TCP real server with connections is drained at weight 0, not deleted", async () => {
    const s = setup();
    await removeBusyEndpoint(s, "TCP", 3);
    expect(realsOf(s.host, "TCP", VIP, 80)).toEqual(["192.0.2.11:8080 w1", "192.0.2.12:8080 w0"]);
    expect(s.proxier.terminatingRealServers()).toBe(1);
    expect(s.proxier.desiredVirtualServers()[0]!.realServers).toEqual([
      { address: "192.0.2.11", port: 8080, weight: 1 },
      { address: "192.0.2.12", port: 8080, weight: 0 },
    ]);
    // Further syncs leave it alone while it still has connections.
    await s.sync();
    expect(s.proxier.lastSyncStats()?.ipvsRestoreLines).toBe(0);
  });

  test("a draining real server shows on its own virtual server only, not on the port's others", async () => {
    const s = setup();
    const ports = [{ name: "p80", port: 80, protocol: "TCP" as const }];
    const svc = service("ns1", "web", {
      clusterIP: VIP,
      ports,
      externalIPs: ["203.0.113.41", "203.0.113.42"],
    });
    const slice = (...ips: string[]) =>
      endpointSlice(
        "ns1",
        "web",
        ips.map((ip) => ep(ip)),
        { ports: [{ name: "p80", port: 8080, protocol: "TCP" }] },
      );
    s.cluster.apply(svc, slice("192.0.2.11", "192.0.2.12"));
    await s.sync();
    s.host.ipvs.setConnections(
      { address: "203.0.113.41", port: 80, protocol: "TCP" },
      { address: "192.0.2.12", port: 8080 },
      1,
      0,
    );
    s.cluster.apply(slice("192.0.2.11"));
    await s.sync();
    const serving = [{ address: "192.0.2.11", port: 8080, weight: 1 }];
    const views = s.proxier.desiredVirtualServers();
    expect(views.map((v) => [v.address, v.realServers])).toEqual([
      [VIP, serving],
      ["203.0.113.41", [...serving, { address: "192.0.2.12", port: 8080, weight: 0 }]],
      ["203.0.113.42", serving],
    ]);
  });

  test("inactive connections count too", async () => {
    const s = setup();
    await removeBusyEndpoint(s, "TCP", 0, 2);
    expect(realsOf(s.host, "TCP", VIP, 80)).toEqual(["192.0.2.11:8080 w1", "192.0.2.12:8080 w0"]);
  });

  test("the periodic check deletes it once its connections are gone", async () => {
    const s = setup();
    await removeBusyEndpoint(s, "TCP", 3);
    await s.clock.advanceAsync(GRACEFUL_CHECK_INTERVAL_MS);
    expect(realsOf(s.host, "TCP", VIP, 80)).toEqual(["192.0.2.11:8080 w1", "192.0.2.12:8080 w0"]);
    s.host.ipvs.setConnections(
      { address: VIP, port: 80, protocol: "TCP" },
      { address: "192.0.2.12", port: 8080 },
      0,
      0,
    );
    await s.clock.advanceAsync(GRACEFUL_CHECK_INTERVAL_MS);
    expect(realsOf(s.host, "TCP", VIP, 80)).toEqual(["192.0.2.11:8080 w1"]);
    expect(s.proxier.terminatingRealServers()).toBe(0);
    // Nothing left to check: no timer stays armed.
    expect(s.clock.pendingTimers()).toEqual([]);
  });

  test("everything that drained is deleted in one ipvsadm --restore", async () => {
    const s = setup();
    const a = service("ns1", "a", { clusterIP: "198.51.100.41" });
    const b = service("ns1", "b", { clusterIP: "198.51.100.42" });
    const ips = ["192.0.2.11", "192.0.2.12", "192.0.2.13"];
    s.cluster.apply(
      a,
      b,
      endpointSlice(
        "ns1",
        "a",
        ips.map((ip) => ep(ip)),
      ),
      endpointSlice(
        "ns1",
        "b",
        ips.map((ip) => ep(ip)),
      ),
    );
    await s.sync();
    for (const vip of ["198.51.100.41", "198.51.100.42"]) {
      for (const ip of ips.slice(1)) {
        s.host.ipvs.setConnections(
          { address: vip, port: 80, protocol: "TCP" },
          { address: ip, port: 8080 },
          1,
          0,
        );
      }
    }
    s.cluster.apply(
      endpointSlice("ns1", "a", [ep("192.0.2.11")]),
      endpointSlice("ns1", "b", [ep("192.0.2.11")]),
    );
    await s.sync();
    expect(s.proxier.terminatingRealServers()).toBe(4);
    for (const vip of ["198.51.100.41", "198.51.100.42"]) {
      for (const ip of ips.slice(1)) {
        s.host.ipvs.setConnections(
          { address: vip, port: 80, protocol: "TCP" },
          { address: ip, port: 8080 },
          0,
          0,
        );
      }
    }
    const before = restores(s).length;
    expect(await s.proxier.checkGracefulTermination()).toBe(4);
    expect(restores(s).length - before).toBe(1);
    expect(realsOf(s.host, "TCP", "198.51.100.42", 80)).toEqual(["192.0.2.11:8080 w1"]);
  });

  test("a TCP real server without connections is deleted at once", async () => {
    const s = setup();
    await removeBusyEndpoint(s, "TCP", 0);
    expect(realsOf(s.host, "TCP", VIP, 80)).toEqual(["192.0.2.11:8080 w1"]);
    expect(s.proxier.terminatingRealServers()).toBe(0);
  });

  test("UDP real servers are deleted at once, connections or not", async () => {
    const s = setup();
    await removeBusyEndpoint(s, "UDP", 5, 5);
    expect(realsOf(s.host, "UDP", VIP, 80)).toEqual(["192.0.2.11:8080 w1"]);
    expect(s.proxier.terminatingRealServers()).toBe(0);
  });

  test("SCTP real servers are deleted at once too (v1.31's rule)", async () => {
    const s = setup();
    await removeBusyEndpoint(s, "SCTP", 5);
    expect(realsOf(s.host, "SCTP", VIP, 80)).toEqual(["192.0.2.11:8080 w1"]);
  });

  test("an endpoint that comes back is restored at once and leaves the pending list", async () => {
    const s = setup();
    const w = await removeBusyEndpoint(s, "TCP", 3);
    s.cluster.apply(w.slice("192.0.2.11", "192.0.2.12"));
    await s.sync();
    expect(realsOf(s.host, "TCP", VIP, 80)).toEqual(["192.0.2.11:8080 w1", "192.0.2.12:8080 w1"]);
    expect(s.proxier.terminatingRealServers()).toBe(0);
    // Restored in place: the edit keeps its connections, no delete and re-add.
    expect(restores(s).at(-1)!.stdin).toBe(`-e -t ${VIP}:80 -r 192.0.2.12:8080 -m -w 1\n`);
    s.host.ipvs.setConnections(
      { address: VIP, port: 80, protocol: "TCP" },
      { address: "192.0.2.12", port: 8080 },
      0,
      0,
    );
    await s.clock.advanceAsync(GRACEFUL_CHECK_INTERVAL_MS);
    expect(realsOf(s.host, "TCP", VIP, 80)).toEqual(["192.0.2.11:8080 w1", "192.0.2.12:8080 w1"]);
  });

  test("a drained real server is deleted by the next sync without waiting for the check", async () => {
    const s = setup();
    await removeBusyEndpoint(s, "TCP", 3);
    s.host.ipvs.setConnections(
      { address: VIP, port: 80, protocol: "TCP" },
      { address: "192.0.2.12", port: 8080 },
      0,
      0,
    );
    await s.sync();
    expect(realsOf(s.host, "TCP", VIP, 80)).toEqual(["192.0.2.11:8080 w1"]);
  });

  test("removing the Service deletes the virtual server outright and forgets its pending reals", async () => {
    const s = setup();
    const w = await removeBusyEndpoint(s, "TCP", 3);
    s.cluster.remove(w.svc);
    await s.sync();
    expect(virtualServerKeys(s.host)).toEqual([]);
    expect(s.proxier.terminatingRealServers()).toBe(0);
  });

  test("stop() disarms the periodic check", async () => {
    const s = setup();
    await removeBusyEndpoint(s, "TCP", 3);
    expect(s.clock.pendingTimers()).toHaveLength(1);
    s.proxier.stop();
    expect(s.clock.pendingTimers()).toEqual([]);
  });
});
