import { describe, expect, test } from "bun:test";
import { FakeExec, fail, ok } from "../../../src/exec/testing/fake.ts";
import {
  createIpsetClient,
  ipsetVersionSupported,
  parseIpsetVersion,
} from "../../../src/host/ipset/client.ts";
import { canonicalEntry, entryProblem, validateEntry } from "../../../src/host/ipset/entries.ts";
import { IpsetError, parseIpsetError } from "../../../src/host/ipset/errors.ts";
import { addLine, createLine, delLine, destroyLine, flushLine } from "../../../src/host/ipset/lines.ts";
import { parseIpsetSave } from "../../../src/host/ipset/save-parser.ts";
import { createFakeIpset } from "../../../src/host/ipset/testing/fake.ts";
import { type IpsetType, MIN_IPSET_VERSION } from "../../../src/host/ipset/types.ts";

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

  test("an unknown subcommand fails as ipset's usage error (exit 2)", async () => {
    const res = createFakeIpset().handle({ cmd: "ipset", args: ["frobnicate"] });
    expect(res).toEqual({
      code: 2,
      stdout: "",
      stderr:
        "ipset v7.17: No command specified: unknown argument frobnicate\nTry `ipset help' for more information.\n",
    });
  });
});

// `ipset save` from a node running upstream kube-proxy in ipvs mode (ipset 7.17, kernel 6.x),
// plus a set with the comment extension made by another tool.
const SAVE = `create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0xe9bf0289
add KUBE-CLUSTER-IP 10.96.0.10,tcp:53
add KUBE-CLUSTER-IP 10.96.0.1,tcp:443
add KUBE-CLUSTER-IP 10.96.0.10,udp:53
create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x4128e96c
add KUBE-LOOP-BACK 10.244.1.5,tcp:8080,10.244.1.5
create KUBE-6-LOAD-BALANCER-SOURCE-CID hash:ip,port,net family inet6 hashsize 1024 maxelem 65536 bucketsize 12 initval 0x0ec39437
add KUBE-6-LOAD-BALANCER-SOURCE-CID 2001:db8::1,tcp:80,2001:db8:1::/48
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-TCP 30080
create OTHER hash:net family inet hashsize 1024 maxelem 65536 comment bucketsize 12 initval 0x9c131386
add OTHER 10.0.0.0/8 comment "hello world"
add OTHER 172.16.0.1
`;

describe("parseIpsetSave", () => {
  test("reads sets, their parameters, entries and entry comments", () => {
    const sets = parseIpsetSave(SAVE);
    expect([...sets.keys()]).toEqual([
      "KUBE-CLUSTER-IP",
      "KUBE-LOOP-BACK",
      "KUBE-6-LOAD-BALANCER-SOURCE-CID",
      "KUBE-NODE-PORT-TCP",
      "OTHER",
    ]);
    expect(sets.get("KUBE-CLUSTER-IP")).toEqual({
      spec: {
        name: "KUBE-CLUSTER-IP",
        type: "hash:ip,port",
        family: "inet",
        comment: "",
        hashSize: 1024,
        maxElem: 65536,
      },
      entries: new Set(["10.96.0.10,tcp:53", "10.96.0.1,tcp:443", "10.96.0.10,udp:53"]),
    });
    expect(sets.get("KUBE-6-LOAD-BALANCER-SOURCE-CID")?.spec.family).toBe("inet6");
    expect(sets.get("KUBE-NODE-PORT-TCP")).toEqual({
      spec: {
        name: "KUBE-NODE-PORT-TCP",
        type: "bitmap:port",
        family: "inet",
        comment: "",
        range: "0-65535",
      },
      entries: new Set(["30080"]),
    });
    expect(sets.get("OTHER")?.comments).toEqual(new Map([["10.0.0.0/8", "hello world"]]));
  });

  test("empty output is no sets; garbage is a typed error with the line", () => {
    expect(parseIpsetSave("").size).toBe(0);
    expect(() => parseIpsetSave("create A hash:ip family inet\nfrobnicate A\n")).toThrow(/line 2/);
  });
});

