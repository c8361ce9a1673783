// FakeNetlink against the real `ip` in a fresh network namespace. This kernel may lack dummy
// devices, so the batch format is checked on a veth pair: the same invocations go to both, and
// they must agree on exit code, stdout and stderr (including "Command failed -:N"), and on the
// addresses `ip -o addr show` lists afterwards.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import type { Exec, ExecResult } from "../../../src/exec/types.ts";
import { createNetlinkClient } from "../../../src/host/netlink/client.ts";
import { NetlinkError } from "../../../src/host/netlink/errors.ts";
import { FakeNetlink } from "../../../src/host/netlink/testing/fake.ts";
import { createTestNetns, type TestNetns } from "../iptables/netns.ts";

type Step = { name: string; args: string[]; stdin?: string };
const ip = (name: string, ...args: string[]): Step => ({ name, args });
const batch = (name: string, lines: string[], force = false): Step => ({
  name,
  args: force ? ["-force", "-batch", "-"] : ["-batch", "-"],
  stdin: `${lines.join("\n")}\n`,
});

const STEPS: Step[] = [
  ip("a veth pair", "link", "add", "v0", "type", "veth", "peer", "name", "v1"),
  ip("a duplicate link", "link", "add", "v0", "type", "veth", "peer", "name", "v2"),
  batch("bind v4 and v6 host addresses", [
    "address add 10.96.0.1/32 dev v0",
    "address add 10.96.0.10/32 dev v0",
    "address add fd00:10:96::1/128 dev v0",
    "address add fd00:10:96::a/128 dev v0",
  ]),
  batch("a duplicate stops a plain batch at its line", [
    "address add 10.96.0.11/32 dev v0",
    "address add 10.96.0.1/32 dev v0",
    "address add 10.96.0.12/32 dev v0",
  ]),
  batch(
    "-force goes on past every refused line",
    [
      "address add 10.96.0.1/32 dev v0",
      "address del 10.96.0.99/32 dev v0",
      "address add fd00:10:96::1/128 dev v0",
      "address del fd00:10:96::99/128 dev v0",
      "address add 10.96.0.13/32 dev v0",
      "address del 10.96.0.10/32 dev v0",
      "address add 10.96.0.14/32 dev nope",
      "address del fd00:10:96::a/128 dev v0",
    ],
    true,
  ),
  batch("comments and blank lines", ["# bind", "", "address add 10.96.0.15/32 dev v0 # trailing"]),
  batch("same address, another prefix", [
    "address add 10.96.0.15/24 dev v0",
    "address del 10.96.0.15/32 dev v0",
  ]),
  batch("unbind with a prefix that is not there", ["address del 10.96.0.15/32 dev v0"]),
  batch("an unknown command ends the batch", ["address add 10.96.0.16/32 dev v0", "address frob 1"], true),
  batch(
    "an invalid prefix ends the batch",
    ["address add 10.96.0.17/32 dev v0", "address add bogus/32 dev v0"],
    true,
  ),
  ip("show one device", "-o", "addr", "show", "dev", "v0"),
  ip("show one family", "-o", "-4", "addr", "show", "dev", "v0"),
  ip("show everything", "-o", "addr", "show"),
  ip("show a missing device", "-o", "addr", "show", "dev", "nope"),
  ip("delete a missing link", "link", "del", "nope"),
];

async function run(exec: Exec, step: Step): Promise<ExecResult> {
  return exec.run({ cmd: "ip", args: step.args, ...(step.stdin !== undefined ? { stdin: step.stdin } : {}) });
}

describe("FakeNetlink matches the real ip in a netns", () => {
  let ns: TestNetns;
  let fake: FakeNetlink;
  let fakeExec: FakeExec;

  beforeAll(async () => {
    ns = await createTestNetns();
    // Whether this kernel has dummy devices decides how the fake answers for them.
    const probe = await ns.exec.run({ cmd: "ip", args: ["link", "add", "kpts-probe", "type", "dummy"] });
    if (probe.code === 0) await ns.exec.run({ cmd: "ip", args: ["link", "del", "kpts-probe"] });
    fake = new FakeNetlink({ loopback: "down", dummySupported: probe.code === 0 });
    fakeExec = fake.install(new FakeExec());
  });
  afterAll(async () => {
    await ns?.remove();
  });

  test("every step has the same outcome and leaves the same addresses", async () => {
    const log: string[] = [];
    for (const step of STEPS) {
      const want = await run(ns.exec, step);
      const got = await run(fakeExec, step);
      log.push(`${step.name}: exit ${want.code} ${want.stderr.trim().replaceAll("\n", " | ")}`);
      expect({ step: step.name, ...got }).toEqual({ step: step.name, ...want });
      const show = ip("after", "-o", "addr", "show");
      expect({ step: step.name, addrs: (await run(fakeExec, show)).stdout }).toEqual({
        step: step.name,
        addrs: (await run(ns.exec, show)).stdout,
      });
    }
    console.log(`ip fake vs real:\n  ${log.join("\n  ")}`);
  }, 60_000);

  test("the client sees both the same way", async () => {
    const real = createNetlinkClient({ exec: ns.exec });
    const mine = createNetlinkClient({ exec: fakeExec });
    const outcome = async (p: Promise<unknown>) => {
      try {
        return { value: (await p) ?? null };
      } catch (err) {
        if (!(err instanceof NetlinkError)) throw err;
        return { exitCode: err.exitCode, stderr: err.stderr, failures: err.failures };
      }
    };
    const steps: [string, (c: typeof real) => Promise<unknown>][] = [
      ["dummy device", (c) => c.ensureDummyDevice("kube-ipvs0")],
      ["bind", (c) => c.bindAddresses("v0", ["10.96.1.1", "fd00:10:96::1:1", "10.96.0.1"], ["10.96.0.13"])],
      ["rebind and unbind missing", (c) => c.bindAddresses("v0", ["10.96.1.1"], ["10.96.9.9", "fd00::9"])],
      ["bind on a missing device", (c) => c.bindAddresses("nope", ["10.96.1.2"], [])],
      ["list", (c) => c.listAddresses("v0")],
      ["list a missing device", (c) => c.listAddresses("nope")],
      ["local addresses", (c) => c.localAddresses("v1")],
      ["delete", (c) => c.deleteDevice("v1")],
      ["delete again", (c) => c.deleteDevice("v1")],
    ];
    for (const [name, step] of steps) {
      expect({ name, ...(await outcome(step(mine))) }).toEqual({ name, ...(await outcome(step(real))) });
    }
  }, 60_000);
});
