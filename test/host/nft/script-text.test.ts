// script-text.ts, the one module that turns text into `nft -f` tokens: comments printable,
// without `"`, within 128 bytes; names nft reads as one name or refused; statement text that
// could end a statement refused. By hand, by property over hostile text, and against the real
// nft 1.0.x in a netns (through NftTransaction), whose stored comments must be what the fake
// stores.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { utf8Length } from "../../../src/host/comment-text.ts";
import { HostInputError } from "../../../src/host/errors.ts";
import {
  NFT_COMMENT_MAX_BYTES,
  NFT_NAME_MAX_BYTES,
  nftComment,
  nftCommentText,
  nftElementPart,
  nftIdentifier,
  nftIdentifierProblem,
  nftStatement,
} from "../../../src/host/nft/script-text.ts";
import { FakeNft } from "../../../src/host/nft/testing/fake.ts";
import { NftTransaction, renderOperation } from "../../../src/host/nft/transaction.ts";
import { hasControlCharacter, hostileText, INJECTIONS } from "../../support/hostile-text.ts";
import { createTestNetns, type TestNetns } from "../iptables/netns.ts";

const SEED = 20240612;

describe("nftComment()", () => {
  test("plain comments are written as they are", () => {
    expect(nftComment("ns1/svc1:p80")).toBe('"ns1/svc1:p80"');
    expect(nftComment("masquerade traffic; it's # not a comment")).toBe(
      `"masquerade traffic; it's # not a comment"`,
    );
  });

  test("\" becomes ' (nft has no escape), control characters blanks", () => {
    expect(nftComment('a"b')).toBe(`"a'b"`);
    expect(nftComment("a\nb\r\tc\0d")).toBe('"a b  c d"');
    expect(nftCommentText("x\udc00")).toBe("x\ufffd");
  });

  test("cut to 128 bytes at a character boundary", () => {
    expect(nftCommentText("a".repeat(200))).toBe("a".repeat(128));
    expect(nftCommentText("é".repeat(65))).toBe("é".repeat(64));
    expect(nftCommentText(`${"a".repeat(127)}é`)).toBe("a".repeat(127));
    expect(nftCommentText("🎉".repeat(40))).toBe("🎉".repeat(32));
  });
});

describe("nftIdentifier()", () => {
  test("upstream's names, fixed and per service, are taken as they are", () => {
    for (const name of [
      "kube-proxy",
      "services",
      "filter-prerouting-pre-dnat",
      "service-HVFWP5L3-ns5/svc5/tcp/p80",
      "endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80",
      "endpoint-5OJB2KTY-ns1/svc1/tcp/p80__fd00.10.180..1/80",
      "affinity-5OJB2KTY-ns1/svc1/tcp/__10.180.0.1/80",
      `a${"b".repeat(NFT_NAME_MAX_BYTES - 1)}`,
    ]) {
      expect(nftIdentifier(name)).toBe(name);
    }
  });

  test("what nft would not read as one name is a HostInputError", () => {
    const refused = [
      "",
      "1x",
      "_x",
      ".",
      "-x",
      "a b",
      "a;b",
      "a#b",
      "a:b",
      "a@b",
      'a"b',
      "a\nb",
      "é",
      "counter",
      "ip6",
      "auto-merge",
      "ll",
      `a${"b".repeat(NFT_NAME_MAX_BYTES)}`,
    ];
    for (const name of refused) expect(() => nftIdentifier(name, "chain name")).toThrow(HostInputError);
    expect(nftIdentifierProblem("counter")).toBe("an nft keyword");
  });

  test("statements and element parts that could end their statement are refused", () => {
    expect(nftStatement("ip daddr { 10.0.0.1, 10.0.0.2 } drop")).toBe("ip daddr { 10.0.0.1, 10.0.0.2 } drop");
    for (const bad of [
      "accept; flush ruleset",
      "accept # x",
      "accept\nflush ruleset",
      'accept comment "x"',
    ]) {
      expect(() => nftStatement(bad)).toThrow(HostInputError);
    }
    expect(nftElementPart("fd00::1")).toBe("fd00::1");
    for (const bad of ["", "10.0.0.1 }", "10.0.0.1, 10.0.0.2", "x;y", "x\ny"]) {
      expect(() => nftElementPart(bad)).toThrow(HostInputError);
    }
  });

  test("the transaction routes every name and text through them", () => {
    const where = "ip kube-proxy";
    const op = (object: Parameters<typeof renderOperation>[1]["object"]) =>
      renderOperation(where, { verb: "add", object });
    expect(() => op({ kind: "chain", name: "a b" })).toThrow(HostInputError);
    expect(() => op({ kind: "rule", chain: "c", rule: "accept; flush ruleset" })).toThrow(HostInputError);
    expect(() => op({ kind: "set", name: "counter", type: "ipv4_addr" })).toThrow(HostInputError);
    expect(() => op({ kind: "set", name: "s", type: "ipv4_addr; flush ruleset" })).toThrow(HostInputError);
    expect(() => op({ kind: "element", container: "s", key: ["10.0.0.1 } ; flush ruleset"] })).toThrow(
      HostInputError,
    );
    expect(() => new NftTransaction("ip", "kube proxy")).toThrow(HostInputError);
    expect(op({ kind: "chain", name: "c", comment: 'x"; flush ruleset' })).toBe(
      `add chain ip kube-proxy c { comment "x'; flush ruleset" ; }`,
    );
  });
});