describe("script lines", () => {
  test("create lines are upstream's, without the comment extension", () => {
    expect(
      createLine({
        name: "KUBE-CLUSTER-IP",
        type: "hash:ip,port",
        family: "inet",
        comment: "Kubernetes service cluster ip + port for masquerade purpose",
      }),
    ).toBe("create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536");
    expect(
      createLine({
        name: "KUBE-6-HEALTH-CHECK-NODE-PORT",
        type: "bitmap:port",
        family: "inet6",
        comment: "",
      }),
    ).toBe("create KUBE-6-HEALTH-CHECK-NODE-PORT bitmap:port range 0-65535");
    expect(
      createLine({
        name: "X",
        type: "hash:net",
        family: "inet6",
        comment: "",
        hashSize: 4096,
        maxElem: 131072,
      }),
    ).toBe("create X hash:net family inet6 hashsize 4096 maxelem 131072");
  });

  test("add, del, flush, destroy", () => {
    expect(addLine("KUBE-CLUSTER-IP", "10.96.0.1,tcp:443")).toBe("add KUBE-CLUSTER-IP 10.96.0.1,tcp:443");
    expect(delLine("KUBE-CLUSTER-IP", "10.96.0.1,tcp:443")).toBe("del KUBE-CLUSTER-IP 10.96.0.1,tcp:443");
    expect(flushLine("KUBE-CLUSTER-IP")).toBe("flush KUBE-CLUSTER-IP");
    expect(destroyLine("KUBE-CLUSTER-IP")).toBe("destroy KUBE-CLUSTER-IP");
  });
});

describe("validateEntry / canonicalEntry", () => {
  const valid: [IpsetType, string, string, ("inet" | "inet6")?][] = [
    ["hash:ip", "10.0.0.1", "10.0.0.1"],
    ["hash:ip,port", "10.96.0.1,tcp:443", "10.96.0.1,tcp:443"],
    ["hash:ip,port", "10.96.0.1,UDP:53", "10.96.0.1,udp:53"],
    ["hash:ip,port", "10.96.0.1,53", "10.96.0.1,tcp:53"],
    ["hash:ip,port", "10.96.0.1,sctp:9", "10.96.0.1,sctp:9"],
    ["hash:ip,port", "2001:0db8::0001,tcp:80", "2001:db8::1,tcp:80", "inet6"],
    ["hash:ip,port,ip", "10.244.1.5,tcp:8080,10.244.1.5", "10.244.1.5,tcp:8080,10.244.1.5"],
    ["hash:ip,port,net", "203.0.113.7,tcp:80,192.168.1.7/24", "203.0.113.7,tcp:80,192.168.1.0/24"],
    ["hash:ip,port,net", "203.0.113.7,tcp:80,192.168.1.7/32", "203.0.113.7,tcp:80,192.168.1.7"],
    [
      "hash:ip,port,net",
      "2001:db8::1,tcp:80,2001:db8:1::5/48",
      "2001:db8::1,tcp:80,2001:db8:1::/48",
      "inet6",
    ],
    ["hash:net", "10.0.0.0/8", "10.0.0.0/8"],
    ["hash:net", "10.1.2.3/32", "10.1.2.3"],
    ["bitmap:port", "30080", "30080"],
  ];
  for (const [type, entry, want, family] of valid) {
    test(`${type} ${entry}`, () => {
      expect(validateEntry(type, entry, family)).toBe(true);
      expect(canonicalEntry(type, entry, family)).toBe(want);
    });
  }

  const invalid: [IpsetType, string, string][] = [
    ["hash:ip", "10.0.0.1,tcp:80", "Elem separator in 10.0.0.1,tcp:80, but settype hash:ip supports none."],
    ["hash:ip", "2001:db8::1", "resolving to IPv4 address failed"],
    ["hash:ip,port", "10.0.0.1", "Second element is missing from 10.0.0.1."],
    ["hash:ip,port", "10.0.0.1,foo:80", "cannot parse 'foo' as a protocol"],
    ["hash:ip,port", "10.0.0.1,tcp:70000", "'70000' is out of range 0-65535"],
    ["hash:ip,port", "10.0.0.1,tcp:53-55", "is a range"],
    ["hash:ip,port,ip", "10.0.0.1,tcp:80", "Third element is missing from 10.0.0.1,tcp:80."],
    ["hash:ip,port,ip", "10.0.0.1,tcp:80,10.0.0.0/24", "plain IP address must be supplied: 10.0.0.0/24"],
    [
      "hash:ip,port,net",
      "10.0.0.1,tcp:80,0.0.0.0/0",
      "The value of the CIDR parameter of the IP address is invalid",
    ],
    ["hash:net", "garbage", "cannot parse garbage"],
    ["bitmap:port", "abc", "'abc' is invalid as number"],
  ];
  for (const [type, entry, why] of invalid) {
    test(`${type} refuses ${entry}`, () => {
      expect(validateEntry(type, entry)).toBe(false);
      expect(canonicalEntry(type, entry)).toBeUndefined();
      expect(entryProblem(type, entry)).toContain(why);
    });
  }
});

