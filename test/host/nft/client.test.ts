// The nft client against scripted FakeExec answers: the exact arguments and stdin it sends,
// how it reads nft's errors (blamed lines included), versions and JSON listings.

import { describe, expect, test } from "bun:test";
import { FakeExec, fail, ok } from "../../../src/exec/testing/fake.ts";
import {
  createNftClient,
  parseNftChainNames,
  parseNftListNames,
  parseNftVersion,
} from "../../../src/host/nft/client.ts";
import { NftError, parseNftErrors, SEGFAULT_EXIT, SEGFAULT_REASON } from "../../../src/host/nft/errors.ts";
import { FakeNft } from "../../../src/host/nft/testing/fake.ts";
import { NftTransaction } from "../../../src/host/nft/transaction.ts";

const META = { metainfo: { version: "1.0.6", release_name: "Lester Gooch #5", json_schema_version: 1 } };

function txOf(...lines: string[]): { size: number; render(): string } {
  return { size: lines.length, render: () => `${lines.join("\n")}\n` };
}

describe("parseNftVersion", () => {
  const table: [string, string | undefined][] = [
    ["nftables v1.0.6 (Lester Gooch #5)\n", "1.0.6"],
    ["nftables v1.1.1 (Commodore Bullmoose #2)", "1.1.1"],
    ["nftables v0.9.8 (E.D.S.)", "0.9.8"],
    ["nft: command not found", undefined],
    ["", undefined],
  ];
  for (const [output, want] of table) {
    test(`${JSON.stringify(output)} -> ${want}`, () => expect(parseNftVersion(output)).toBe(want));
  }
});

describe("parseNftErrors", () => {
  const input =
    "add chain ip kube-proxy a\nadd rule ip kube-proxy nochain accept\nadd rule ip kube-proxy b drop\n";
  const stderr =
    "/dev/stdin:2:24-30: Error: Could not process rule: No such file or directory\n" +
    "add rule ip kube-proxy nochain accept\n" +
    "                       ^^^^^^^\n" +
    "/dev/stdin:3:24-24: Error: Could not process rule: No such file or directory\n" +
    "add rule ip kube-proxy b drop\n" +
    "                       ^\n";

  test("every located error, with the line's text from the input", () => {
    expect(parseNftErrors(stderr, input)).toEqual([
      {
        line: 2,
        lineText: "add rule ip kube-proxy nochain accept",
        message: "Could not process rule: No such file or directory",
      },
      {
        line: 3,
        lineText: "add rule ip kube-proxy b drop",
        message: "Could not process rule: No such file or directory",
      },
    ]);
  });

  test("without the input the echoed line is used; unlocated errors keep only the message", () => {
    expect(parseNftErrors(stderr)[0]?.lineText).toBe("add rule ip kube-proxy nochain accept");
    expect(parseNftErrors("netlink: Error: set is not a map\n")).toEqual([{ message: "set is not a map" }]);
    expect(parseNftErrors("Error: Could not process rule: Operation not supported\n")).toEqual([
      { message: "Could not process rule: Operation not supported" },
    ]);
  });

  test("NftError's message names the first blamed line and counts the rest", () => {
    const err = new NftError(["-f", "-"], 1, stderr, input);
    expect(err.line).toBe(2);
    expect(err.lineText).toBe("add rule ip kube-proxy nochain accept");
    expect(err.reason).toBe("Could not process rule: No such file or directory");
    expect(err.errors).toHaveLength(2);
    expect(err.message).toBe(
      "nft -f - at line 2 (add rule ip kube-proxy nochain accept): exit code 1: " +
        "Could not process rule: No such file or directory (and 1 more error)",
    );
    expect(err.isNotFound()).toBe(true);
    expect(err.isExists()).toBe(false);
  });
});

