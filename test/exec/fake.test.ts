import { describe, expect, test } from "bun:test";
import { FakeExec, fail, ok } from "../../src/exec/testing/fake.ts";

describe("FakeExec", () => {
  test("dispatches by cmd to the registered handler", async () => {
    const exec = new FakeExec({ uname: () => ok("6.1.0\n") });
    exec.on("false", () => fail(1, "nope"));
    expect(await exec.run({ cmd: "uname", args: ["-r"] })).toEqual({
      code: 0,
      stdout: "6.1.0\n",
      stderr: "",
    });
    expect(await exec.run({ cmd: "false", args: [] })).toEqual({ code: 1, stdout: "", stderr: "nope" });
  });

  test("async handlers and handlers that read stdin", async () => {
    const exec = new FakeExec().on("cat", async (req) => ok(req.stdin ?? ""));
    expect((await exec.run({ cmd: "cat", args: [], stdin: "hello" })).stdout).toBe("hello");
  });

  test("an unknown command answers 127 and is still recorded", async () => {
    const exec = new FakeExec();
    const res = await exec.run({ cmd: "ipvsadm", args: ["-Sn"] });
    expect(res.code).toBe(127);
    expect(res.stderr).toContain("ipvsadm");
    expect(exec.calls).toEqual([{ cmd: "ipvsadm", args: ["-Sn"] }]);
  });

  test("a full path finds the handler registered for its base name", async () => {
    const exec = new FakeExec({ ipset: () => ok("ipset v7.17, protocol version: 7\n") });
    expect(exec.has("/usr/sbin/ipset")).toBe(true);
    expect((await exec.run({ cmd: "/usr/sbin/ipset", args: ["--version"] })).code).toBe(0);
    expect(exec.callsTo("ipset")).toHaveLength(1);
  });

  test("an exact registration wins over the base-name match", async () => {
    const exec = new FakeExec({ iptables: () => ok("short"), "/sbin/iptables": () => ok("full") });
    expect((await exec.run({ cmd: "/sbin/iptables", args: [] })).stdout).toBe("full");
    expect((await exec.run({ cmd: "iptables", args: [] })).stdout).toBe("short");
  });

  test("records calls in order and copies args so later mutation cannot rewrite them", async () => {
    const exec = new FakeExec({ a: () => ok(), b: () => ok() });
    const args = ["-x"];
    await exec.run({ cmd: "a", args });
    args.push("mutated");
    await exec.run({ cmd: "b", args: ["-y"], stdin: "in" });
    await exec.run({ cmd: "a", args: [] });
    expect(exec.calls.map((c) => c.cmd)).toEqual(["a", "b", "a"]);
    expect(exec.calls[0]!.args).toEqual(["-x"]);
    expect(exec.calls[1]!.stdin).toBe("in");
    expect(exec.callsTo("a")).toHaveLength(2);
  });

  test("on() replaces an earlier handler for the same command", async () => {
    const exec = new FakeExec({ x: () => ok("old") }).on("x", () => ok("new"));
    expect((await exec.run({ cmd: "x", args: [] })).stdout).toBe("new");
  });
});
