// FakeNft on its own: the nft semantics it encodes (each pinned against the real nft by
// fake-vs-real.test.ts), its error format, JSON listings, and the dump golden tests read.

import { describe, expect, test } from "bun:test";
import { createNftClient } from "../../../src/host/nft/client.ts";
import { NftError } from "../../../src/host/nft/errors.ts";
import { FakeNft } from "../../../src/host/nft/testing/fake.ts";
import { NftTransaction } from "../../../src/host/nft/transaction.ts";

const BASE = `add table ip kube-proxy { comment "rules for kube-proxy" ; }
add chain ip kube-proxy filter-input { type filter hook input priority -110 ; }
add chain ip kube-proxy services
add chain ip kube-proxy svc-a
add chain ip kube-proxy ep-a/10.0.0.1/80
add set ip kube-proxy cluster-ips { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; comment "ClusterIPs" ; }
add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; }
add rule ip kube-proxy filter-input ip daddr @cluster-ips reject comment "no port"
add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips
add rule ip kube-proxy svc-a goto ep-a/10.0.0.1/80
add rule ip kube-proxy ep-a/10.0.0.1/80 meta l4proto tcp dnat to 10.0.0.1:80
add element ip kube-proxy cluster-ips { 10.96.0.1 }
add element ip kube-proxy service-ips { 10.96.0.1 . tcp . 80 comment "ns/a, port 80" : goto svc-a }
`;

async function seeded() {
  const fake = new FakeNft();
  const exec = fake.install();
  const nft = async (input: string, check = false) =>
    exec.run({ cmd: "nft", args: check ? ["--check", "-f", "-"] : ["-f", "-"], stdin: input });
  expect((await nft(BASE)).code).toBe(0);
  return { fake, exec, nft };
}

/** Runs input that must fail; returns the blamed lines and messages, and checks nothing changed. */
async function refused(input: string) {
  const s = await seeded();
  const before = s.fake.dump("ip", "kube-proxy");
  const res = await s.nft(input);
  expect(res.code).toBe(1);
  expect(s.fake.dump("ip", "kube-proxy")).toBe(before);
  return [...res.stderr.matchAll(/^\/dev\/stdin:(\d+):\d+-\d+: Error: (.*)$/gm)].map(
    (m) => `${m[1]}: ${m[2]}`,
  );
}

