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

  test("a key part with a space is written back as the text it makes", () => {
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

  test("keys whose parts differ but make the same text are one element", () => {
    const a: PortElement[] = [{ container: "service-ips", key: ["a .", "b"], value: drop }];
    const b: PortElement[] = [{ container: "service-ips", key: ["a", ". b"], value: drop }];
    const lines = script([a, b], [0, 1]).split("\n");
    expect(lines.filter((l) => l !== "")).toEqual([
      "add element ip kube-proxy service-ips { a . . b : drop }",
      "delete element ip kube-proxy service-ips { a . . b }",
    ]);
  });

  test("many elements of one run: each added once, deleted with its port", () => {
    const ips = Array.from({ length: 5000 }, (_, i) => `100.64.${i >> 8}.${i & 255}`);
    const port = (p: string) =>
      ips.map((ip) => ({ container: "service-ips", key: [ip, "tcp", p], value: toExternal }));
    const store = new ElementStore();
    const tx = new NftTransaction("ip", "kube-proxy");
    const a = store.ensureAll(tx, port("80"));
    const b = store.ensureAll(tx, port("80"));
    store.ensureAll(tx, port("81"));
    expect(store.size).toBe(10_000);
    store.releaseAll(tx, a);
    expect(store.size).toBe(10_000);
    store.releaseAll(tx, b);
    expect(store.size).toBe(5000);
    const lines = tx.render().split("\n");
    expect(lines.filter((l) => l.startsWith("add")).length).toBe(10_000);
    expect(lines.filter((l) => l.startsWith("delete"))).toEqual(
      ips.map((ip) => `delete element ip kube-proxy service-ips { ${ip} . tcp . 80 }`),
    );
  });
});
