// Chain declarations in name order: the kernel ends up with the same tables either way (checked
// with the real tools in a netns), and a big sync's restore input declares its chains so.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  MIN_CHAINS_TO_ORDER,
  orderChainDeclarations,
  orderDeclarationBlocks,
} from "../../../src/host/iptables/chain-order.ts";
import { endpointSlice, ep, service, setup } from "../../modes/iptables/harness.ts";
import { createTestNetns, type TestNetns } from "./netns.ts";

describe("orderChainDeclarations", () => {
  test("sorts declaration lines by chain name, as bytes, once there are enough of them", () => {
    const lines = [
      ":b - [0:0]",
      ":KUBE-SVC-AB - [0:0]",
      ":KUBE-SVC-A - [0:0]",
      ":A-X - [0:0]",
      ":AX - [0:0]",
    ];
    orderChainDeclarations(lines, 5);
    // A name that is a prefix of another sorts first; "-" sorts before letters, upper case before lower.
    expect(lines).toEqual([
      ":A-X - [0:0]",
      ":AX - [0:0]",
      ":KUBE-SVC-A - [0:0]",
      ":KUBE-SVC-AB - [0:0]",
      ":b - [0:0]",
    ]);
  });

  test("declarations collected in blocks come back as one ordered block, or as they were", () => {
    const blocks = [":KUBE-SVC-B - [0:0]\n:KUBE-SEP-Z - [0:0]", ":KUBE-SVC-A - [0:0]"];
    expect(orderDeclarationBlocks(blocks, 3, 3)).toEqual([
      ":KUBE-SEP-Z - [0:0]\n:KUBE-SVC-A - [0:0]\n:KUBE-SVC-B - [0:0]",
    ]);
    expect(orderDeclarationBlocks(blocks, 3, 4)).toBe(blocks);
    expect(orderDeclarationBlocks([], 0)).toEqual([]);
  });

  test("fewer than the threshold are left in the order they were written", () => {
    const lines = [":KUBE-SVC-B - [0:0]", ":KUBE-SEP-Z - [0:0]"];
    orderChainDeclarations(lines);
    expect(lines).toEqual([":KUBE-SVC-B - [0:0]", ":KUBE-SEP-Z - [0:0]"]);
    expect(MIN_CHAINS_TO_ORDER).toBe(1000);
  });
});

/** A restore input shaped like a sync's: services declare SVC and SEP chains in service order. */
function syncShapedInput(services: number, ordered: boolean): string {
  const chains: string[] = [":KUBE-SERVICES - [0:0]", ":KUBE-MARK-MASQ - [0:0]"];
  const rules: string[] = ["-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000"];
  for (let i = 0; i < services; i++) {
    // Names deliberately out of order: a hash-like suffix per service.
    const svc = `KUBE-SVC-${((i * 7919) % 10007).toString(36).toUpperCase().padStart(4, "Q")}`;
    const seps = [0, 1].map((j) => `KUBE-SEP-${((i * 31 + j * 17) % 9973).toString(36).toUpperCase()}X${j}`);
    chains.push(`:${svc} - [0:0]`, ...seps.map((s) => `:${s} - [0:0]`));
    const vip = `198.18.${(i >> 8) & 255}.${i & 255}`;
    rules.push(`-A KUBE-SERVICES -d ${vip}/32 -p tcp -m tcp --dport 80 -j ${svc}`);
    seps.forEach((s, j) => {
      const prob = j === 0 ? " -m statistic --mode random --probability 0.50000000000" : "";
      rules.push(`-A ${svc}${prob} -j ${s}`);
      rules.push(`-A ${s} -p tcp -m tcp -j DNAT --to-destination 198.19.${i & 255}.${j + 1}:8080`);
    });
  }
  if (ordered) orderChainDeclarations(chains, 1);
  return `*nat\n${chains.join("\n")}\n${rules.join("\n")}\nCOMMIT\n`;
}

describe("the kernel ends up with the same tables (real iptables, netns)", () => {
  const spaces: TestNetns[] = [];
  beforeAll(async () => {
    spaces.push(await createTestNetns(), await createTestNetns());
  });
  afterAll(async () => {
    for (const ns of spaces) await ns.remove();
  });

  for (const backend of ["legacy", "nft"] as const) {
    test(`${backend}: as given and in name order, iptables-save prints the same nat table`, async () => {
      const inputs = [syncShapedInput(300, false), syncShapedInput(300, true)];
      expect(inputs[1]).not.toBe(inputs[0]!);
      const saves: string[] = [];
      for (const [i, ns] of spaces.entries()) {
        const restore = `iptables-${backend}-restore`;
        const res = await ns.exec.run({
          cmd: restore,
          args: ["--noflush"],
          stdin: inputs[i]!,
        });
        expect(res.stderr).toBe("");
        expect(res.code).toBe(0);
        const save = await ns.exec.run({ cmd: `iptables-${backend}-save`, args: ["-t", "nat"] });
        expect(save.code).toBe(0);
        saves.push(save.stdout.replace(/^#.*\n/gm, ""));
        await ns.exec.run({ cmd: `iptables-${backend}`, args: ["-t", "nat", "-F"] });
        await ns.exec.run({ cmd: `iptables-${backend}`, args: ["-t", "nat", "-X"] });
      }
      expect(saves[0]!.split("\n").length).toBeGreaterThan(1500);
      expect(saves[1]).toBe(saves[0]!);
    });
  }
});

describe("a sync's restore input", () => {
  const natDeclarations = (payload: string) =>
    payload
      .slice(payload.indexOf("*nat\n"))
      .split("\n")
      .filter((l) => l.startsWith(":"));

  test("at 1,000 service ports and more, the nat chains are declared in name order", async () => {
    const s = setup();
    for (let i = 0; i < 500; i++) {
      s.cluster.apply(
        service("ns1", `svc${i}`, { clusterIP: `198.51.100.${(i % 250) + 1}` }),
        endpointSlice("ns1", `svc${i}`, [ep(`192.0.2.${(i % 250) + 1}`)]),
      );
    }
    const declared = natDeclarations(await s.sync());
    // 500 SVC + 500 SEP + the top-level chains.
    expect(declared.length).toBeGreaterThan(MIN_CHAINS_TO_ORDER);
    expect(declared).toEqual([...declared].sort());
  });

  test("below that, in the order the proxier wrote them (each service's chains together)", async () => {
    const s = setup();
    for (let i = 0; i < 20; i++) {
      s.cluster.apply(
        service("ns1", `svc${i}`, { clusterIP: `198.51.100.${i + 1}` }),
        endpointSlice("ns1", `svc${i}`, [ep(`192.0.2.${i + 1}`)]),
      );
    }
    const declared = natDeclarations(await s.sync());
    expect(declared.slice(0, 2)).toEqual([":KUBE-SERVICES - [0:0]", ":KUBE-NODEPORTS - [0:0]"]);
    expect(declared).not.toEqual([...declared].sort());
  });
});
