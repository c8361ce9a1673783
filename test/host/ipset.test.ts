import { describe, expect, test } from "bun:test";
import { FakeExec, fail, ok } from "../../src/exec/fake.ts";
import {
  createIpsetClient,
  ipsetVersionSupported,
  MIN_IPSET_VERSION,
  parseIpsetVersion,
} from "../../src/host/ipset.ts";
import { createFakeIpset } from "../../src/host/ipset-fake.ts";

describe("parseIpsetVersion", () => {
  const table: [string, string | undefined][] = [
    ["ipset v7.17, protocol version: 7\n", "7.17"],
    ["ipset v6.38, protocol version: 6\n", "6.38"],
    ["ipset v7.1, protocol version: 7\nWarning: Kernel support protocol versions 6-7\n", "7.1"],
    ["ipset v6.20.1, protocol version: 6", "6.20.1"],
    ["ipset: command not found", undefined],
    ["", undefined],
  ];
  for (const [output, want] of table) {
    test(`${JSON.stringify(output)} -> ${want}`, () => {
      expect(parseIpsetVersion(output)).toBe(want);
    });
  }

  test("version support is judged against MIN_IPSET_VERSION", () => {
    expect(MIN_IPSET_VERSION).toBe("6.0");
    expect(ipsetVersionSupported("7.17")).toBe(true);
    expect(ipsetVersionSupported("6.0")).toBe(true);
    expect(ipsetVersionSupported("5.4")).toBe(false);
    expect(ipsetVersionSupported("garbage")).toBe(false);
  });
});

describe("createIpsetClient.version", () => {
  test("runs ipset --version and returns the parsed version", async () => {
    const exec = new FakeExec({ ipset: () => ok("ipset v6.38, protocol version: 6\n") });
    expect(await createIpsetClient({ exec }).version()).toEqual({ ok: true, version: "6.38" });
    expect(exec.calls.map((c) => c.args)).toEqual([["--version"]]);
  });

  test("a missing binary is reported as ipset not found", async () => {
    expect(await createIpsetClient({ exec: new FakeExec() }).version()).toEqual({
      ok: false,
      detail: "ipset not found",
    });
  });

  test("a failing or unparseable ipset is reported with its output", async () => {
    const broken = new FakeExec({ ipset: () => fail(1, "Kernel error received: Operation not permitted\n") });
    const res = await createIpsetClient({ exec: broken }).version();
    expect(res).toEqual({ ok: false, detail: expect.stringContaining("Operation not permitted") });
    const odd = new FakeExec({ ipset: () => ok("ipset, unknown build\n") });
    const res2 = await createIpsetClient({ exec: odd }).version();
    expect(res2.ok).toBe(false);
  });
});

describe("FakeIpset", () => {
  test("answers the real client with its configured version", async () => {
    const exec = createFakeIpset({ version: "7.17" }).install();
    expect(await createIpsetClient({ exec }).version()).toEqual({ ok: true, version: "7.17" });
    const res = await exec.run({ cmd: "ipset", args: ["version"] });
    expect(res.stdout).toBe("ipset v7.17, protocol version: 7\n");
  });

  test("version can change at runtime (an upgraded node)", async () => {
    const fake = createFakeIpset({ version: "6.38" });
    const client = createIpsetClient({ exec: fake.install() });
    expect(await client.version()).toEqual({ ok: true, version: "6.38" });
    fake.version = "7.19";
    expect(await client.version()).toEqual({ ok: true, version: "7.19" });
  });

  test("installs into an existing FakeExec beside other tools", async () => {
    const exec = new FakeExec({ uname: () => ok("6.1.0\n") });
    createFakeIpset().install(exec);
    expect((await exec.run({ cmd: "ipset", args: ["-v"] })).stdout).toContain("v7.17");
    expect((await exec.run({ cmd: "uname", args: ["-r"] })).stdout).toBe("6.1.0\n");
  });

  test("subcommands it does not model fail like an unknown argument", async () => {
    const res = createFakeIpset().handle({ cmd: "ipset", args: ["frobnicate"] });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("frobnicate");
  });
});