describe("FakeNft", () => {
  test("dump is canonical: sorted chains, sets, maps and elements, rules in order", async () => {
    const { fake } = await seeded();
    expect(fake.dump("ip", "kube-proxy")).toBe(`table ip kube-proxy comment "rules for kube-proxy"
chain ep-a/10.0.0.1/80
  meta l4proto tcp dnat to 10.0.0.1:80
chain filter-input { type filter hook input priority -110 }
  ip daddr @cluster-ips reject comment "no port"
chain services
  ip daddr . meta l4proto . th dport vmap @service-ips
chain svc-a
  goto ep-a/10.0.0.1/80
set cluster-ips { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; comment "ClusterIPs" }
  10.96.0.1
map service-ips { type ipv4_addr . inet_proto . inet_service : verdict }
  10.96.0.1 . tcp . 80 : goto svc-a
`);
    expect(fake.dump("ip6", "kube-proxy")).toBe("");
  });

  test("tableState exposes the structure", async () => {
    const { fake } = await seeded();
    const t = fake.tableState("ip", "kube-proxy")!;
    expect(t.comment).toBe("rules for kube-proxy");
    expect(t.chains.get("filter-input")?.base).toEqual({ type: "filter", hook: "input", priority: -110 });
    expect(t.sets.get("cluster-ips")).toMatchObject({
      type: "ipv4_addr",
      flags: ["dynamic", "timeout"],
      timeoutSeconds: 10800,
    });
    expect([...t.maps.get("service-ips")!.elements]).toEqual([["10.96.0.1 . tcp . 80", "goto svc-a"]]);
    expect(fake.tableState("ip", "nope")).toBeUndefined();
  });

  test("the constructor's tables start empty; list tables and delete table work as before", async () => {
    const fake = new FakeNft(["ip kube-proxy", "inet filter"]);
    const exec = fake.install();
    expect(fake.dump("ip", "kube-proxy")).toBe("table ip kube-proxy\n");
    expect((await exec.run({ cmd: "nft", args: ["list", "tables"] })).stdout).toBe(
      "table ip kube-proxy\ntable inet filter\n",
    );
    expect((await exec.run({ cmd: "nft", args: ["delete", "table", "ip", "kube-proxy"] })).code).toBe(0);
    const again = await exec.run({ cmd: "nft", args: ["delete", "table", "ip", "kube-proxy"] });
    expect(again.code).toBe(1);
    expect(again.stderr).toStartWith("Error: Could not process rule: No such file or directory\n");
    expect(fake.tableNames()).toEqual(["inet filter"]);
  });

  test("adding what exists is a no-op", async () => {
    const s = await seeded();
    const before = s.fake.dump("ip", "kube-proxy");
    const again = BASE.split("\n")
      .filter((l) => !l.startsWith("add rule"))
      .join("\n");
    expect((await s.nft(again)).code).toBe(0);
    expect(s.fake.dump("ip", "kube-proxy")).toBe(before);
  });

  test("errors are reported the way nft does: location, the line, carets", async () => {
    const s = await seeded();
    const res = await s.nft("add chain ip kube-proxy x\nadd rule ip kube-proxy nochain accept\n");
    expect(res.stderr).toBe(
      "/dev/stdin:2:24-30: Error: Could not process rule: No such file or directory\n" +
        "add rule ip kube-proxy nochain accept\n" +
        "                       ^^^^^^^\n",
    );
    expect(s.fake.tableState("ip", "kube-proxy")?.chains.has("x")).toBe(false);
  });

  const cases: [string, string, string[]][] = [
    [
      "syntax errors, all of them",
      "add chain ip kube-proxy ok\nfrob chain ip kube-proxy x\nadd set ip kube-proxy s\n",
      [
        "2: syntax error, unexpected chain, expecting string",
        "3: syntax error, unexpected newline, expecting '{'",
      ],
    ],
    ["a chain into a missing table", "add chain ip nope c\n", ["1: No such file or directory"]],
    [
      "a rule into a missing chain",
      "add rule ip kube-proxy nochain accept\n",
      ["1: Could not process rule: No such file or directory"],
    ],
    [
      "an element into a missing set",
      "add element ip kube-proxy noset { 1.2.3.4 }\n",
      ["1: No such file or directory"],
    ],
    [
      "a jump to a missing chain",
      "add rule ip kube-proxy services jump nochain\n",
      ["1: Could not process rule: No such file or directory"],
    ],
    [
      "a goto to a base chain",
      "add rule ip kube-proxy services goto filter-input\n",
      ["1: Could not process rule: Operation not supported"],
    ],
    [
      "a rule naming a missing set",
      "add rule ip kube-proxy services ip daddr @noset drop\n",
      ["1: No such file or directory"],
    ],
    [
      "delete of a missing chain",
      "delete chain ip kube-proxy nochain\n",
      ["1: Could not process rule: No such file or directory"],
    ],
    [
      "delete of a missing set",
      "delete set ip kube-proxy noset\n",
      ["1: Could not process rule: No such file or directory"],
    ],
    [
      "delete of a missing element",
      "delete element ip kube-proxy cluster-ips { 9.9.9.9 }\n",
      ["1: Could not process rule: No such file or directory"],
    ],
    [
      "delete of a chain a rule jumps to",
      "flush chain ip kube-proxy ep-a/10.0.0.1/80\ndelete chain ip kube-proxy ep-a/10.0.0.1/80\n",
      ["2: Could not process rule: Device or resource busy"],
    ],
    [
      "delete of a chain a map element names",
      "flush chain ip kube-proxy svc-a\ndelete chain ip kube-proxy svc-a\n",
      ["2: Could not process rule: Device or resource busy"],
    ],
    [
      "delete of a set a rule uses",
      "delete set ip kube-proxy cluster-ips\n",
      ["1: Could not process rule: Device or resource busy"],
    ],
    [
      "a map element re-added with another value",
      "add element ip kube-proxy service-ips { 10.96.0.1 . tcp . 80 : drop }\n",
      ["1: Could not process rule: File exists"],
    ],
    [
      "a set re-added with another type",
      "add set ip kube-proxy cluster-ips { type ipv6_addr ; }\n",
      ["1: Could not process rule: File exists"],
    ],
    [
      "a base chain re-added with another priority",
      "add chain ip kube-proxy filter-input { type filter hook input priority 0 ; }\n",
      ["1: Could not process rule: Operation not supported"],
    ],
    [
      "every kernel refusal is blamed",
      "add rule ip kube-proxy a accept\nadd chain ip kube-proxy b\nadd rule ip kube-proxy c drop\n",
      [
        "1: Could not process rule: No such file or directory",
        "3: Could not process rule: No such file or directory",
      ],
    ],
    [
      "evaluation errors hide kernel errors",
      "delete chain ip kube-proxy nochain\nadd element ip kube-proxy noset { 1.2.3.4 }\n",
      ["2: No such file or directory"],
    ],
    [
      "a set deleted earlier in the input is gone for evaluation",
      "add set ip kube-proxy s9 { type ipv4_addr ; }\ndelete set ip kube-proxy s9\nadd element ip kube-proxy s9 { 1.1.1.1 }\n",
      ["3: No such file or directory"],
    ],
    [
      "the second delete of one element",
      "delete element ip kube-proxy cluster-ips { 10.96.0.1 }\ndelete element ip kube-proxy cluster-ips { 10.96.0.1 }\n",
      ["2: Could not process rule: No such file or directory"],
    ],
  ];
  for (const [name, input, want] of cases) {
    test(`refused atomically: ${name}`, async () => {
      expect(await refused(input)).toEqual(want);
    });
  }

  test("flush chain, set, map; delete of an unreferenced chain takes its rules along", async () => {
    const s = await seeded();
    const res = await s.nft(
      "flush set ip kube-proxy cluster-ips\nflush map ip kube-proxy service-ips\nflush chain ip kube-proxy svc-a\n" +
        "delete chain ip kube-proxy ep-a/10.0.0.1/80\ndelete chain ip kube-proxy svc-a\n",
    );
    expect(res.code).toBe(0);
    const t = s.fake.tableState("ip", "kube-proxy")!;
    expect([...t.chains.keys()]).toEqual(["filter-input", "services"]);
    expect(t.sets.get("cluster-ips")?.elements.size).toBe(0);
    expect(t.maps.get("service-ips")?.elements.size).toBe(0);
  });

  test("flush table empties chains and keeps sets and maps; delete table removes it all", async () => {
    const s = await seeded();
    expect((await s.nft("flush table ip kube-proxy\n")).code).toBe(0);
    const t = s.fake.tableState("ip", "kube-proxy")!;
    expect([...t.chains.values()].every((c) => c.rules.length === 0)).toBe(true);
    expect(t.sets.get("cluster-ips")?.elements.size).toBe(1);
    expect((await s.nft("delete table ip kube-proxy\n")).code).toBe(0);
    expect(s.fake.tableNames()).toEqual([]);
  });

  test("re-adding a set updates only its timeout", async () => {
    const s = await seeded();
    const res = await s.nft(
      'add set ip kube-proxy cluster-ips { type ipv4_addr ; flags timeout,dynamic ; timeout 100s ; comment "x" ; }\n',
    );
    expect(res.code).toBe(0);
    expect(s.fake.tableState("ip", "kube-proxy")?.sets.get("cluster-ips")).toMatchObject({
      timeoutSeconds: 100,
      comment: "ClusterIPs",
    });
  });

  test("--check validates without applying", async () => {
    const s = await seeded();
    const before = s.fake.dump("ip", "kube-proxy");
    expect((await s.nft("add chain ip kube-proxy new\n", true)).code).toBe(0);
    expect((await s.nft("add rule ip kube-proxy nochain accept\n", true)).code).toBe(1);
    expect(s.fake.dump("ip", "kube-proxy")).toBe(before);
  });

  test("JSON listings cover one family, with and without elements", async () => {
    const s = await seeded();
    await s.nft(
      "add table ip6 kube-proxy\nadd chain ip6 kube-proxy six\nadd table ip other\nadd chain ip other c\n",
    );
    const list = async (...args: string[]) =>
      (
        JSON.parse((await s.exec.run({ cmd: "nft", args })).stdout) as {
          nftables: Record<string, Record<string, unknown>>[];
        }
      ).nftables;
    const chains = await list("--json", "list", "chains", "ip");
    expect(chains[0]?.metainfo).toEqual({
      version: "1.0.6",
      release_name: "Lester Gooch #5",
      json_schema_version: 1,
    });
    expect(chains.slice(1).map((c) => `${c.chain?.table}/${c.chain?.name}`)).toEqual([
      "kube-proxy/filter-input",
      "kube-proxy/services",
      "kube-proxy/svc-a",
      "kube-proxy/ep-a/10.0.0.1/80",
      "other/c",
    ]);
    expect(chains[1]?.chain).toMatchObject({
      family: "ip",
      type: "filter",
      hook: "input",
      prio: -110,
      policy: "accept",
    });
    const maps = await list("--json", "list", "maps", "ip");
    expect(maps[1]?.map).toMatchObject({
      name: "service-ips",
      type: ["ipv4_addr", "inet_proto", "inet_service"],
      map: "verdict",
      elem: [[{ concat: ["10.96.0.1", "tcp", 80] }, { goto: { target: "svc-a" } }]],
    });
    const terse = await list("--terse", "--json", "list", "sets", "ip");
    expect(terse[1]?.set).not.toHaveProperty("elem");
  });

  test("the real client reads and writes through it", async () => {
    const fake = new FakeNft();
    const nft = createNftClient({ exec: fake.install() });
    expect(await nft.version()).toBe("1.0.6");
    expect(await nft.list("chains")).toEqual([]);
    const tx = new NftTransaction("ip", "kube-proxy")
      .add({ kind: "table" })
      .add({ kind: "chain", name: "a" })
      .add({ kind: "set", name: "s", type: "ipv4_addr" })
      .add({ kind: "map", name: "m", type: "ipv4_addr : verdict" })
      .add({ kind: "element", container: "m", key: ["10.0.0.1"], value: ["goto a"], comment: "x" });
    await nft.run(tx);
    expect(await nft.list("chains")).toEqual(["a"]);
    expect(await nft.list("sets")).toEqual(["s"]);
    expect(await nft.list("maps")).toEqual(["m"]);
    const bad = new NftTransaction("ip", "kube-proxy")
      .add({ kind: "chain", name: "b" })
      .delete({ kind: "chain", name: "a" });
    const err = (await nft.run(bad).catch((e: unknown) => e)) as NftError;
    expect(err).toBeInstanceOf(NftError);
    expect([err.line, err.lineText, err.reason]).toEqual([
      2,
      "delete chain ip kube-proxy a",
      "Could not process rule: Device or resource busy",
    ]);
    expect(await nft.list("chains")).toEqual(["a"]);
  });
});
