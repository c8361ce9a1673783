// The nftables proxier's transactions run through FakeNft (nft 1.0.6's line-by-line evaluation
// and the kernel's refusals, pinned against the real nft by test/host/nft/fake-vs-real.test.ts)
// instead of a recorder: what the real nft would refuse fails here, and the table the fake
// holds afterwards is checked.

import { describe, expect, test } from "bun:test";
import { createNftClient } from "../../../src/host/nft/client.ts";
import { FakeNft } from "../../../src/host/nft/testing/fake.ts";
import { endpointSlice, ep, NODE, service } from "../../support/proxy-cluster.ts";
import { setupNft } from "./harness.ts";

function onFakeNft() {
  const fake = new FakeNft();
  const nft = createNftClient({ exec: fake.install(), family: "ip", table: "kube-proxy" });
  const s = setupNft({ deps: { nft } });
  const sync = () => s.proxier.sync(s.cluster.input());
  const chains = () => [...(fake.tableState("ip", "kube-proxy")?.chains.keys() ?? [])];
  const sets = () => [...(fake.tableState("ip", "kube-proxy")?.sets.keys() ?? [])];
  return { ...s, fake, sync, chains, sets };
}

const sticky = service("ns1", "sticky", {
  clusterIP: "198.51.100.5",
  clusterIPs: ["198.51.100.5"],
  sessionAffinity: "ClientIP",
  sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
});

describe("nftables proxier on FakeNft", () => {
  test("ClientIP affinity: the affinity sets exist before the rules that name them", async () => {
    const s = onFakeNft();
    s.cluster.apply(
      sticky,
      endpointSlice("ns1", "sticky", [ep("192.0.2.10"), ep("192.0.2.11", { node: NODE })]),
    );
    await s.sync();
    expect(s.sets().filter((n) => n.startsWith("affinity-"))).toHaveLength(2);
    // A partial sync of the same Service (a new endpoint) too.
    s.cluster.apply(
      endpointSlice("ns1", "sticky", [ep("192.0.2.10"), ep("192.0.2.11", { node: NODE }), ep("192.0.2.12")]),
    );
    await s.sync();
    expect(s.sets().filter((n) => n.startsWith("affinity-"))).toHaveLength(3);
  });
});
