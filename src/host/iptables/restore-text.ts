// The one place text becomes iptables-restore tokens. Comments may carry anything (Service
// names, endpoints): they are made printable, cut to xt_comment's 255 bytes and quoted the way
// iptables-restore reads quotes back. Chain names are not escaped but checked: anything that is
// not a plain name within the kernel's length is refused with a HostInputError.
//
// iptables-restore (1.8.x, both backends) splits a rule line on blanks, tabs and newlines; a
// `"` opens a quoted part in which `\` takes the next character literally, and the closing `"`
// ends the argument. Outside quotes a backslash is an ordinary character.

import { cutToUtf8Bytes, printableText } from "../comment-text.ts";
import { HostInputError } from "../errors.ts";

/** xt_comment keeps 256 bytes including the NUL; iptables 1.8.9 silently cuts longer ones. */
export const COMMENT_MAX_BYTES = 255;

/** XT_EXTENSION_MAXNAMELEN (29) less the NUL: iptables refuses longer chain names. */
export const CHAIN_NAME_MAX_BYTES = 28;

// What needs quote work: anything but printable ASCII without `"` and `\` (a negated class is
// the fastest test, and comments are written once per endpoint).
const NOT_PLAIN = /[^\u0020\u0021\u0023-\u005b\u005d-\u007e]/;
// A comment written bare, as upstream writes service names ("ns/svc:port"): one literal token.
const BARE = /^[A-Za-z0-9_][A-Za-z0-9_.:/-]*$/;
const NEEDS_ESCAPE = /["\\]/g;

/** The comment text the kernel will hold: printable, at most 255 bytes of UTF-8. */
export function commentText(text: string): string {
  if (text.length <= COMMENT_MAX_BYTES && !NOT_PLAIN.test(text)) return text;
  return cutToUtf8Bytes(printableText(text), COMMENT_MAX_BYTES);
}

function quoted(text: string): string {
  return `"${text.replace(NEEDS_ESCAPE, (c) => `\\${c}`)}"`;
}

/** A `--comment` argument, always quoted: `"ns/svc:p cluster IP"`. */
export function comment(text: string): string {
  if (text.length <= COMMENT_MAX_BYTES && !NOT_PLAIN.test(text)) return `"${text}"`;
  return quoted(commentText(text));
}

/**
 * A `--comment` argument written bare when it is one plain token (upstream writes a service
 * port's name so: `--comment ns/svc:p`), quoted like comment() otherwise.
 */
export function bareComment(text: string): string {
  if (text.length <= COMMENT_MAX_BYTES && BARE.test(text)) return text;
  return comment(text);
}

// Letters, digits and a few marks; not starting with "-" or "!" (options and negation).
const CHAIN_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;

/** A chain name as given, when iptables would take it as one; else a HostInputError. */
export function chainName(name: string): string {
  if (name.length > CHAIN_NAME_MAX_BYTES) {
    throw new HostInputError(
      "iptables-restore",
      "chain name",
      name,
      `longer than ${CHAIN_NAME_MAX_BYTES} bytes`,
    );
  }
  if (!CHAIN_NAME.test(name)) {
    throw new HostInputError(
      "iptables-restore",
      "chain name",
      name,
      "not made of letters, digits and _.+- (or starts with one of .+-)",
    );
  }
  return name;
}
