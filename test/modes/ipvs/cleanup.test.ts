import { describe, expect, test } from "bun:test";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { createIpvsClient } from "../../../src/host/ipvs/client.ts";
import { FakeIpvs } from "../../../src/host/ipvs/testing/fake.ts";
import { cleanupIpvs } from "../../../src/modes/ipvs/cleanup.ts";

const TABLE = `-A -t 198.51.100.10:80 -s rr
-a -t 198.51.100.10:80 -r 203.0.113.11:8080 -m -w 1
-A -u 198.51.100.53:53 -s rr
-A -t 192.0.2.250:443 -s wlc
-a -t 192.0.2.250:443 -r 192.0.2.251:443 -m -w 1
`;

function setup(available = true) {
  const fake = new FakeIpvs({ available });
  if (available) fake.load(TABLE);
  const exec = new FakeExec();
  fake.install(exec);
  return { fake, exec, ipvs: createIpvsClient({ exec }) };
}

describe("--cleanup (IPVS)", () => {
  test("deletes every virtual server outside the excluded CIDRs, in one batch", async () => {
    const { fake, exec, ipvs } = setup();
    expect(await cleanupIpvs(ipvs, ["192.0.2.248/29"])).toEqual({ removed: 2, kept: 1 });
    expect(fake.services().map((s) => `${s.server.address}:${s.server.port}`)).toEqual(["192.0.2.250:443"]);
    expect(exec.calls.filter((c) => c.args.includes("--restore")).length).toBe(1);
  });

  test("twice is fine; a kernel without IPVS has nothing to clean", async () => {
    const { ipvs } = setup();
    await cleanupIpvs(ipvs, []);
    expect(await cleanupIpvs(ipvs, [])).toEqual({ removed: 0, kept: 0 });
    expect(await cleanupIpvs(setup(false).ipvs, [])).toEqual({ removed: 0, kept: 0 });
  });
});
