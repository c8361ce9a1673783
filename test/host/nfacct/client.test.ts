import { describe, expect, test } from "bun:test";
import { FakeExec, fail, ok } from "../../../src/exec/testing/fake.ts";
import { createNfacctClient, parseNfacctOutput } from "../../../src/host/nfacct/client.ts";
import { NfacctError } from "../../../src/host/nfacct/errors.ts";
import { FakeNfacct } from "../../../src/host/nfacct/testing/fake.ts";
import { createTestNetns } from "../iptables/netns.ts";

const NAME = "localhost_nps_accepted_pkts";

describe("parseNfacctOutput", () => {
  test("zero-padded counters, several objects, quota fields ignored", () => {
    const text =
      "{ pkts = 00000000000000000012, bytes = 00000000000000000840 } = a;\n" +
      "{ pkts = 00000000000000000000, bytes = 00000000000000000000 } = localhost_nps_accepted_pkts;\n" +
      "{ pkts = 00000000000000000003, bytes = 00000000000000000100, quota = 1000 } = q;\n";
    expect(parseNfacctOutput(text)).toEqual([
      { name: "a", packets: 12, bytes: 840 },
      { name: NAME, packets: 0, bytes: 0 },
      { name: "q", packets: 3, bytes: 100 },
    ]);
    expect(parseNfacctOutput("")).toEqual([]);
  });
});

describe("nfacct client against FakeNfacct", () => {
  test("ensure creates once; get reads the counters", async () => {
    const fake = new FakeNfacct();
    const exec = fake.install();
    const client = createNfacctClient({ exec });
    expect(await client.available()).toBe(true);
    await client.ensure(NAME);
    await client.ensure(NAME);
    expect(fake.names).toEqual([NAME]);
    fake.count(NAME, 5, 300);
    expect(await client.get(NAME)).toEqual({ packets: 5, bytes: 300 });
    expect(exec.callsTo("nfacct").map((c) => c.args)).toEqual([
      ["list"],
      ["add", NAME],
      ["add", NAME],
      ["get", NAME],
    ]);
  });

  test("get of a missing counter is undefined, not an error", async () => {
    const client = createNfacctClient({ exec: new FakeNfacct().install() });
    expect(await client.get("nope")).toBeUndefined();
  });

  test("unsupported kernel or missing binary: not available, and ensure fails", async () => {
    const fake = new FakeNfacct();
    fake.supported = false;
    const client = createNfacctClient({ exec: fake.install() });
    expect(await client.available()).toBe(false);
    await expect(client.ensure(NAME)).rejects.toBeInstanceOf(NfacctError);
    expect(await createNfacctClient({ exec: new FakeExec() }).available()).toBe(false);
  });

  test("names longer than 31 characters are refused before running anything", async () => {
    const exec = new FakeNfacct().install();
    const client = createNfacctClient({ exec });
    await expect(client.ensure("x".repeat(32))).rejects.toThrow(/1 to 31/);
    expect(exec.calls).toHaveLength(0);
  });

  test("other failures and unparseable output are NfacctErrors", async () => {
    const broken = createNfacctClient({
      exec: new FakeExec({ nfacct: () => fail(1, "nfacct: Operation not permitted\n") }),
    });
    await expect(broken.get(NAME)).rejects.toBeInstanceOf(NfacctError);
    const odd = createNfacctClient({ exec: new FakeExec({ nfacct: () => ok("garbage\n") }) });
    await expect(odd.get(NAME)).rejects.toThrow(/unparseable/);
  });
});

describe("nfacct client against the real nfacct in a netns", () => {
  test("ensure twice, then get zero counters", async () => {
    const ns = await createTestNetns();
    try {
      const client = createNfacctClient({ exec: ns.exec });
      expect(await client.available()).toBe(true);
      await client.ensure(NAME);
      await client.ensure(NAME);
      expect(await client.get(NAME)).toEqual({ packets: 0, bytes: 0 });
      expect(await client.get("kpts_missing")).toBeUndefined();
    } finally {
      await ns.remove();
    }
  }, 60_000);
});
