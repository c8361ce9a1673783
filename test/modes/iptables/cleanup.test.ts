import { describe, expect, test } from "bun:test";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { createIptablesClient } from "../../../src/host/iptables/client.ts";
import { FakeIptables } from "../../../src/host/iptables/testing/fake.ts";
import { cleanupIptables, cleanupPayload } from "../../../src/modes/iptables/cleanup.ts";

// What a node looks like after upstream kube-proxy (iptables mode) ran next to kubelet.
const LEFT_BEHIND = `*mangle
:PREROUTING ACCEPT [0:0]
:KUBE-IPTABLES-HINT - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:KUBE-PROXY-CANARY - [0:0]
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-PROXY-CANARY - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-SERVICES - [0:0]
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A INPUT -j KUBE-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -j KUBE-FIREWALL
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-SERVICES -d 198.51.100.50/32 -p tcp -m comment --comment "default/pending:grpc has no endpoints" -m tcp --dport 9000 -j REJECT --reject-with icmp-port-unreachable
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-PROXY-CANARY - [0:0]
:KUBE-SEP-Z3U6FYQDEMFVD7BX - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-TCOU7JCQXEZGVUNU - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SEP-Z3U6FYQDEMFVD7BX -s 203.0.113.11/32 -m comment --comment "default/web:http" -j KUBE-MARK-MASQ
-A KUBE-SEP-Z3U6FYQDEMFVD7BX -p tcp -m comment --comment "default/web:http" -m tcp -j DNAT --to-destination 203.0.113.11:8080
-A KUBE-SERVICES -d 198.51.100.10/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-TCOU7JCQXEZGVUNU
-A KUBE-SVC-TCOU7JCQXEZGVUNU -m comment --comment "default/web:http -> 203.0.113.11:8080" -j KUBE-SEP-Z3U6FYQDEMFVD7BX
COMMIT
`;

function setup() {
  const fake = new FakeIptables({ backend: "legacy" });
  fake.load(LEFT_BEHIND);
  const client = createIptablesClient({
    exec: fake.install(new FakeExec(), "IPv4"),
    family: "IPv4",
    backend: "legacy",
  });
  return { fake, client };
}

describe("--cleanup (iptables state)", () => {
  test("removes every kube-proxy chain and jump; kubelet's chains and rules stay", async () => {
    const { fake, client } = setup();
    const r = await cleanupIptables(client);
    expect(r.error).toBeUndefined();
    const userChains = (t: "nat" | "filter" | "mangle") =>
      fake
        .chains(t)
        .filter((c) => c.startsWith("KUBE-"))
        .sort();
    expect(userChains("nat")).toEqual(["KUBE-KUBELET-CANARY"]);
    expect(userChains("filter")).toEqual(["KUBE-FIREWALL", "KUBE-KUBELET-CANARY"]);
    expect(userChains("mangle")).toEqual(["KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY"]);
    expect(fake.rules("filter", "INPUT")).toEqual(["-j KUBE-FIREWALL"]);
    expect(fake.rules("filter", "OUTPUT")).toEqual(["-j KUBE-FIREWALL"]);
    expect(fake.rules("nat", "PREROUTING")).toEqual([]);
    expect(fake.rules("filter", "KUBE-FIREWALL").length).toBe(1);
    expect(r.removedChains).toBe(7 + 6 + 1);
  });

  test("running it twice is fine: the second run finds nothing to do", async () => {
    const { client } = setup();
    await cleanupIptables(client);
    expect(await cleanupIptables(client)).toEqual({ removedChains: 0 });
  });

  test("a clean host yields an empty payload", () => {
    expect(cleanupPayload("*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n")).toBe("");
  });
});
