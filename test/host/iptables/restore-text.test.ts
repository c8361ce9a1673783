// restore-text.ts, the one module that turns text into iptables-restore tokens: comments are
// printable, within xt_comment's 255 bytes and one argument as iptables-restore splits them;
// chain names outside the tool's syntax are refused. Checked by hand, by property over hostile
// text (our splitter), and against the real iptables-restore of both backends in a netns, whose
// saved comments must be what the fake stores.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { utf8Length } from "../../../src/host/comment-text.ts";
import { HostInputError } from "../../../src/host/errors.ts";
import { createIptablesClient } from "../../../src/host/iptables/client.ts";
import {
  bareComment,
  CHAIN_NAME_MAX_BYTES,
  COMMENT_MAX_BYTES,
  chainName,
  comment,
  commentText,
} from "../../../src/host/iptables/restore-text.ts";
import { splitRuleLine } from "../../../src/host/iptables/rule-args.ts";
import { parseIptablesSave } from "../../../src/host/iptables/save-parser.ts";
import { FakeIptables } from "../../../src/host/iptables/testing/fake.ts";
import type { IptablesBackend } from "../../../src/host/iptables/types.ts";
import { hasControlCharacter, hostileText, INJECTIONS } from "../../support/hostile-text.ts";
import { createTestNetns, type TestNetns } from "./netns.ts";

const SEED = 20240611;
const CHAIN = "KPTS-COMMENTS";

/** A rule line carrying `arg` as its comment, as the modes write them. */
const ruleLine = (arg: string) => `-A ${CHAIN} -m comment --comment ${arg} -j RETURN`;

/** The comment a rule line carries, as iptables-restore would read it. */
function commentOf(line: string): string | undefined {
  const args = splitRuleLine(line);
  const at = args.indexOf("--comment");
  return at < 0 ? undefined : args[at + 1];
}

describe("comment()", () => {
  test("plain text is quoted as upstream writes it, byte for byte", () => {
    expect(comment("ns/svc:p cluster IP")).toBe('"ns/svc:p cluster IP"');
    expect(comment("Kubernetes nodeport TCP port with type 'hash ip:port'")).toBe(
      `"Kubernetes nodeport TCP port with type 'hash ip:port'"`,
    );
    expect(comment("")).toBe('""');
  });

  test('" and \\ are escaped as iptables-restore reads them back', () => {
    expect(comment('a"b')).toBe('"a\\"b"');
    expect(comment("a\\b")).toBe('"a\\\\b"');
    expect(comment("ends in \\")).toBe('"ends in \\\\"');
  });

  test("control characters become blanks; lone surrogates U+FFFD", () => {
    expect(comment("a\nb\rc\td\0e\u007ff\u0085g")).toBe('"a b c d e f g"');
    expect(commentText("x\ud800y")).toBe("x\ufffdy");
    expect(commentText("🎉")).toBe("🎉");
  });

  test("cut to 255 bytes, never inside a character", () => {
    expect(commentText("a".repeat(300))).toBe("a".repeat(COMMENT_MAX_BYTES));
    // 254 bytes of "a" then a two-byte character: it does not fit, and is dropped whole.
    expect(commentText(`${"a".repeat(254)}é`)).toBe("a".repeat(254));
    expect(commentText(`${"a".repeat(253)}é`)).toBe(`${"a".repeat(253)}é`);
    expect(commentText("🎉".repeat(64))).toBe("🎉".repeat(63));
    // Escaping comes after the cut: 255 quotes are 255 bytes of comment, 510 of text.
    expect(commentOf(ruleLine(comment('"'.repeat(300))))).toBe('"'.repeat(255));
  });
});

describe("bareComment()", () => {
  test("a service port name is written bare, as upstream does", () => {
    expect(bareComment("ns/svc:http")).toBe("ns/svc:http");
    expect(bareComment("kube-system/kube-dns:dns-tcp")).toBe("kube-system/kube-dns:dns-tcp");
    expect(bareComment("ns/svc")).toBe("ns/svc");
  });

  test("anything that would not be one literal token is quoted", () => {
    expect(bareComment("ns/svc:p -j ACCEPT")).toBe('"ns/svc:p -j ACCEPT"');
    expect(bareComment('a"b')).toBe('"a\\"b"');
    expect(bareComment("-j")).toBe('"-j"');
    expect(bareComment("#x")).toBe('"#x"');
    expect(bareComment("")).toBe('""');
    expect(bareComment("é")).toBe('"é"');
    expect(bareComment("a".repeat(256))).toBe(`"${"a".repeat(255)}"`);
  });
});