describe("parseNftChainNames", () => {
  test("names of one table's chains, however nft prints names with slashes or quotes", () => {
    const text =
      'table ip kube-proxy {\n\tchain service-ULMVA6XW-ns1/svc1/tcp/p80 {\n\t}\n\tchain "quoted name" {\n\t}\n}\n' +
      "table ip6 kube-proxy {\n\tchain other-family {\n\t}\n}\n";
    expect(parseNftChainNames(text, "ip", "kube-proxy")).toEqual([
      "service-ULMVA6XW-ns1/svc1/tcp/p80",
      "quoted name",
    ]);
    expect(parseNftChainNames(text, "ip", "filter")).toEqual([]);
    expect(parseNftChainNames("", "ip", "kube-proxy")).toEqual([]);
  });
});

describe("createNftClient", () => {
  test("is bound to ip kube-proxy unless told otherwise", () => {
    const a = createNftClient({ exec: new FakeExec() });
    expect([a.family, a.table]).toEqual(["ip", "kube-proxy"]);
    const b = createNftClient({ exec: new FakeExec(), family: "ip6", table: "other" });
    expect([b.family, b.table]).toEqual(["ip6", "other"]);
  });

  test("run sends the rendered transaction to nft -f - on stdin", async () => {
    const exec = new FakeExec({ nft: () => ok() });
    const tx = new NftTransaction("ip", "kube-proxy")
      .add({ kind: "table" })
      .add({ kind: "chain", name: "a" });
    await createNftClient({ exec, timeoutMs: 1234 }).run(tx);
    expect(exec.calls).toEqual([
      {
        cmd: "nft",
        args: ["-f", "-"],
        stdin: "add table ip kube-proxy\nadd chain ip kube-proxy a\n",
        timeoutMs: 1234,
      },
    ]);
  });

  test("check sends nft --check -f -", async () => {
    const exec = new FakeExec({ nft: () => ok() });
    await createNftClient({ exec }).check(txOf("add table ip kube-proxy"));
    expect(exec.calls.map((c) => c.args)).toEqual([["--check", "-f", "-"]]);
    expect(exec.calls[0]?.stdin).toBe("add table ip kube-proxy\n");
  });

  test("a deferred part is made only as nft reads it, and once", async () => {
    const fake = new FakeNft();
    const nft = createNftClient({ exec: fake.install() });
    let made = 0;
    const tx = new NftTransaction("ip", "kube-proxy").add({ kind: "table" }).defer(function* (t) {
      for (let i = 0; i < 5000; i++) {
        t.add({ kind: "chain", name: `chain-${i}` });
        made++;
        yield;
      }
    });
    expect(tx.isEmpty()).toBe(false);
    expect(made).toBe(0);
    await nft.run(tx);
    expect(made).toBe(5000);
    expect(tx.size).toBe(5001);
    expect(fake.tableState("ip", "kube-proxy")?.chains.size).toBe(5000);
    expect(() => tx.pieces()).toThrow(/read once/);
  });

  test("a deferred part's steps reach the reader even when they add nothing, so it can pause", () => {
    let steps = 0;
    const tx = new NftTransaction("ip", "t").add({ kind: "table" }).defer(function* (t) {
      for (let i = 0; i < 1000; i++) {
        steps++;
        if (i === 999) t.add({ kind: "chain", name: "last" });
        yield;
      }
    });
    const reader = tx.pieces()[Symbol.iterator]();
    const seenAt: number[] = [];
    for (let piece = reader.next(); !piece.done; piece = reader.next()) seenAt.push(steps);
    // One piece per step (the table's block first): the reader had a turn after every step.
    expect(seenAt.length).toBeGreaterThanOrEqual(1001);
    for (let i = 1; i <= 1000; i++) expect(seenAt[i]).toBe(i);
    const again = new NftTransaction("ip", "t").add({ kind: "table" }).defer(function* (t) {
      for (let i = 0; i < 1000; i++) {
        if (i === 999) t.add({ kind: "chain", name: "last" });
        yield;
      }
    });
    expect(again.render()).toBe("add table ip t\nadd chain ip t last\n");
  });

  test("render() makes a deferred part once and keeps the text", () => {
    let runs = 0;
    const tx = new NftTransaction("ip", "t").defer(function* (t) {
      runs++;
      t.add({ kind: "chain", name: "a" });
      yield;
    });
    const text = tx.render();
    expect(text).toBe("add chain ip t a\n");
    expect(tx.render()).toBe(text);
    expect([...tx.pieces()].join("")).toBe(text);
    expect(runs).toBe(1);
  });

  test("an empty transaction spawns nothing", async () => {
    const exec = new FakeExec({ nft: () => ok() });
    const nft = createNftClient({ exec });
    await nft.run(new NftTransaction("ip", "kube-proxy"));
    await nft.check(new NftTransaction("ip", "kube-proxy"));
    expect(exec.calls).toEqual([]);
  });

  test("a failed run is an NftError carrying exit code, stderr and the failing line", async () => {
    const stderr =
      "/dev/stdin:2:37-37: Error: syntax error, unexpected newline\nadd rule ip kube-proxy x foo bar baz\n" +
      `${" ".repeat(36)}^\n`;
    const exec = new FakeExec({ nft: () => fail(1, stderr) });
    const err = await createNftClient({ exec })
      .run(txOf("add chain ip kube-proxy x", "add rule ip kube-proxy x foo bar baz"))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NftError);
    const e = err as NftError;
    expect([e.exitCode, e.stderr, e.line, e.lineText, e.reason]).toEqual([
      1,
      stderr,
      2,
      "add rule ip kube-proxy x foo bar baz",
      "syntax error, unexpected newline",
    ]);
    expect(e.args).toEqual(["-f", "-"]);
  });

  test("nft killed by SIGSEGV (a set written by a newer nft) is an NftError that says so", async () => {
    const exec = new FakeExec({ nft: () => fail(SEGFAULT_EXIT, "") });
    const err = (await createNftClient({ exec })
      .run(txOf("add chain ip kube-proxy x"))
      .catch((e: unknown) => e)) as NftError;
    expect(err).toBeInstanceOf(NftError);
    expect(err.reason).toBe(SEGFAULT_REASON);
    expect(err.message).toContain("exit code 139: nft crashed (SIGSEGV); nft older than 1.1.4");
  });

  test("a failed check is an NftError too", async () => {
    const exec = new FakeExec({
      nft: () => fail(1, "/dev/stdin:1:1-5: Error: Could not process rule: File exists\nadd x\n^^^^^\n"),
    });
    const err = (await createNftClient({ exec })
      .check(txOf("add x"))
      .catch((e: unknown) => e)) as NftError;
    expect(err.isExists()).toBe(true);
    expect(err.args).toEqual(["--check", "-f", "-"]);
  });

  test("version parses nft --version; no binary is undefined; a failure throws", async () => {
    const exec = new FakeExec({ nft: () => ok("nftables v1.0.6 (Lester Gooch #5)\n") });
    expect(await createNftClient({ exec }).version()).toBe("1.0.6");
    expect(exec.calls.map((c) => c.args)).toEqual([["--version"]]);
    expect(await createNftClient({ exec: new FakeExec() }).version()).toBeUndefined();
    const broken = new FakeExec({ nft: () => fail(1, "Error: something\n") });
    await expect(createNftClient({ exec: broken }).version()).rejects.toBeInstanceOf(NftError);
    const odd = new FakeExec({ nft: () => ok("nftables, custom build\n") });
    await expect(createNftClient({ exec: odd }).version()).rejects.toThrow(/cannot parse nft version/);
  });

  test("list reads names of the bound table only: chains from nft list chains FAMILY, sets and maps from --json", async () => {
    const chainsText = [
      "table ip kube-proxy {",
      "\tchain services {",
      "\t}",
      "}",
      "table ip filter {",
      "\tchain INPUT {",
      "\t\ttype filter hook input priority filter; policy accept;",
      "\t}",
      "}",
      "table ip kube-proxy {",
      "\tchain filter-input {",
      "\t\ttype filter hook input priority -110; policy accept;",
      "\t}",
      "}",
      "",
    ].join("\n");
    const out = {
      sets: [
        META,
        { set: { family: "ip", name: "cluster-ips", table: "kube-proxy", type: "ipv4_addr", handle: 4 } },
        { set: { family: "ip", name: "other", table: "filter", type: "ipv4_addr", handle: 5 } },
      ],
      maps: [
        META,
        {
          map: { family: "ip", name: "service-ips", table: "kube-proxy", type: "ipv4_addr", map: "verdict" },
        },
      ],
    };
    const exec = new FakeExec({
      nft: (req) =>
        req.args[0] === "list"
          ? ok(chainsText)
          : ok(JSON.stringify({ nftables: out[req.args.at(-2) as keyof typeof out] })),
    });
    const nft = createNftClient({ exec });
    expect(await nft.list("chains")).toEqual(["services", "filter-input"]);
    expect(await nft.list("sets")).toEqual(["cluster-ips"]);
    expect(await nft.list("maps")).toEqual(["service-ips"]);
    expect(exec.calls.map((c) => c.args)).toEqual([
      ["list", "chains", "ip"],
      ["--terse", "--json", "list", "sets", "ip"],
      ["--terse", "--json", "list", "maps", "ip"],
    ]);
  });

  test("list of a table that does not exist is empty; a failing nft throws", async () => {
    const empty = new FakeExec({ nft: () => ok("") });
    expect(await createNftClient({ exec: empty, family: "ip6" }).list("chains")).toEqual([]);
    expect(empty.calls[0]?.args).toEqual(["list", "chains", "ip6"]);
    const broken = new FakeExec({
      nft: () => fail(1, "Error: Could not process rule: Operation not supported\n"),
    });
    await expect(createNftClient({ exec: broken }).list("chains")).rejects.toBeInstanceOf(NftError);
  });

  test("parseNftListNames rejects output that is not nft's JSON", () => {
    expect(() => parseNftListNames("{}", "chains", "kube-proxy")).toThrow(/no "nftables" array/);
    expect(() => parseNftListNames("not json", "chains", "kube-proxy")).toThrow();
  });

  test("list reads the 100,000 chains of a big table, and only the bound table's", async () => {
    const lines: string[] = [];
    for (let t = 0; t < 10; t++) {
      lines.push(t % 5 === 4 ? "table ip other {" : "table ip kube-proxy {");
      for (let i = 0; i < 10_000; i++)
        lines.push(`\tchain endpoint-${t}-${i}-ns/svc/tcp/p80__198.51.100.${i % 250}/80 {`, "\t}");
      lines.push("}");
    }
    const exec = new FakeExec({ nft: () => ok(`${lines.join("\n")}\n`) });
    const names = await createNftClient({ exec }).list("chains");
    expect(names).toHaveLength(80_000);
    expect(names[0]).toBe("endpoint-0-0-ns/svc/tcp/p80__198.51.100.0/80");
  });

  test("listTables and deleteTable keep their --cleanup behaviour", async () => {
    const exec = new FakeExec({
      nft: (req) =>
        req.args[0] === "list"
          ? ok("table ip kube-proxy\ntable inet filter\n")
          : fail(1, "Error: Could not process rule: No such file or directory\ndelete table ip gone\n"),
    });
    const nft = createNftClient({ exec });
    expect(await nft.listTables()).toEqual([
      { family: "ip", name: "kube-proxy" },
      { family: "inet", name: "filter" },
    ]);
    expect(await nft.deleteTable({ family: "ip", name: "gone" })).toBe(false);
    expect(await createNftClient({ exec: new FakeExec() }).listTables()).toBeUndefined();
  });
});
