// The hash upstream puts into generated names (iptables KUBE-SVC-, nftables "service-XXXXXXXX-"):
// the standard (RFC 4648) base32 encoding of sha256(input), cut to a prefix.

import * as nodeCrypto from "node:crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

// crypto.hash (one call, no Hash object) is several times faster where the runtime has it.
const oneShot = (nodeCrypto as { hash?: (alg: string, data: string, enc: "buffer") => Uint8Array }).hash;

export const sha256: (input: string) => Uint8Array = oneShot
  ? (input) => oneShot("sha256", input, "buffer")
  : (input) => nodeCrypto.createHash("sha256").update(input).digest();

// The characters' codes, made into one flat string at the end: built by `+=`, the text would be
// kept as a tree of its characters (48 cells, ~1.5 KB for a 48-character fingerprint).
const codes: number[] = [];

/** The first `chars` characters (a multiple of 8, at most 48) of base32(sha256(input)). */
export function sha256Base32Prefix(input: string, chars: number): string {
  return base32Prefix(sha256(input), chars);
}

/** sha256Base32Prefix of text given piece by piece (text too big to be made whole). */
export class Sha256Pieces {
  private readonly hash = nodeCrypto.createHash("sha256");

  update(piece: string): this {
    this.hash.update(piece);
    return this;
  }

  /** Of the pieces given, in order, as one text; the hash takes no more pieces after. */
  base32Prefix(chars: number): string {
    return base32Prefix(this.hash.digest(), chars);
  }
}

function base32Prefix(d: Uint8Array, chars: number): string {
  codes.length = 0;
  // Every 5 digest bytes are 8 base32 characters; no padding is reached below 30 bytes.
  for (let g = 0; codes.length < chars; g += 5) {
    const hi = d[g]!;
    const lo = ((d[g + 1]! << 24) | (d[g + 2]! << 16) | (d[g + 3]! << 8) | d[g + 4]!) >>> 0;
    codes.push(ALPHABET.charCodeAt(hi >>> 3), ALPHABET.charCodeAt(((hi & 7) << 2) | (lo >>> 30)));
    for (let shift = 25; shift >= 0; shift -= 5) codes.push(ALPHABET.charCodeAt((lo >>> shift) & 31));
  }
  codes.length = chars;
  return String.fromCharCode.apply(null, codes);
}
