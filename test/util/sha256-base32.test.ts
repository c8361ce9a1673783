// The base32 sha256 prefix of generated names (upstream's KUBE-SVC- hash), and the same digest of
// text given piece by piece, which fingerprints of 100,000-port Services use.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { Sha256Pieces, sha256Base32Prefix } from "../../src/util/sha256-base32.ts";

describe("sha256Base32Prefix", () => {
  test("upstream's chain name hash: KUBE-SVC- of ns1/svc1:p80 tcp", () => {
    // pkg/proxy/iptables: servicePortChainName("ns1/svc1:p80", "tcp") is KUBE-SVC-XPGD46QRK7WJZT7O.
    expect(sha256Base32Prefix("ns1/svc1:p80tcp", 16)).toBe("XPGD46QRK7WJZT7O");
  });

  test("pieces hash as their concatenation does, however the text is cut", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "binary" }), { maxLength: 8 }), (pieces) => {
        const hash = new Sha256Pieces();
        for (const p of pieces) hash.update(p);
        expect(hash.base32Prefix(48)).toBe(sha256Base32Prefix(pieces.join(""), 48));
      }),
      { numRuns: 300 },
    );
  });
});