describe("every hostile text is one bounded comment (property)", () => {
  test("within 128 bytes, printable, no quote inside: one quoted string to nft's scanner", () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        const kept = nftCommentText(text);
        expect(utf8Length(kept)).toBeLessThanOrEqual(NFT_COMMENT_MAX_BYTES);
        expect(hasControlCharacter(kept)).toBe(false);
        expect(kept.includes('"')).toBe(false);
        expect(nftComment(text)).toBe(`"${kept}"`);
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  test("a name is either refused or made only of what nft's string token allows", () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        const problem = nftIdentifierProblem(text);
        if (problem === undefined) {
          expect(text).toMatch(/^[A-Za-z][A-Za-z0-9/_.-]*$/);
          expect(utf8Length(text)).toBeLessThanOrEqual(NFT_NAME_MAX_BYTES);
        } else expect(() => nftIdentifier(text)).toThrow(HostInputError);
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  for (const [what, text] of INJECTIONS) {
    test(`injection: ${what}`, () => {
      const line = renderOperation("ip kube-proxy", {
        verb: "add",
        object: { kind: "rule", chain: "services", rule: "accept", comment: text },
      });
      expect(line.split("\n")).toHaveLength(1);
      expect(line.split('"')).toHaveLength(3);
      expect(line).toBe(`add rule ip kube-proxy services accept comment "${nftCommentText(text)}"`);
      expect(() => nftIdentifier(text)).toThrow(HostInputError);
    });
  }
});

// ---- against the real nft ----

/** Names nft must take: letters, digits and /_.- after a letter, not keywords, any length. */
const nameChars = fc.constantFrom(..."abcxyzABZ0189/_.-");
const plausibleName = fc
  .tuple(fc.constantFrom(..."abzAZ"), fc.string({ unit: nameChars, maxLength: 300 }))
  .map(([first, rest]) => (first + rest).slice(0, NFT_NAME_MAX_BYTES));

describe("nft in a netns takes what script-text writes", () => {
  let ns: TestNetns;
  beforeAll(async () => {
    ns = await createTestNetns();
  });
  afterAll(async () => {
    await ns?.remove();
  });

  const nft = (args: string[], stdin?: string) =>
    ns.exec.run({ cmd: "nft", args, ...(stdin !== undefined ? { stdin } : {}) });

  test("generated comments on chains, rules and elements: applied, listed as kept, faked the same", async () => {
    const texts = [...INJECTIONS.map(([, t]) => t), ...fc.sample(hostileText, { seed: SEED, numRuns: 150 })];
    const tx = new NftTransaction("ip", "kpts");
    tx.add({ kind: "table", comment: texts[0]! });
    tx.add({ kind: "set", name: "s", type: "ipv4_addr", comment: texts[1]! });
    texts.forEach((text, i) => {
      tx.add({ kind: "chain", name: `c${i}`, comment: text });
      tx.add({ kind: "rule", chain: `c${i}`, rule: "accept", comment: text });
      tx.add({ kind: "element", container: "s", key: [`192.0.2.${i}`], comment: text });
    });
    const input = tx.render();
    const res = await nft(["-f", "-"], input);
    expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: "" });

    // Rule and element comments from JSON; chain comments from the text listing (1.0.6's JSON
    // has none for chains).
    const json = JSON.parse((await nft(["--json", "list", "table", "ip", "kpts"])).stdout) as {
      nftables: Record<
        string,
        { chain?: string; comment?: string; elem?: { elem: { val: string; comment?: string } }[] }
      >[];
    };
    const ruleComments = new Map<string, string | undefined>();
    let elementComments = new Map<string, string | undefined>();
    for (const entry of json.nftables) {
      if (entry.rule) ruleComments.set(entry.rule.chain!, entry.rule.comment);
      if (entry.set?.elem) elementComments = new Map(entry.set.elem.map((e) => [e.elem.val, e.elem.comment]));
    }
    const listing = (await nft(["list", "table", "ip", "kpts"])).stdout;
    const chainComments = new Map<string, string>();
    let chain = "";
    for (const line of listing.split("\n")) {
      const head = /^\tchain (\S+) \{$/.exec(line);
      if (head) chain = head[1]!;
      const c = /^\t\tcomment "(.*)"$/s.exec(line);
      if (c && chain) chainComments.set(chain, c[1]!);
    }

    const fake = new FakeNft();
    const fakeExec = fake.install(new FakeExec());
    const fakeRes = await fakeExec.run({ cmd: "nft", args: ["-f", "-"], stdin: input });
    expect(fakeRes.code).toBe(0);
    const fakeTable = fake.tableState("ip", "kpts")!;

    texts.forEach((text, i) => {
      const kept = nftCommentText(text);
      expect({ i, chain: chainComments.get(`c${i}`) }).toEqual({ i, chain: kept });
      expect({ i, rule: ruleComments.get(`c${i}`) }).toEqual({ i, rule: kept });
      expect({ i, element: elementComments.get(`192.0.2.${i}`) }).toEqual({ i, element: kept });
      expect({ i, fake: fakeTable.chains.get(`c${i}`)?.comment }).toEqual({ i, fake: kept });
    });
    expect(fakeTable.comment).toBe(nftCommentText(texts[0]!));
    await nft(["delete", "table", "ip", "kpts"]);
  }, 60_000);

  test("every name nftIdentifier accepts is a name to nft (chains and sets)", async () => {
    const names = [...new Set(fc.sample(plausibleName, { seed: SEED, numRuns: 200 }))].filter(
      (n) => nftIdentifierProblem(n) === undefined,
    );
    expect(names.length).toBeGreaterThan(150);
    const tx = new NftTransaction("ip", "kpts-names");
    tx.add({ kind: "table" });
    for (const name of names) {
      tx.add({ kind: "chain", name });
      tx.add({ kind: "set", name, type: "ipv4_addr" });
    }
    const res = await nft(["-c", "-f", "-"], tx.render());
    expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: "" });
  }, 60_000);

  test("every keyword nftIdentifier refuses is refused by nft too", async () => {
    for (const word of ["counter", "ip6", "auto-merge", "accept", "ll"]) {
      expect(nftIdentifierProblem(word)).toBe("an nft keyword");
    }
    const lines = [
      "add table ip kpts-kw",
      "add chain ip kpts-kw counter",
      "add set ip kpts-kw ip6 { type ipv4_addr ; }",
    ];
    const res = await nft(["-c", "-f", "-"], `${lines.join("\n")}\n`);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("unexpected counter");
    expect(res.stderr).toContain("unexpected ip6");
  }, 60_000);
});
