// Runs in the guest (see test/vm/kernel-vm.test.ts): FakeNetlink against the real `ip` on the
// dummy-device path ipvs mode uses, on a kernel that has dummy devices. The same invocations go to
// the fake and, in a fresh network namespace, to `ip`; after every step they must agree on exit
// code, stdout and stderr (batch "Command failed -:N" lines included) and on `ip -o addr show`.
// Then the project's NetlinkClient runs the same calls against both. Differences are collected
// and reported together, so one slow guest boot shows all of them.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FakeExec } from "../../src/exec/testing/fake.ts";
import type { Exec, ExecResult } from "../../src/exec/types.ts";
import { createNetlinkClient } from "../../src/host/netlink/client.ts";
import { NetlinkError } from "../../src/host/netlink/errors.ts";
import { FakeNetlink } from "../../src/host/netlink/testing/fake.ts";
import type { NetlinkClient } from "../../src/host/netlink/types.ts";
import { createTestNetns, type TestNetns } from "../host/iptables/netns.ts";
import { requireKernelVm } from "../support/kernel-vm.ts";

type Step = { name: string; args: string[]; stdin?: string };
const ip = (name: string, line: string): Step => ({ name, args: line.split(" ") });
const batch = (name: string, lines: string[], force = false): Step => ({
  name,
  args: force ? ["-force", "-batch", "-"] : ["-batch", "-"],
  stdin: lines.length === 0 ? "" : `${lines.join("\n")}\n`,
});

const DEV = "kube-ipvs0";

const STEPS: Step[] = [
  ip("create the dummy device", `link add ${DEV} type dummy`),
  ip("create it again", `link add ${DEV} type dummy`),
  ip("an unknown link type", "link add kube-ipvs1 type nosuch"),
  ip("no addresses yet", "-o addr show"),
  ip("bind IPv4", `addr add 192.0.2.10/32 dev ${DEV}`),
  ip("bind it again", `addr add 192.0.2.10/32 dev ${DEV}`),
  ip("bind IPv6", `addr add 2001:db8::10/128 dev ${DEV}`),
  ip("bind IPv6 again", `addr add 2001:db8::10/128 dev ${DEV}`),
  ip("second IPv6", `addr add 2001:db8::11/128 dev ${DEV}`),
  ip("second IPv4", `addr add 192.0.2.11/32 dev ${DEV}`),
  ip("a lower IPv4 after", `addr add 192.0.2.9/32 dev ${DEV}`),
  ip("list the device", `-o addr show dev ${DEV}`),
  ip("list IPv6 only", `-o -6 addr show dev ${DEV}`),
  ip("list IPv4 everywhere", "-o -4 addr show"),
  ip("unbind a missing IPv4", `addr del 192.0.2.99/32 dev ${DEV}`),
  ip("unbind a missing IPv6", `addr del 2001:db8::99/128 dev ${DEV}`),
  ip("unbind IPv4 without a prefix", `addr del 192.0.2.11 dev ${DEV}`),
  ip("unbind with the wrong prefix", `addr del 192.0.2.10/24 dev ${DEV}`),
  ip("unbind IPv6", `addr del 2001:db8::11/128 dev ${DEV}`),
  ip("bind on a missing device", "addr add 192.0.2.12/32 dev nope"),
  batch("a plain batch stops at the first refused line", [
    `address add 198.51.100.1/32 dev ${DEV}`,
    `address add 198.51.100.1/32 dev ${DEV}`,
    `address add 198.51.100.2/32 dev ${DEV}`,
  ]),
  batch(
    "-force goes on past every refused line",
    [
      `address add 198.51.100.1/32 dev ${DEV}`,
      `address del 198.51.100.9/32 dev ${DEV}`,
      `address add 2001:db8::20/128 dev ${DEV}`,
      `address add 2001:db8::20/128 dev ${DEV}`,
      `address del 2001:db8::99/128 dev ${DEV}`,
      `address add 198.51.100.3/32 dev ${DEV}`,
      "address add 198.51.100.4/32 dev nope",
      `address del 2001:db8::10/128 dev ${DEV}`,
    ],
    true,
  ),
  batch(
    "an unknown command ends even a -force batch",
    [`address add 198.51.100.5/32 dev ${DEV}`, "address frob", `address add 198.51.100.6/32 dev ${DEV}`],
    true,
  ),
  batch(
    "an invalid address ends even a -force batch",
    [
      `address add 198.51.100.7/32 dev ${DEV}`,
      `address add 300.1.1.1/32 dev ${DEV}`,
      `address add 198.51.100.8/32 dev ${DEV}`,
    ],
    true,
  ),
  batch("a duplicate device in a batch", [
    `link add ${DEV} type dummy`,
    `address add 198.51.100.9/32 dev ${DEV}`,
  ]),
  batch(
    "a line without dev fails alone",
    ["address add 198.51.100.20/32", `address add 198.51.100.21/32 dev ${DEV}`],
    true,
  ),
  batch(
    "a line without an address",
    [`address add dev ${DEV}`, `address add 198.51.100.22/32 dev ${DEV}`],
    true,
  ),
  batch(
    "IPv4 deletes without a prefix warn",
    [`address del 198.51.100.21 dev ${DEV}`, `address del 198.51.100.22 dev ${DEV}`],
    true,
  ),
  batch("comments and blank lines", ["# bind", "", `address add 198.51.100.23/32 dev ${DEV} # trailing`]),
  batch("an empty batch", [], true),
  { name: "a batch file that is not there", args: ["-batch", "/nonexistent"], stdin: "" },
  ip("show everything", "-o addr show"),
  ip("show a missing device", "-o addr show dev nope"),
  ip("delete the device", `link del ${DEV}`),
  ip("delete it again", `link del ${DEV}`),
  ip("delete with dev", `link del dev ${DEV}`),
  ip("nothing left", "-o addr show"),
  ip("create it afresh", `link add ${DEV} type dummy`),
  ip("a fresh device has no addresses", "-o addr show"),
  ip("lo cannot be deleted", "link del lo"),
];

