// ipvs mode reads the node's addresses (NodePort virtual servers, bindings) with the same
// `ip -o addr show`; when it fails, the sync must fail before anything is written, and recover.

import { describe, expect, test } from "bun:test";
import { fail } from "../../../src/exec/testing/fake.ts";
import { NetlinkError } from "../../../src/host/netlink/errors.ts";
import { endpointSlice, ep, fakeHost, NODE_IP, service, setup, virtualServerKeys } from "./harness.ts";

describe("ipvs: local addresses that cannot be listed", () => {
  test("the sync fails with NetlinkError, writes no virtual server, and the retry programs them", async () => {
    const host = fakeHost();
    const state = { broken: true };
    host.exec.on("ip", (req) =>
      state.broken && req.args.join(" ") === "-o addr show"
        ? fail(1, "Cannot open netlink socket: Operation not permitted\n")
        : host.net.handle(req),
    );
    const s = setup({ host });
    s.cluster.apply(
      service("ns", "np", {
        type: "NodePort",
        clusterIP: "198.51.100.41",
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30080 }],
      }),
      endpointSlice("ns", "np", [ep("192.0.2.11")]),
    );
    const err = await s.sync().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NetlinkError);
    expect((err as Error).message).toContain("Operation not permitted");
    expect(virtualServerKeys(host)).toEqual([]);
    expect(host.exec.callsTo("ipvsadm").some((c) => c.stdin !== undefined)).toBe(false);
    state.broken = false;
    await s.sync();
    expect(virtualServerKeys(host)).toContain(`TCP ${NODE_IP}:30080`);
    expect(virtualServerKeys(host)).toContain("TCP 198.51.100.41:80");
  });
});
