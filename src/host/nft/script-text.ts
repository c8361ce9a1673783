// The one place text becomes `nft -f` tokens. nft 1.0.6's scanner has no escapes: a quoted
// string runs from `"` to the next `"`, and an unquoted name is a `string` token (a letter,
// `_` or `.`, then letters, digits and `/\-_.`) unless it is exactly a keyword. So comments are
// made printable, lose their `"` and are cut to the kernel's 128 bytes; names are checked and
// refused (HostInputError) when nft would not read them as one name; and the free text of
// rules, set types and element parts is refused when it holds what would end a statement.

import { cutToUtf8Bytes, printableText } from "../comment-text.ts";
import { HostInputError } from "../errors.ts";

/** nft refuses a comment over 128 bytes ("comment too long, 128 characters maximum allowed"). */
export const NFT_COMMENT_MAX_BYTES = 128;

/** NFT_NAME_MAXLEN (256) less the NUL: the kernel refuses longer table, chain and set names. */
export const NFT_NAME_MAX_BYTES = 255;

/** What a `"` in a comment becomes: nft has no way to escape one inside a quoted string. */
const QUOTE_REPLACEMENT = "'";

// Anything but printable ASCII without `"` (what every mode writes needs no work).
const NOT_PLAIN_COMMENT = /[^\u0020\u0021\u0023-\u007e]/;

/** The comment text the kernel will hold: printable, no `"`, at most 128 bytes of UTF-8. */
export function nftCommentText(text: string): string {
  if (text.length <= NFT_COMMENT_MAX_BYTES && !NOT_PLAIN_COMMENT.test(text)) return text;
  return cutToUtf8Bytes(printableText(text).replaceAll('"', QUOTE_REPLACEMENT), NFT_COMMENT_MAX_BYTES);
}

/** A comment as nft reads it: `"text"`. */
export function nftComment(text: string): string {
  return `"${nftCommentText(text)}"`;
}

// Stricter than the scanner at the start (a letter, never `_` or `.`): every name we write
// begins with one, and "." alone would be read as a dot. Tested as a negated class: names are
// checked once per operation, half a million times in a big sync.
const NOT_NAME_CHARACTER = /[^A-Za-z0-9/_.-]/;

function isLetter(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

/**
 * Words nft 1.0.6 reads as keywords where a table, chain or set name is expected (measured:
 * each refused by `nft -c` as `add chain ip t WORD` and as a set name), and the two it reads as
 * keywords after `@`. A name equal to one of them is no name to nft.
 */
const KEYWORDS: ReadonlySet<string> = new Set(
  (
    "accept add ah all and arp auto-merge bridge cgroup chain comment comp constant continue " +
    "counter cpu create ct day dccp define delete describe device devices dnat drop dst dup " +
    "dynamic ecn element elements eq esp ether exists expires export exthdr fib flags flow " +
    "flowtable flush frag fwd gc-interval ge get goto gt handle hbh hook hour ibriport ibrname " +
    "icmp icmpv6 igmp iif iifgroup iifname iiftype import include index inet insert interval ip " +
    "ip6 ipsec jhash jump le limit list log lshift lt map mark masquerade meta meter mh missing " +
    "monitor ne netdev nftrace not notrack numgen obriport obrname offload oif oifgroup oifname " +
    "oiftype or osf pkttype policy position priority queue quota random redefine redirect reject " +
    "rename replace reset return rshift rt rt0 rt2 rtclassid rule ruleset sctp secmark set size " +
    "skgid skuid snat socket srh symhash synproxy table tcp th time timeout tproxy type typeof " +
    "udp udplite undefine update vlan vmap xor xt ll nh"
  ).split(" "),
);
const LONGEST_KEYWORD = Math.max(...[...KEYWORDS].map((k) => k.length));

/** Why nft would not take `name` as a table, chain, set or map name; undefined when it would. */
export function nftIdentifierProblem(name: string): string | undefined {
  if (name.length > NFT_NAME_MAX_BYTES) return `longer than ${NFT_NAME_MAX_BYTES} bytes`;
  if (!isLetter(name.charCodeAt(0)) || NOT_NAME_CHARACTER.test(name)) {
    return "not a letter followed by letters, digits and /_.-";
  }
  if (name.length <= LONGEST_KEYWORD && KEYWORDS.has(name)) return "an nft keyword";
  return undefined;
}

/** A table, chain, set or map name as given, when nft reads it as one; else a HostInputError. */
export function nftIdentifier(name: string, what = "name"): string {
  const problem = nftIdentifierProblem(name);
  if (problem !== undefined) throw new HostInputError("nft", what, name, problem);
  return name;
}

// What ends or hides a statement wherever it appears outside a quoted string: a newline (and
// any other control character), `;`, `#` (the rest of the line is a comment) and `"`.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its job
const STATEMENT_BREAK = /[\u0000-\u001f\u007f;#"]/;
// Inside an element's `{ ... }` braces and commas would also end it early.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its job
const ELEMENT_BREAK = /[\u0000-\u001f\u007f;#"{},]/;

/** Rule statements or a set type as given, unless they could end the statement; else refused. */
export function nftStatement(text: string, what = "rule"): string {
  if (STATEMENT_BREAK.test(text)) {
    throw new HostInputError("nft", what, text, 'holds a control character, ";", "#" or a quote');
  }
  return text;
}

/** One part of an element's key or value, unless it could end the element; else refused. */
export function nftElementPart(text: string, what = "element part"): string {
  if (text === "" || ELEMENT_BREAK.test(text)) {
    throw new HostInputError("nft", what, text, 'empty, or holds a control character or one of ;#"{},');
  }
  return text;
}
