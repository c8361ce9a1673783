// Text an output-language escaper must survive, for property tests: any Unicode (astral planes
// too), lone UTF-16 surrogates, control characters, the characters each tool's parser treats
// specially (quotes, backslashes, ";", "#", braces, newlines) and strings far past every byte
// limit. Also the injection examples the escapers exist for, as fixed cases.

import fc from "fast-check";

/** Characters some restore language reads as syntax, plus multibyte ones to hit byte limits. */
const NASTY = [
  '"',
  "'",
  "\\",
  "\n",
  "\r",
  "\t",
  "\0",
  "\v",
  "\u0085",
  "\u2028",
  ";",
  "#",
  "{",
  "}",
  "$",
  "@",
  "!",
  "-",
  " ",
  ":",
  "/",
  "*",
  "a",
  "Z",
  "0",
  "é",
  "日",
  "🎉",
  "\ud800",
  "\udfff",
];

const oneUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

/** Any string the API could carry, weighted toward what breaks parsers and byte limits. */
export const hostileText: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: "binary", maxLength: 300 }),
  fc.string({ unit: fc.constantFrom(...NASTY), maxLength: 300 }),
  fc.string({ unit: oneUnit, maxLength: 120 }),
  fc.string({ unit: "grapheme", minLength: 100, maxLength: 700 }),
);

/** The attacks named in the design: each must come out as one harmless comment. */
export const INJECTIONS: readonly (readonly [string, string])[] = [
  ["newline then COMMIT", 'ns/svc"\nCOMMIT\n*filter\n-I INPUT 1 -j ACCEPT\nCOMMIT\n#'],
  ["carriage return and newline", "ns/svc:p\r\n-A INPUT -j ACCEPT"],
  ["a quote closing the argument", 'ns/svc" -j ACCEPT -m comment --comment "x'],
  ["a backslash before the closing quote", "ns/svc\\"],
  ["; flush ruleset", 'ns/svc"; flush ruleset; add table ip evil #'],
  ["# comments out the rest", "ns/svc # } ; flush ruleset"],
  ["a NUL", "ns/svc\0-j ACCEPT"],
  ["a 300-character name", `ns/${"a".repeat(300)}:p`],
  ["248 bytes of multibyte text", `${"日本語".repeat(27)}ééx`],
  ["astral characters across every limit", "🎉".repeat(80)],
];

/** Whether `text` holds a C0 control, DEL or a C1 control (what no escaped comment may keep). */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}
