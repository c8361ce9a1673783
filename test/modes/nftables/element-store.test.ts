import { describe, expect, test } from "bun:test";
import { NftTransaction } from "../../../src/host/nft/transaction.ts";
import { ElementStore } from "../../../src/modes/nftables/element-store.ts";
import type { PortElement } from "../../../src/modes/nftables/port-rules.ts";

const toExternal = ["goto external-ABC"];
const drop = ["drop"];

/** The text a store writes for ensuring `ports` one after another, then releasing `released`. */
function script(ports: PortElement[][], released: number[]): string {
  const store = new ElementStore();
  const tx = new NftTransaction("ip", "kube-proxy");
  const held = ports.map((p) => store.ensureAll(tx, p));
  for (const i of released) store.releaseAll(tx, held[i]!);
  return tx.render();
}

describe("ElementStore", () => {
  test("a port's elements are released from what it kept: the deletes name each key", () => {
    const a: PortElement[] = [
      { container: "cluster-ips", key: ["198.51.100.1"] },
      { container: "service-ips", key: ["198.51.100.1", "tcp", "80"], value: toExternal },
      { container: "service-ips", key: ["100.64.0.1", "tcp", "80"], value: toExternal },
      { container: "no-endpoint-services", key: ["100.64.0.2", "tcp", "80"], value: drop, comment: "ns/a:p" },
      { container: "hairpin", key: ["203.0.113.5", "203.0.113.5", "tcp", "8080"] },
    ];
    expect(
      script([a], [0])
        .split("\n")
        .filter((l) => l.startsWith("delete")),
    ).toEqual([
      "delete element ip kube-proxy cluster-ips { 198.51.100.1 }",
      "delete element ip kube-proxy service-ips { 198.51.100.1 . tcp . 80 }",
      "delete element ip kube-proxy service-ips { 100.64.0.1 . tcp . 80 }",
      "delete element ip kube-proxy no-endpoint-services { 100.64.0.2 . tcp . 80 }",
      "delete element ip kube-proxy hairpin { 203.0.113.5 . 203.0.113.5 . tcp . 8080 }",
    ]);
  });

  test("an element two ports need is deleted with the second to let it go", () => {
    const shared = { container: "service-ips", key: ["100.64.0.1", "tcp", "80"] };
    const a: PortElement[] = [{ ...shared, value: toExternal }];
    const b: PortElement[] = [{ ...shared, value: ["goto external-XYZ"] }];
    const lines = script([a, b], [1, 0]).split("\n");
    // b replaced a's value; only the last release deletes.
    expect(lines.filter((l) => l.includes("100.64.0.1"))).toEqual([
      "add element ip kube-proxy service-ips { 100.64.0.1 . tcp . 80 : goto external-ABC }",
      "delete element ip kube-proxy service-ips { 100.64.0.1 . tcp . 80 }",
      "add element ip kube-proxy service-ips { 100.64.0.1 . tcp . 80 : goto external-XYZ }",
      "delete element ip kube-proxy service-ips { 100.64.0.1 . tcp . 80 }",
    ]);
  });

  test("a key part with a space (which would not read back from the id) is kept whole", () => {
    const odd: PortElement[] = [
      { container: "service-ips", key: ["a .", "b", "c . d"], value: ["goto x . y"] },
      { container: "cluster-ips", key: ["x y"] },
    ];
    expect(
      script([odd], [0])
        .split("\n")
        .filter((l) => l.startsWith("delete")),
    ).toEqual([
      "delete element ip kube-proxy service-ips { a . . b . c . d }",
      "delete element ip kube-proxy cluster-ips { x y }",
    ]);
  });
});
