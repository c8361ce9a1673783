import { describe, expect, test } from "bun:test";
import { IptablesRestoreError } from "../../src/host/iptables/errors.ts";
import { restoreFailureFields } from "../../src/proxy/restore-log.ts";

const payload = "*filter\n:A - [0:0]\n-A A -j NOPE\nCOMMIT\n";

describe("restore failure log fields", () => {
  test("a typed restore error logs its reason and the numbered lines around the one blamed", () => {
    const err = new IptablesRestoreError(
      "iptables-nft-restore",
      ["--noflush", "--counters"],
      2,
      "iptables-nft-restore v1.8.9 (nf_tables): Couldn't load target `NOPE'\nError occurred at line: 3\n",
      payload,
    );
    const fields = restoreFailureFields(err);
    expect(fields.err).toContain("at line 3");
    expect(fields.err).toContain("> 3: -A A -j NOPE");
    expect(fields.err).toContain("  1: *filter");
  });

  test("any other failure is logged by its message", () => {
    expect(restoreFailureFields(new Error("exec: timeout"))).toEqual({ err: "exec: timeout" });
    expect(restoreFailureFields("killed")).toEqual({ err: "killed" });
  });
});
