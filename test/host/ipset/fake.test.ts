import { describe, expect, test } from "bun:test";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { FakeIpset } from "../../../src/host/ipset/testing/fake.ts";

function setup() {
  const fake = new FakeIpset();
  const exec = fake.install(new FakeExec());
  const ipset = (args: string[], stdin?: string) =>
    exec.run({ cmd: "ipset", args, ...(stdin !== undefined ? { stdin } : {}) });
  return { fake, ipset };
}

const SCRIPT = `create A hash:ip,port family inet hashsize 1024 maxelem 65536
create B bitmap:port range 0-65535
create C hash:ip family inet6 hashsize 1024 maxelem 65536
add A 10.0.0.1,tcp:80
add B 30080
add C 2001:db8::1
`;

describe("FakeIpset", () => {
  test("list prints ipset's blocks; -n names; -t no members; -o save", async () => {
    const { fake, ipset } = setup();
    fake.load(SCRIPT);
    const list = (await ipset(["list", "A"])).stdout;
    expect(list).toMatch(
      /^Name: A\nType: hash:ip,port\nRevision: 7\nHeader: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x[0-9a-f]{8}\nSize in memory: \d+\nReferences: 0\nNumber of entries: 1\nMembers:\n10\.0\.0\.1,tcp:80\n$/,
    );
    expect((await ipset(["list", "-n"])).stdout).toBe("A\nB\nC\n");
    expect((await ipset(["list", "-t", "B"])).stdout).not.toContain("Members:");
    expect((await ipset(["list", "-o", "save", "B"])).stdout).toBe(
      "create B bitmap:port range 0-65535\nadd B 30080\n",
    );
    // Blocks are separated by one blank line.
    expect((await ipset(["list"])).stdout.split("\n\nName: ")).toHaveLength(3);
  });

  test("a destroyed set's slot is reused by the next create (kernel order)", async () => {
    const { fake } = setup();
    fake.load(SCRIPT);
    fake.load("destroy A\ncreate D hash:ip family inet hashsize 1024 maxelem 65536\n");
    expect(fake.setNames()).toEqual(["D", "B", "C"]);
  });

  test("a referenced set cannot be destroyed", async () => {
    const { fake, ipset } = setup();
    fake.load(SCRIPT);
    fake.setReferences("B", 2);
    expect(await ipset(["destroy", "B"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "ipset v7.17: Set cannot be destroyed: it is in use by a kernel component\n",
    });
    expect(await ipset(["destroy"])).toMatchObject({ code: 1 });
    fake.setReferences("B", 0);
    expect((await ipset(["destroy"])).code).toBe(0);
    expect(fake.setNames()).toEqual([]);
  });

  test("test reports membership the way upstream's TestEntry reads it", async () => {
    const { fake, ipset } = setup();
    fake.load(SCRIPT);
    expect(await ipset(["test", "A", "10.0.0.1,tcp:80"])).toEqual({
      code: 0,
      stdout: "",
      stderr: "Warning: 10.0.0.1,tcp:80 is in set A.\n",
    });
    expect((await ipset(["test", "A", "10.0.0.2,tcp:80"])).code).toBe(1);
  });

  test("sets() is what the client's listSets() returns", () => {
    const { fake } = setup();
    fake.load(SCRIPT);
    expect(fake.sets().get("C")).toEqual({
      spec: { name: "C", type: "hash:ip", family: "inet6", comment: "", hashSize: 1024, maxElem: 65536 },
      entries: new Set(["2001:db8::1"]),
    });
    expect(fake.entries("B")).toEqual(["30080"]);
    expect(fake.entries("nope")).toBeUndefined();
  });

  test("initval is deterministic per seed", () => {
    const a = new FakeIpset({ seed: 7 });
    const b = new FakeIpset({ seed: 7 });
    a.load(SCRIPT);
    b.load(SCRIPT);
    expect(a.save()).toBe(b.save());
  });
});