describe("parseIpsetError", () => {
  test("splits the banner and the blamed line", () => {
    expect(
      parseIpsetError(
        "ipset v7.17: Error in line 3: Element cannot be added to the set: it's already added\n",
      ),
    ).toEqual({
      line: 3,
      reason: "Element cannot be added to the set: it's already added",
    });
    expect(
      parseIpsetError(
        "ipset v7.17: No command specified: unknown argument bogus\nTry `ipset help' for more information.\n",
      ),
    ).toEqual({ line: undefined, reason: "No command specified: unknown argument bogus" });
  });
});

describe("IpsetClient set operations against FakeIpset", () => {
  const script = [
    createLine({ name: "KUBE-CLUSTER-IP", type: "hash:ip,port", family: "inet", comment: "" }),
    createLine({ name: "KUBE-NODE-PORT-TCP", type: "bitmap:port", family: "inet", comment: "" }),
    addLine("KUBE-CLUSTER-IP", "10.96.0.1,tcp:443"),
    addLine("KUBE-CLUSTER-IP", "10.96.0.10,udp:53"),
    addLine("KUBE-NODE-PORT-TCP", "30080"),
  ].join("\n");

  function setup() {
    const fake = createFakeIpset();
    const exec = fake.install();
    return { fake, exec, client: createIpsetClient({ exec }) };
  }

  test("restore applies a script with one ipset restore -exist; listSets reads it back with one ipset save", async () => {
    const { fake, exec, client } = setup();
    await client.restore(script);
    expect(exec.calls.map((c) => c.args)).toEqual([["restore", "-exist"]]);
    expect(exec.calls[0]!.stdin).toBe(`${script}\n`);
    expect(fake.entries("KUBE-CLUSTER-IP")).toEqual(["10.96.0.1,tcp:443", "10.96.0.10,udp:53"]);
    const sets = await client.listSets();
    expect(exec.calls.at(-1)!.args).toEqual(["save"]);
    expect(sets).toEqual(fake.sets());
    expect(sets.get("KUBE-NODE-PORT-TCP")?.entries).toEqual(new Set(["30080"]));
  });

  test("restore is idempotent under -exist (re-create, re-add, del of a missing entry)", async () => {
    const { fake, client } = setup();
    await client.restore(script);
    await client.restore(`${script}\n${delLine("KUBE-CLUSTER-IP", "10.9.9.9,tcp:1")}\n`);
    expect(fake.entries("KUBE-CLUSTER-IP")).toHaveLength(2);
  });

  test("batching: a sync of N entries is one restore call", async () => {
    const { exec, client } = setup();
    const lines = [
      createLine({ name: "KUBE-CLUSTER-IP", type: "hash:ip,port", family: "inet", comment: "" }),
    ];
    for (let i = 0; i < 500; i++) lines.push(addLine("KUBE-CLUSTER-IP", `10.96.${i >> 8}.${i & 255},tcp:80`));
    await client.restore(lines.join("\n"));
    await client.restore("");
    expect(exec.calls).toHaveLength(1);
  });

  test("a script in whole-line pieces is one restore of the pieces, in order; none is no call", async () => {
    const { fake, exec, client } = setup();
    const lines = script.split("\n");
    await client.restore([`${lines.slice(0, 2).join("\n")}\n`, `${lines.slice(2).join("\n")}\n`]);
    await client.restore([]);
    expect(exec.calls).toHaveLength(1);
    expect(exec.calls[0]!.stdin).toBe(`${script}\n`);
    expect(fake.entries("KUBE-CLUSTER-IP")).toEqual(["10.96.0.1,tcp:443", "10.96.0.10,udp:53"]);
  });

  test("a refused line in a script in pieces is named by its line in the whole script", async () => {
    const { client } = setup();
    await client.restore(script);
    const bad = addLine("KUBE-CLUSTER-IP", "2001:db8::1,tcp:80");
    const err = await client
      .restore([`${addLine("KUBE-CLUSTER-IP", "10.96.0.2,tcp:80")}\n`, `${bad}\n`])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IpsetError);
    expect([(err as IpsetError).line, (err as IpsetError).text]).toEqual([2, bad]);
  });

  test("a refused line is an IpsetError with ipset's line number and that line's text", async () => {
    const { client } = setup();
    await client.restore(script);
    try {
      await client.restore(
        `${addLine("KUBE-CLUSTER-IP", "10.96.0.2,tcp:80")}\n${addLine("KUBE-CLUSTER-IP", "2001:db8::1,tcp:80")}\n`,
      );
      throw new Error("expected a failure");
    } catch (err) {
      expect(err).toBeInstanceOf(IpsetError);
      const e = err as IpsetError;
      expect(e.line).toBe(2);
      expect(e.text).toBe("add KUBE-CLUSTER-IP 2001:db8::1,tcp:80");
      expect(e.reason).toBe("Syntax error: cannot parse 2001:db8::1: resolving to IPv4 address failed");
      expect(e.exitCode).toBe(1);
    }
  });

  test("destroy removes a set; a missing one is fine; one in use is an error", async () => {
    const { fake, exec, client } = setup();
    await client.restore(script);
    await client.destroy("KUBE-NODE-PORT-TCP");
    expect(exec.calls.at(-1)!.args).toEqual(["destroy", "KUBE-NODE-PORT-TCP"]);
    expect(fake.setNames()).toEqual(["KUBE-CLUSTER-IP"]);
    await client.destroy("KUBE-NODE-PORT-TCP");
    fake.setReferences("KUBE-CLUSTER-IP", 1);
    await expect(client.destroy("KUBE-CLUSTER-IP")).rejects.toThrow("in use by a kernel component");
  });

  test("listSets failures are typed", async () => {
    const client = createIpsetClient({
      exec: new FakeExec({
        ipset: () => fail(1, "ipset v7.17: Kernel error received: Operation not permitted\n"),
      }),
    });
    await expect(client.listSets()).rejects.toBeInstanceOf(IpsetError);
  });
});