const SHOW = ["-o", "addr", "show"];
const outcomeOf = (r: ExecResult) => ({ code: r.code, stdout: r.stdout, stderr: r.stderr });
const runIp = (exec: Exec, step: Step) =>
  exec.run({ cmd: "ip", args: step.args, ...(step.stdin !== undefined ? { stdin: step.stdin } : {}) });

requireKernelVm("netlink-fake-vs-real.vm.ts");

describe("FakeNetlink matches the real ip on dummy devices", () => {
  let ns: TestNetns;
  let addressErrors: "extack" | "errno" = "extack";

  beforeAll(async () => {
    // How this kernel words a duplicate address decides the fake's wording (extended-ack
    // address messages are newer than kernel 6.1). Probed in a namespace of its own, so the
    // compared namespace's interface indexes start fresh.
    const probe = await createTestNetns();
    try {
      await probe.exec.run({ cmd: "ip", args: ["link", "add", "kpts-probe", "type", "dummy"] });
      const add = ["addr", "add", "192.0.2.250/32", "dev", "kpts-probe"];
      await probe.exec.run({ cmd: "ip", args: add });
      const again = await probe.exec.run({ cmd: "ip", args: add });
      addressErrors = again.stderr.includes("RTNETLINK answers") ? "errno" : "extack";
    } finally {
      await probe.remove();
    }
    ns = await createTestNetns();
  });
  afterAll(async () => {
    await ns?.remove();
  });

  test("every step has the same outcome and leaves the same addresses", async () => {
    const fake = new FakeNetlink({ loopback: "down", addressErrors });
    const fakeExec = fake.install(new FakeExec());
    const differences: string[] = [];
    const log: string[] = [];
    for (const step of STEPS) {
      const want = outcomeOf(await runIp(ns.exec, step));
      const got = outcomeOf(await runIp(fakeExec, step));
      log.push(`${step.name}: exit ${want.code} ${want.stderr.trim().replaceAll("\n", " | ")}`);
      if (JSON.stringify(got) !== JSON.stringify(want))
        differences.push(`${step.name}:\n  real ${JSON.stringify(want)}\n  fake ${JSON.stringify(got)}`);
      // A single command that failed changed nothing (each run costs ~0.5 s on the emulated CPU).
      if (want.code !== 0 && step.stdin === undefined) continue;
      const realAddrs = (await ns.exec.run({ cmd: "ip", args: SHOW })).stdout;
      const fakeAddrs = (await fakeExec.run({ cmd: "ip", args: SHOW })).stdout;
      if (realAddrs !== fakeAddrs)
        differences.push(
          `${step.name}: addresses differ\n  real ${JSON.stringify(realAddrs)}\n  fake ${JSON.stringify(fakeAddrs)}`,
        );
    }
    console.log(`ip (dummy) fake vs real, addressErrors=${addressErrors}:\n  ${log.join("\n  ")}`);
    expect(differences).toEqual([]);
  });

  test("the client sees both the same way", async () => {
    // A namespace of its own: interface indexes start fresh on both sides.
    const own = await createTestNetns();
    try {
      const fake = new FakeNetlink({ loopback: "down", addressErrors });
      const real = createNetlinkClient({ exec: own.exec });
      const mine = createNetlinkClient({ exec: fake.install(new FakeExec()) });
      const outcome = async (p: Promise<unknown>) => {
        try {
          return { value: (await p) ?? null };
        } catch (err) {
          if (!(err instanceof NetlinkError)) throw err;
          return { exitCode: err.exitCode, stderr: err.stderr, failures: err.failures, line: err.line };
        }
      };
      const steps: [string, (c: NetlinkClient) => Promise<unknown>][] = [
        ["create the dummy device", (c) => c.ensureDummyDevice(DEV)],
        ["it exists", (c) => c.ensureDummyDevice(DEV)],
        ["bind v4 and v6", (c) => c.bindAddresses(DEV, ["192.0.2.30", "2001:db8::30", "192.0.2.31"], [])],
        ["list", (c) => c.listAddresses(DEV)],
        [
          "rebind and unbind missing",
          (c) => c.bindAddresses(DEV, ["192.0.2.30"], ["192.0.2.99", "2001:db8::99"]),
        ],
        ["unbind and bind", (c) => c.bindAddresses(DEV, ["2001:db8::31"], ["192.0.2.31", "2001:db8::30"])],
        ["list after", (c) => c.listAddresses(DEV)],
        ["bind on a missing device", (c) => c.bindAddresses("nope", ["192.0.2.32"], [])],
        ["list a missing device", (c) => c.listAddresses("nope")],
        ["all addresses", (c) => c.allAddresses()],
        ["local addresses but the dummy", (c) => c.localAddresses(DEV)],
        ["local addresses", (c) => c.localAddresses()],
        ["delete", (c) => c.deleteDevice(DEV)],
        ["delete again", (c) => c.deleteDevice(DEV)],
        ["all addresses after", (c) => c.allAddresses()],
      ];
      const differences: string[] = [];
      for (const [name, step] of steps) {
        const want = await outcome(step(real));
        const got = await outcome(step(mine));
        if (JSON.stringify(got) !== JSON.stringify(want))
          differences.push(`${name}:\n  real ${JSON.stringify(want)}\n  fake ${JSON.stringify(got)}`);
      }
      expect(differences).toEqual([]);
    } finally {
      await own.remove();
    }
  });
});
