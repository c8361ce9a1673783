import { describe, expect, test } from "bun:test";
import { NftTransaction } from "../../../src/host/nft/transaction.ts";
import { ElementStore } from "../../../src/modes/nftables/element-store.ts";
import type { PortElements } from "../../../src/modes/nftables/port-rules.ts";
import { runSteps } from "../../../src/util/time-slice.ts";

const toExternal = ["goto external-ABC"];
const drop = ["drop"];

/** One element, as a run of its own. */
function el(container: string, key: string[], value?: string[], comment?: string): PortElements {
  return {
    container,
    firsts: [key[0]!],
    rest: key.slice(1),
    ...(value ? { value } : {}),
    ...(comment ? { comment } : {}),
  };
}

/** The text a store writes for ensuring `ports` one after another, then releasing `released`. */
function script(ports: PortElements[][], released: number[]): string {
  const store = new ElementStore();
  const tx = new NftTransaction("ip", "kube-proxy");
  const held = ports.map((p) => runSteps(store.ensureAll(tx, p)));
  for (const i of released) runSteps(store.releaseAll(tx, held[i]!));
  return tx.render();
}

describe("ElementStore", () => {
  test("a port's elements are released from what it kept: the deletes name each key", () => {
    const a: PortElements[] = [
      el("cluster-ips", ["198.51.100.1"]),
      {
        container: "service-ips",
        firsts: ["198.51.100.1", "100.64.0.1"],
        rest: ["tcp", "80"],
        value: toExternal,
      },
      el("no-endpoint-services", ["100.64.0.2", "tcp", "80"], drop, "ns/a:p"),
      el("hairpin", ["203.0.113.5", "203.0.113.5", "tcp", "8080"]),
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
    const a = [el("service-ips", ["100.64.0.1", "tcp", "80"], toExternal)];
    const b = [el("service-ips", ["100.64.0.1", "tcp", "80"], ["goto external-XYZ"])];
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
    const odd = [el("service-ips", ["a .", "b", "c . d"], ["goto x . y"]), el("cluster-ips", ["x y"])];
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
    const a = [el("service-ips", ["a .", "b"], drop)];
    const b = [el("service-ips", ["a", ". b"], drop)];
    const lines = script([a, b], [0, 1]).split("\n");
    expect(lines.filter((l) => l !== "")).toEqual([
      "add element ip kube-proxy service-ips { a . . b : drop }",
      "delete element ip kube-proxy service-ips { a . . b }",
    ]);
  });

  test("many elements of one run: each added once, deleted with its port", () => {
    const ips = Array.from({ length: 5000 }, (_, i) => `100.64.${i >> 8}.${i & 255}`);
    const port = (p: string): PortElements[] => [
      { container: "service-ips", firsts: ips, rest: ["tcp", p], value: toExternal },
    ];
    const store = new ElementStore();
    const tx = new NftTransaction("ip", "kube-proxy");
    const a = runSteps(store.ensureAll(tx, port("80")));
    const b = runSteps(store.ensureAll(tx, port("80")));
    runSteps(store.ensureAll(tx, port("81")));
    expect(store.size).toBe(10_000);
    // What a port keeps of a run of addresses is the list it was given, not a copy.
    expect(a.runs[2]).toBe(ips);
    runSteps(store.releaseAll(tx, a));
    expect(store.size).toBe(10_000);
    runSteps(store.releaseAll(tx, b));
    expect(store.size).toBe(5000);
    const lines = tx.render().split("\n");
    expect(lines.filter((l) => l.startsWith("add")).length).toBe(10_000);
    expect(lines.filter((l) => l.startsWith("delete"))).toEqual(
      ips.map((ip) => `delete element ip kube-proxy service-ips { ${ip} . tcp . 80 }`),
    );
  });

  test("a long run pauses every block of elements, each pause with its operations written", () => {
    const ips = Array.from({ length: 10_000 }, (_, i) => `100.64.${i >> 8}.${i & 255}`);
    const store = new ElementStore();
    const tx = new NftTransaction("ip", "kube-proxy");
    const steps = store.ensureAll(tx, [
      { container: "service-ips", firsts: ips, rest: ["tcp", "80"], value: drop },
    ]);
    const sizes: number[] = [];
    let r = steps.next();
    while (!r.done) {
      sizes.push(tx.size);
      r = steps.next();
    }
    expect(sizes).toEqual([2048, 4096, 6144, 8192]);
    let pauses = 0;
    for (const _ of store.releaseAll(tx, r.value)) pauses++;
    expect(pauses).toBe(4);
    expect(store.size).toBe(0);
  });
});
