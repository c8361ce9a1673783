// What /flagz shows for each flag: pflag's Value.String() of the given value, else the default.
import { describe, expect, test } from "bun:test";
import { flagValueStrings } from "../../src/cli/flag-values.ts";
import { FLAGS } from "../../src/cli/flags.ts";
import { parseArgs } from "../../src/cli/parse.ts";

describe("flagValueStrings", () => {
  test("every flag is there, defaults in Go's forms; given values win", () => {
    const given = parseArgs([
      "--proxy-mode=nftables",
      "--iptables-sync-period=45s",
      "--nodeport-addresses=198.51.100.0/24,primary",
      "--feature-gates=KubeProxyIPVS=false,AllBeta=true",
      "-v=3",
    ]).values;
    const out = flagValueStrings(given);
    expect(Object.keys(out).sort()).toEqual(FLAGS.map((f) => f.name).sort());
    expect(out["proxy-mode"]).toBe("nftables");
    expect(out["iptables-sync-period"]).toBe("45s");
    expect(out["iptables-min-sync-period"]).toBe("1s");
    expect(out["nodeport-addresses"]).toBe("[198.51.100.0/24,primary]");
    expect(out["feature-gates"]).toBe("AllBeta=true,KubeProxyIPVS=false");
    expect(out.v).toBe("3");
    expect(out["bind-address-hard-fail"]).toBe("false");
  });
});
