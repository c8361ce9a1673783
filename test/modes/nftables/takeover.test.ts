// Taking over a node whose `kube-proxy` table another version wrote: upstream in the 1.31 era
// (filter chains at -110, filter-prerouting and filter-output-post-dnat, mark-for-masquerade,
// an endpoint chain per endpoint), upstream 1.37 (this layout, numgen maps), and our own layout
// before 1.37's. After our first full sync and the stale-chain deletion a second later, the
// table must be exactly what a fresh node gets: nothing of the other layout left.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FakeNftHost } from "./harness.ts";
import { overallSetup } from "./upstream-overall.ts";

const golden = (name: string) => readFileSync(join(import.meta.dir, "golden", name), "utf8");

const ORDER = ["table", "chain", "set", "map", "rule", "element"];

/**
 * An upstream test's expected dump as nft input: its lines in an order nft accepts (objects
 * before the rules and elements that name them). The localhost NodePort objects need the alpha
 * gate, off on such a node by default.
 */
export function dumpAsInput(dump: string): string {
  const lines = dump
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#") && !l.includes("localhost-nodeport"));
  const rank = (l: string) => ORDER.indexOf(l.split(" ")[1]!);
  return `${lines
    .map((line, i) => ({ line, i }))
    .sort((a, b) => rank(a.line) - rank(b.line) || a.i - b.i)
    .map((x) => x.line)
    .join("\n")}\n`;
}

async function load(input: string): Promise<FakeNftHost> {
  const host = new FakeNftHost();
  await host.client("ip").run({ size: input.split("\n").length, render: () => input });
  return host;
}

/** The table a fresh node ends up with. */
async function fresh(): Promise<string> {
  const s = overallSetup("IPv4");
  await s.sync();
  return s.nft.dump();
}

/** Our proxier started on `host`: its first sync, then a second later the stale-chain deletion. */
async function takeOver(host: FakeNftHost): Promise<string> {
  const s = overallSetup("IPv4", host);
  await s.sync();
  s.clock.advance(1000);
  await s.sync();
  return s.nft.dump();
}

describe("nftables: taking over a table another version wrote", () => {
  test("upstream 1.31 era: old base chains, mark-for-masquerade and endpoint chains go", async () => {
    const host = await load(dumpAsInput(golden("upstream-1.31-era-overall.nft")));
    const before = host.dump();
    expect(before).toContain("chain filter-output-post-dnat");
    expect(before).toContain("chain mark-for-masquerade");
    expect(before).toContain("chain filter-input { type filter hook input priority -110 }");
    expect(await takeOver(host)).toBe(await fresh());
  });

  test("upstream 1.37: the same table (stale set and map elements dropped)", async () => {
    const host = await load(
      `${dumpAsInput(golden("upstream-1.37-overall.nft"))}${[
        "add element ip kube-proxy cluster-ips { 172.30.0.99 }",
        "add element ip kube-proxy hairpin-connections { 10.180.0.99 . 10.180.0.99 . tcp . 80 }",
        "add chain ip kube-proxy service-AAAAAAAA-gone/svc/tcp/p80",
        "add element ip kube-proxy service-ips { 172.30.0.99 . tcp . 80 : goto service-AAAAAAAA-gone/svc/tcp/p80 }",
      ].join("\n")}\n`,
    );
    expect(host.dump()).toContain("chain service-AAAAAAAA-gone/svc/tcp/p80");
    expect(await takeOver(host)).toBe(await fresh());
  });

  test("our layout before 1.37's (another cluster's Services): all of it goes", async () => {
    const host = await load(golden("ours-pre-1.37-small-cluster.nft"));
    expect(host.dump()).toContain("chain endpoint-");
    expect(await takeOver(host)).toBe(await fresh());
  });
});
