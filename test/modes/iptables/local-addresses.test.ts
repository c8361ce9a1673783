// A failing `ip -o addr show` must fail the sync before anything is restored: an empty address
// list would rewrite KUBE-SERVICES without its NodePort tail and silently close every NodePort.
// The previous rules stay, and the next sync (the runner's backoff retry) restores normally.

import { describe, expect, test } from "bun:test";
import { FakeExec, fail, ok } from "../../../src/exec/testing/fake.ts";
import { createNetlinkClient } from "../../../src/host/netlink/client.ts";
import { NetlinkError } from "../../../src/host/netlink/errors.ts";
import { endpointSlice, ep, NODE_IP, service, setup, tableSection } from "./harness.ts";

const IP_ADDR = `1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
2: eth0    inet ${NODE_IP}/24 brd 203.0.113.255 scope global eth0\\       valid_lft forever preferred_lft forever
`;

/** `ip` that fails while `broken` is set, as on a host whose netlink socket is refused. */
function flakyIp() {
  const state = { broken: true };
  const exec = new FakeExec({
    ip: () => (state.broken ? fail(1, "Cannot open netlink socket: Operation not permitted\n") : ok(IP_ADDR)),
  });
  return { state, exec, client: createNetlinkClient({ exec }) };
}

function nodePortSetup() {
  const ip = flakyIp();
  const s = setup({
    config: (c) => {
      c.nodePortAddresses = ["203.0.113.0/24"];
    },
    deps: { localAddresses: () => ip.client.allAddresses() },
  });
  s.cluster.apply(
    service("ns", "np", {
      type: "NodePort",
      clusterIP: "198.51.100.41",
      ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30080 }],
    }),
    endpointSlice("ns", "np", [ep("192.0.2.11")]),
  );
  return { s, ip };
}

const nodePortTail = (payload: string) =>
  tableSection(payload, "nat").filter(
    (l) => l.startsWith("-A KUBE-SERVICES") && l.includes("KUBE-NODEPORTS"),
  );

describe("local addresses that cannot be listed", () => {
  test("the sync fails with a typed error naming ip and its stderr, and nothing is restored", async () => {
    const { s } = nodePortSetup();
    const err = await s.sync().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NetlinkError);
    expect((err as Error).message).toContain("ip -o addr show");
    expect((err as Error).message).toContain("Operation not permitted");
    expect(s.ipt.restores).toEqual([]);
  });

  test("the retry with ip working again restores normally, NodePort tail included", async () => {
    const { s, ip } = nodePortSetup();
    await expect(s.sync()).rejects.toThrow(NetlinkError);
    ip.state.broken = false;
    const payload = await s.sync();
    expect(s.ipt.restores).toHaveLength(1);
    expect(nodePortTail(payload)).toEqual([expect.stringContaining(`-d ${NODE_IP} -j KUBE-NODEPORTS`)]);
  });

  test("after a good sync, a failing ip keeps the previous rules (no restore) until it recovers", async () => {
    const { s, ip } = nodePortSetup();
    ip.state.broken = false;
    await s.sync();
    ip.state.broken = true;
    s.proxier.requestFullSync();
    await expect(s.sync()).rejects.toThrow(NetlinkError);
    expect(s.ipt.restores).toHaveLength(1);
    ip.state.broken = false;
    const payload = await s.sync();
    expect(s.ipt.restores).toHaveLength(2);
    expect(nodePortTail(payload)).toHaveLength(1);
  });
});
