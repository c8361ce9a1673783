import { describe, expect, test } from "bun:test";
import { HostInputError } from "../../../src/host/errors.ts";
import { orderDeclarationBlocks } from "../../../src/host/iptables/chain-order.ts";
import { ChainDeclarations } from "../../../src/modes/iptables/chain-declarations.ts";
import { chainLine } from "../../../src/proxy/netfilter/chains.ts";

/** Names with shared prefixes and every character a chain name may hold. */
function names(n: number): string[] {
  const chars = "AZaz09_.+-";
  return Array.from({ length: n }, (_, i) => {
    const tail = Array.from({ length: i % 7 }, (_, k) => chars[(i * 7 + k * 3) % chars.length]).join("");
    return `KUBE-SEP-${(i * 2654435761) % 9973}${tail}`;
  });
}

describe("ChainDeclarations", () => {
  test.each([0, 5, 999, 1000, 5000])(
    "%i chains: the lines the declaration lines sorted as text give",
    (n) => {
      const list = names(n);
      const d = new ChainDeclarations();
      d.pushAll(list);
      expect(d.length).toBe(n);
      const lines = list.map(chainLine);
      const want = orderDeclarationBlocks(lines.length ? [lines.join("\n")] : [], lines.length).join("\n");
      expect(d.blocks().join("\n")).toBe(want);
    },
  );

  test("a name that is a prefix of another sorts first, as its line does", () => {
    const d = new ChainDeclarations();
    d.pushAll(["KUBE-A-", "KUBE-A", "KUBE-A+", "KUBE-A."]);
    expect(d.blocks(1)).toEqual([":KUBE-A - [0:0]\n:KUBE-A+ - [0:0]\n:KUBE-A- - [0:0]\n:KUBE-A. - [0:0]"]);
    expect([":KUBE-A- - [0:0]", ":KUBE-A - [0:0]", ":KUBE-A+ - [0:0]", ":KUBE-A. - [0:0]"].sort()).toEqual(
      d.blocks(1)[0]!.split("\n"),
    );
  });

  test("a name iptables would not take is refused when declared", () => {
    expect(() => new ChainDeclarations().push("bad name")).toThrow(HostInputError);
    expect(() => new ChainDeclarations().push("X".repeat(29))).toThrow(HostInputError);
  });
});