describe("createIpsetClient bounds", () => {
  const CREATE_S = "create s hash:ip family inet hashsize 1024 maxelem 65536\n";
  const timeouts = (exec: FakeExec, verb: string) =>
    exec
      .callsTo("ipset")
      .filter((c) => c.args[0] === verb)
      .map((c) => c.timeoutMs);

  test("a restore's bound grows with its lines, counted or as its maker says", async () => {
    const exec = createFakeIpset().install();
    const client = createIpsetClient({ exec, timeoutMs: 1000, perThousandLinesMs: 100 });
    const members = Array.from({ length: 2500 }, (_, i) => `add s 10.0.${i >> 8}.${i & 255}\n`);
    await client.restore([CREATE_S, ...members]);
    await client.restore(["add s 10.9.0.1\n"].values(), { lines: 1 });
    await client.restore(["add s 10.9.0.2\n"].values());
    expect(timeouts(exec, "restore")).toEqual([1200, 1000, 1000]);
  });

  test("a save expects the lines of the last save plus those restored since", async () => {
    const exec = createFakeIpset().install();
    const client = createIpsetClient({ exec, timeoutMs: 1000, perThousandLinesMs: 100 });
    await client.listSets();
    const members = Array.from({ length: 1500 }, (_, i) => `add s 10.0.${i >> 8}.${i & 255}\n`);
    await client.restore([CREATE_S, ...members]);
    const sets = await client.listSets();
    expect(sets.get("s")?.entries.size).toBe(1500);
    await client.listSets();
    expect(timeouts(exec, "save")).toEqual([1000, 1100, 1100]);
  });

  test("a save that timed out is given twice as long the next time", async () => {
    let slow = true;
    const fake = createFakeIpset();
    const inner = fake.install();
    const exec = new FakeExec({
      ipset: (req) =>
        slow && req.args[0] === "save"
          ? { code: 124, stdout: "", stderr: "", timedOut: true }
          : inner.run(req),
    });
    const client = createIpsetClient({ exec, timeoutMs: 1000, perThousandLinesMs: 100 });
    await expect(client.listSets()).rejects.toThrow(IpsetError);
    await expect(client.listSets()).rejects.toThrow(IpsetError);
    slow = false;
    await client.listSets();
    await client.listSets();
    expect(timeouts(exec, "save")).toEqual([1000, 2000, 4000, 1000]);
  });
});
