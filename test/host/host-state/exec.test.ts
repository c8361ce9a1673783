import { describe, expect, test } from "bun:test";
import { FakeExec, ok } from "../../../src/exec/testing/fake.ts";
import { hostStateExec } from "../../../src/host/host-state/exec.ts";
import { parseHostState } from "../../../src/host/host-state/schema.ts";

const SAVE = `*filter
:INPUT ACCEPT [0:0]
:KUBE-FIREWALL - [0:0]
-A INPUT -m comment --comment "kubelet firewall" -j KUBE-FIREWALL
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
COMMIT
`;

const state = parseHostState({
  apiVersion: "kube-proxy-ts/v1",
  kind: "HostState",
  iptablesVersion: "iptables v1.8.9 (legacy)",
  iptablesSave: SAVE,
  ipsetSave: "create KUBE-CLUSTER-IP hash:ip,port family inet\nadd KUBE-CLUSTER-IP 198.51.100.10,tcp:80\n",
  ipvsSave: "-A -t 198.51.100.10:80 -s rr\n",
  nfacct: false,
  interfaces: [{ name: "eth0", addresses: ["192.0.2.10/24"] }],
});

function setup() {
  const live = new FakeExec().on("ip6tables-legacy-save", () => ok("*nat\nCOMMIT\n"));
  return { live, exec: hostStateExec(state, live) };
}
const run = (exec: ReturnType<typeof setup>["exec"], cmd: string, args: string[]) => exec.run({ cmd, args });

describe("HostState answers the host's read-only probes", () => {
  test("iptables-save of the stated backend, per table; the other backend is empty", async () => {
    const { exec } = setup();
    expect((await run(exec, "iptables-legacy-save", [])).stdout).toBe(SAVE);
    expect((await run(exec, "iptables-legacy-save", ["-t", "nat"])).stdout).toBe(
      "*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n",
    );
    expect((await run(exec, "iptables-nft-save", [])).stdout).toBe("");
  });

  test("-S and -C are answered from the saved rules", async () => {
    const { exec } = setup();
    expect(
      (await run(exec, "iptables-legacy", ["-w", "5", "-S", "KUBE-FIREWALL", "-t", "filter"])).code,
    ).toBe(0);
    expect((await run(exec, "iptables-legacy", ["-S", "KUBE-NOPE", "-t", "filter"])).code).toBe(1);
    const check = [
      "-w",
      "5",
      "-C",
      "INPUT",
      "-t",
      "filter",
      "-m",
      "comment",
      "--comment",
      "kubelet firewall",
    ];
    expect((await run(exec, "iptables-legacy", [...check, "-j", "KUBE-FIREWALL"])).code).toBe(0);
    expect((await run(exec, "iptables-legacy", [...check, "-j", "KUBE-OTHER"])).code).toBe(1);
  });

  test("versions, ipset, ipvs, interfaces and nfacct come from the state", async () => {
    const { exec } = setup();
    expect((await run(exec, "ip6tables-legacy", ["--version"])).stdout).toBe("ip6tables v1.8.9 (legacy)\n");
    expect((await run(exec, "ipset", ["list", "-n"])).stdout).toBe("KUBE-CLUSTER-IP");
    expect((await run(exec, "ipvsadm", ["-S", "-n"])).stdout).toContain("198.51.100.10:80");
    expect((await run(exec, "ipvsadm", ["-L", "-n", "--exact"])).stdout).toMatch(
      /TCP\s+198\.51\.100\.10:80 rr/,
    );
    expect((await run(exec, "ip", ["-o", "addr", "show"])).stdout).toBe(
      "1: eth0    inet 192.0.2.10/24 scope global eth0",
    );
    expect((await run(exec, "nfacct", ["list"])).code).toBe(1);
  });

  test("what the state omits goes to the live host", async () => {
    const { exec, live } = setup();
    expect((await run(exec, "ip6tables-legacy-save", [])).stdout).toBe("*nat\nCOMMIT\n");
    expect(live.calls.map((c) => c.cmd)).toEqual(["ip6tables-legacy-save"]);
  });
});
