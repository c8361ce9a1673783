// comment-text.ts, shared by every language's comment escaper: printable text and UTF-8 byte
// budgets cut at character boundaries. By hand and by property against TextEncoder.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { cutToUtf8Bytes, printableText, utf8Length } from "../../src/host/comment-text.ts";
import { hasControlCharacter, hostileText } from "../support/hostile-text.ts";

const encoder = new TextEncoder();

describe("printableText", () => {
  test("printable ASCII and other Unicode are kept; controls blanked; lone surrogates U+FFFD", () => {
    expect(printableText("ns/svc:p cluster IP")).toBe("ns/svc:p cluster IP");
    expect(printableText("日本語 🎉 é")).toBe("日本語 🎉 é");
    expect(printableText("a\0b\tc\nd\re\u001bf\u007fg\u0085h\u009fi")).toBe("a b c d e f g h i");
    expect(printableText("\ud800x\udc00")).toBe("\ufffdx\ufffd");
    expect(printableText("\ud83c\udf89")).toBe("🎉");
  });
});

describe("utf8Length and cutToUtf8Bytes", () => {
  test("count and cut whole characters", () => {
    expect(utf8Length("aé日🎉")).toBe(1 + 2 + 3 + 4);
    expect(utf8Length("\ud800")).toBe(3);
    expect(cutToUtf8Bytes("aé日🎉", 9)).toBe("aé日");
    expect(cutToUtf8Bytes("aé日🎉", 10)).toBe("aé日🎉");
    expect(cutToUtf8Bytes("aé日🎉", 2)).toBe("a");
    expect(cutToUtf8Bytes("", 0)).toBe("");
  });

  test("property: the cut is the longest prefix of whole characters within the budget", () => {
    fc.assert(
      fc.property(hostileText, fc.integer({ min: 0, max: 300 }), (raw, max) => {
        const text = printableText(raw);
        expect(hasControlCharacter(text)).toBe(false);
        expect(utf8Length(text)).toBe(encoder.encode(text).length);
        const cut = cutToUtf8Bytes(text, max);
        expect(text.startsWith(cut)).toBe(true);
        expect(utf8Length(cut)).toBeLessThanOrEqual(max);
        // No surrogate pair split, and the next character would not have fitted.
        expect(encoder.encode(cut).length).toBe(utf8Length(cut));
        if (cut.length < text.length) {
          const next = String.fromCodePoint(text.codePointAt(cut.length)!);
          expect(utf8Length(cut) + utf8Length(next)).toBeGreaterThan(max);
        }
      }),
      { seed: 5, numRuns: 3000 },
    );
  });
});
