// What every output language's comment escaper shares: making arbitrary text printable (no
// control characters, no lone UTF-16 surrogates) and cutting it to a kernel's byte budget at a
// UTF-8 character boundary. The languages differ only in how they then quote the result.

/** What stands in for a control character: a blank keeps words apart and is safe in every quote. */
const CONTROL_REPLACEMENT = " ";
/** What a lone surrogate becomes once encoded as UTF-8 anyway (U+FFFD), said explicitly. */
const REPLACEMENT_CHARACTER = "\uFFFD";

// C0 controls (NUL, TAB, LF, CR, ...), DEL and the C1 controls (NEL among them).
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its job
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// Text that needs none of the work below: printable ASCII.
const PLAIN_ASCII = /^[\u0020-\u007e]*$/;

/** `text` with every control character blanked and every lone surrogate made U+FFFD. */
export function printableText(text: string): string {
  if (PLAIN_ASCII.test(text)) return text;
  return text.replace(CONTROL, CONTROL_REPLACEMENT).replace(LONE_SURROGATE, REPLACEMENT_CHARACTER);
}

/** UTF-8 length of one code point. */
function codePointBytes(cp: number): number {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}

/** Bytes `text` takes as UTF-8 (a lone surrogate counts as U+FFFD's three). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (const ch of text) bytes += codePointBytes(ch.codePointAt(0)!);
  return bytes;
}

/**
 * The longest prefix of `text` that fits `maxBytes` of UTF-8 without splitting a character
 * (a surrogate pair is one character).
 */
export function cutToUtf8Bytes(text: string, maxBytes: number): string {
  // Every UTF-16 unit encodes to at most three bytes: short text needs no counting.
  if (text.length * 3 <= maxBytes) return text;
  let bytes = 0;
  let end = 0;
  for (const ch of text) {
    bytes += codePointBytes(ch.codePointAt(0)!);
    if (bytes > maxBytes) break;
    end += ch.length;
  }
  return text.slice(0, end);
}