describe("chainName()", () => {
  test("names iptables takes are returned as they are", () => {
    for (const name of ["KUBE-SVC-NPX46M4PTMTKRN6Y", "KUBE-SERVICES", "INPUT", "a", "x".repeat(28)]) {
      expect(chainName(name)).toBe(name);
    }
  });

  test("anything else is a HostInputError", () => {
    const refused = [
      "",
      "x".repeat(CHAIN_NAME_MAX_BYTES + 1),
      "a b",
      "-X",
      "!x",
      "a\nCOMMIT",
      'a"',
      "é",
      "a/b",
    ];
    for (const name of refused) {
      expect(() => chainName(name)).toThrow(HostInputError);
    }
    try {
      chainName("KUBE-SVC-ABCDEFGHIJKLMNOPQRSTU");
    } catch (err) {
      expect(err).toBeInstanceOf(HostInputError);
      expect((err as HostInputError).language).toBe("iptables-restore");
      expect((err as HostInputError).message).toContain("longer than 28 bytes");
    }
  });
});

describe("every hostile text is one bounded argument (property)", () => {
  test("comment() and bareComment(): within 255 bytes, one token, the text the kernel keeps", () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        const kept = commentText(text);
        expect(utf8Length(kept)).toBeLessThanOrEqual(COMMENT_MAX_BYTES);
        expect(hasControlCharacter(kept)).toBe(false);
        for (const arg of [comment(text), bareComment(text)]) {
          expect(arg).not.toMatch(/[\n\r\0]/);
          expect(splitRuleLine(ruleLine(arg))).toEqual([
            "-A",
            CHAIN,
            "-m",
            "comment",
            "--comment",
            kept,
            "-j",
            "RETURN",
          ]);
        }
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  for (const [what, text] of INJECTIONS) {
    test(`injection: ${what}`, () => {
      const line = ruleLine(comment(text));
      expect(line.split("\n")).toHaveLength(1);
      expect(commentOf(line)).toBe(commentText(text));
      expect(splitRuleLine(line).slice(-2)).toEqual(["-j", "RETURN"]);
      expect(utf8Length(commentText(text))).toBeLessThanOrEqual(COMMENT_MAX_BYTES);
    });
  }
  test("the 248-byte multibyte example fits whole; the 300-character name is cut", () => {
    const multibyte = INJECTIONS.find(([w]) => w.startsWith("248"))![1];
    expect(utf8Length(multibyte)).toBe(248);
    expect(commentText(multibyte)).toBe(multibyte);
    const long = INJECTIONS.find(([w]) => w.startsWith("a 300"))![1];
    expect(commentText(long)).toHaveLength(255);
  });
});

// ---- against the real iptables-restore ----

/** A restore input with one rule per text (quoted and bare), in one chain of the filter table. */
function restoreInput(texts: readonly string[]): string {
  const rules = texts.flatMap((t) => [ruleLine(comment(t)), ruleLine(bareComment(t))]);
  return ["*filter", `:${CHAIN} - [0:0]`, ...rules, "COMMIT", ""].join("\n");
}

function savedComments(save: string): (string | undefined)[] {
  const chain = parseIptablesSave(save).get("filter")?.chains.get(CHAIN);
  return (chain?.rules ?? []).map(commentOf);
}

function realToolChecks(backend: IptablesBackend) {
  describe(`iptables-${backend}-restore takes every escaped comment (netns)`, () => {
    let ns: TestNetns;
    beforeAll(async () => {
      ns = await createTestNetns();
    });
    afterAll(async () => {
      await ns?.remove();
    });

    test("generated comments: accepted, saved as commentText(), and the fake saves the same", async () => {
      const texts = [
        ...INJECTIONS.map(([, t]) => t),
        ...fc.sample(hostileText, { seed: SEED + (backend === "nft" ? 1 : 0), numRuns: 150 }),
      ];
      const input = restoreInput(texts);
      const real = createIptablesClient({ exec: ns.exec, family: "IPv4", backend });
      await real.restoreAll(input, { noFlush: false, counters: false });
      // --test of the same input agrees that it parses.
      const check = await ns.exec.run({ cmd: `iptables-${backend}-restore`, args: ["--test"], stdin: input });
      expect(check.code).toBe(0);

      const realSave = await real.saveAll();
      const want = texts.flatMap((t) => [commentText(t), commentText(t)]);
      expect(savedComments(realSave)).toEqual(want);
      // Nothing but our chain: no injected rule reached a built-in chain or another table.
      const filter = parseIptablesSave(realSave).get("filter")!;
      for (const c of filter.chains.values()) if (c.name !== CHAIN) expect(c.rules).toEqual([]);

      const fake = new FakeIptables({ backend });
      const fakeClient = createIptablesClient({
        exec: fake.install(new FakeExec(), "IPv4"),
        family: "IPv4",
        backend,
      });
      await fakeClient.restoreAll(input, { noFlush: false, counters: false });
      const fakeRules = parseIptablesSave(await fakeClient.saveAll())
        .get("filter")
        ?.chains.get(CHAIN)?.rules;
      const realRules = filter.chains.get(CHAIN)?.rules;
      expect(fakeRules).toEqual(realRules);
    }, 60_000);
  });
}

realToolChecks("legacy");
realToolChecks("nft");
