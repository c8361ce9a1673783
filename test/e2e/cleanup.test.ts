// --cleanup on a real kernel: what upstream kube-proxy leaves on a node (both backends, both
// families, an ipset) is removed, kubelet's chains stay, and a second run is a no-op.

import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { BINARY, ensureBinary } from "../support/binary.ts";
import { scaled } from "../support/kernel-vm.ts";

const ns = `kpts-${process.pid.toString(36)}-${randomBytes(3).toString("hex")}-clean`;
const inNs = (argv: string[], input?: string) =>
  spawnSync("ip", ["netns", "exec", ns, ...argv], { input, encoding: "utf8", timeout: scaled(30_000) });

const LEFTOVERS = (svcNet: string) => `*filter
:KUBE-FIREWALL - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
-A INPUT -j KUBE-FIREWALL
-A INPUT -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
COMMIT
*nat
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-SVC-TCOU7JCQXEZGVUNU - [0:0]
:KUBE-SEP-Z3U6FYQDEMFVD7BX - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-SERVICES -d ${svcNet} -p tcp -m tcp --dport 80 -j KUBE-SVC-TCOU7JCQXEZGVUNU
-A KUBE-SVC-TCOU7JCQXEZGVUNU -j KUBE-SEP-Z3U6FYQDEMFVD7BX
-A KUBE-SEP-Z3U6FYQDEMFVD7BX -j KUBE-MARK-MASQ
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
COMMIT
`;

afterAll(() => {
  spawnSync("ip", ["netns", "del", ns], { timeout: scaled(10_000) });
});

describe("--cleanup on a real kernel", () => {
  test("removes upstream's leftovers from legacy and nft, IPv4 and IPv6, and the KUBE- ipsets", () => {
    ensureBinary();
    expect(spawnSync("ip", ["netns", "add", ns], { timeout: scaled(10_000) }).status).toBe(0);
    for (const tool of ["iptables-legacy-restore", "iptables-nft-restore"]) {
      expect(inNs([tool, "--noflush"], LEFTOVERS("198.51.100.10/32")).status).toBe(0);
    }
    expect(inNs(["ip6tables-legacy-restore", "--noflush"], LEFTOVERS("2001:db8::10/128")).status).toBe(0);
    expect(inNs(["ipset", "create", "KUBE-CLUSTER-IP", "hash:ip,port"]).status).toBe(0);
    expect(inNs(["ipset", "create", "other-set", "hash:ip"]).status).toBe(0);

    const first = inNs([BINARY, "--cleanup"]);
    expect({ code: first.status, stderr: first.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    for (const save of ["iptables-legacy-save", "iptables-nft-save", "ip6tables-legacy-save"]) {
      const text = inNs([save]).stdout;
      expect(text).not.toMatch(/KUBE-(SERVICES|FORWARD|POSTROUTING|MARK-MASQ|SVC-|SEP-|PROXY-FIREWALL)/);
      expect(text).toContain(":KUBE-FIREWALL");
      expect(text).toContain("-A INPUT -j KUBE-FIREWALL");
    }
    expect(inNs(["ipset", "list", "-n"]).stdout.trim()).toBe("other-set");

    const second = inNs([BINARY, "--cleanup"]);
    expect(second.status).toBe(0);
  });
});
