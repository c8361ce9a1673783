// The conntrack client: the listing and filtered deletes the reconciler runs, their command
// lines, the stateful fake they drive in unit tests, and the same steps against the real
// conntrack in a netns, so the fake cannot drift from the tool.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { FakeExec, fail } from "../../../src/exec/testing/fake.ts";
import type { Exec } from "../../../src/exec/types.ts";
import { conntrackArgs, createConntrackClient, parseFlows } from "../../../src/host/conntrack/client.ts";
import { ConntrackError } from "../../../src/host/conntrack/errors.ts";
import { FakeConntrack, flow } from "../../../src/host/conntrack/testing/fake.ts";
import { createTestNetns } from "../iptables/netns.ts";

describe("command forms", () => {
  test("list: one family and protocol", () => {
    expect(conntrackArgs.list("IPv4", "UDP")).toEqual(["-L", "-f", "ipv4", "-p", "udp"]);
    expect(conntrackArgs.list("IPv6", "UDP")).toEqual(["-L", "-f", "ipv6", "-p", "udp"]);
  });

  test("delete: frontend or NodePort, and the reply's source", () => {
    expect(
      conntrackArgs.delete({
        family: "IPv4",
        protocol: "UDP",
        origDst: "198.51.100.10",
        origDport: 53,
        replySrc: "203.0.113.5",
        replySport: 5353,
      }),
    ).toEqual([
      "-D",
      "-f",
      "ipv4",
      "-p",
      "udp",
      "--orig-dst",
      "198.51.100.10",
      "--orig-port-dst",
      "53",
      "--reply-src",
      "203.0.113.5",
      "--reply-port-src",
      "5353",
    ]);
    expect(
      conntrackArgs.delete({
        family: "IPv6",
        protocol: "UDP",
        origDport: 30053,
        replySrc: "2001:db8::5",
        replySport: 53,
      }),
    ).toEqual([
      "-D",
      "-f",
      "ipv6",
      "-p",
      "udp",
      "--orig-port-dst",
      "30053",
      "--reply-src",
      "2001:db8::5",
      "--reply-port-src",
      "53",
    ]);
  });

  test("nothing but a parsed address and port reaches argv", () => {
    const base = {
      family: "IPv4" as const,
      protocol: "UDP" as const,
      origDport: 53,
      replySrc: "192.0.2.5",
      replySport: 53,
    };
    expect(() => conntrackArgs.delete({ ...base, origDst: "192.0.2.1 --flush" })).toThrow(RangeError);
    expect(() => conntrackArgs.delete({ ...base, replySrc: "2001:db8::1" })).toThrow(RangeError);
    expect(() => conntrackArgs.delete({ ...base, origDport: 0 })).toThrow(RangeError);
    expect(() => conntrackArgs.delete({ ...base, replySport: 70000 })).toThrow(RangeError);
  });
});

describe("parseFlows", () => {
  test("original destination and the reply's source of each flow; other lines skipped", () => {
    const text =
      "udp      17 29 src=192.0.2.1 dst=198.51.100.10 sport=1234 dport=53 [UNREPLIED] src=203.0.113.5 dst=192.0.2.1 sport=5353 dport=1234 mark=0 use=1\n" +
      "conntrack v1.4.7 (conntrack-tools): 1 flow entries have been shown.\n" +
      "udp      17 29 src=2001:db8::1 dst=2001:db8::a sport=1 dport=53 src=2001:db8::5 dst=2001:db8::1 sport=53 dport=1 [ASSURED] mark=0 use=1";
    expect(parseFlows(text)).toEqual([
      { origDst: "198.51.100.10", origDport: 53, replySrc: "203.0.113.5", replySport: 5353 },
      { origDst: "2001:db8::a", origDport: 53, replySrc: "2001:db8::5", replySport: 53 },
    ]);
  });

  test("property: never throws, whatever the text", () => {
    fc.assert(fc.property(fc.string(), (t) => void parseFlows(t)));
  });
});

function world() {
  const fake = new FakeConntrack();
  fake.add(
    flow(
      "udp",
      { src: "192.0.2.7", dst: "198.51.100.10", sport: 40000, dport: 53 },
      { ip: "203.0.113.5", port: 53 },
    ),
    flow(
      "udp",
      { src: "192.0.2.7", dst: "198.51.100.10", sport: 40001, dport: 53 },
      { ip: "203.0.113.9", port: 53 },
    ),
    flow(
      "tcp",
      { src: "192.0.2.7", dst: "198.51.100.10", sport: 40002, dport: 53 },
      { ip: "203.0.113.5", port: 53 },
    ),
    flow(
      "udp",
      { src: "192.0.2.1", dst: "192.0.2.10", sport: 5000, dport: 30053 },
      { ip: "203.0.113.5", port: 53 },
    ),
  );
  return { fake, client: createConntrackClient({ exec: fake.install() }) };
}

describe("conntrack client against FakeConntrack", () => {
  test("listFlows: the family's flows of that protocol", async () => {
    const { client } = world();
    expect(
      (await client.listFlows("IPv4", "UDP")).map((f) => `${f.origDst}:${f.origDport}>${f.replySrc}`),
    ).toEqual([
      "198.51.100.10:53>203.0.113.5",
      "198.51.100.10:53>203.0.113.9",
      "192.0.2.10:30053>203.0.113.5",
    ]);
    expect(await client.listFlows("IPv6", "UDP")).toEqual([]);
  });

  test("deleteFlows: exactly the flows named; a filter matching nothing is 0, not an error", async () => {
    const { fake, client } = world();
    const f = { family: "IPv4" as const, protocol: "UDP" as const, replySrc: "203.0.113.5", replySport: 53 };
    expect(await client.deleteFlows([{ ...f, origDst: "198.51.100.10", origDport: 53 }])).toBe(1);
    expect(await client.deleteFlows([{ ...f, origDport: 30053 }])).toBe(1);
    expect(await client.deleteFlows([{ ...f, origDport: 30053 }])).toBe(0);
    expect(await client.deleteFlows([])).toBe(0);
    expect(fake.flows.map((x) => `${x.protocol} ${x.reply.src}`)).toEqual([
      "udp 203.0.113.9",
      "tcp 203.0.113.5",
    ]);
  });

  test("real failures are ConntrackErrors", async () => {
    const missing = createConntrackClient({ exec: new FakeExec() });
    await expect(missing.listFlows("IPv4", "UDP")).rejects.toBeInstanceOf(ConntrackError);
    const denied = createConntrackClient({
      exec: new FakeExec({
        conntrack: () =>
          fail(1, "conntrack v1.4.7 (conntrack-tools): Operation failed: Operation not permitted\n"),
      }),
    });
    const err = await denied
      .deleteFlows([
        { family: "IPv4", protocol: "UDP", origDport: 53, replySrc: "192.0.2.5", replySport: 53 },
      ])
      .catch((e) => e);
    expect(err).toBeInstanceOf(ConntrackError);
    expect(err.exitCode).toBe(1);
  });
});

/** The same flows, made in a table: the fake's, or the real kernel's through `conntrack -I`. */
async function insert(exec: Exec, fake?: FakeConntrack): Promise<void> {
  const made = [
    ["192.0.2.7", "198.51.100.10", "40000", "53", "203.0.113.5", "53"],
    ["192.0.2.7", "198.51.100.10", "40001", "53", "203.0.113.9", "53"],
    ["192.0.2.1", "192.0.2.10", "5000", "30053", "203.0.113.5", "53"],
  ];
  for (const [s, d, sp, dp, rs, rsp] of made) {
    if (fake) {
      fake.add(
        flow(
          "udp",
          { src: s!, dst: d!, sport: Number(sp), dport: Number(dp) },
          { ip: rs!, port: Number(rsp) },
        ),
      );
      continue;
    }
    const r = await exec.run({
      cmd: "conntrack",
      args: [
        "-I",
        "-p",
        "udp",
        "-s",
        s!,
        "-d",
        d!,
        "--sport",
        sp!,
        "--dport",
        dp!,
        "--reply-src",
        rs!,
        "--reply-dst",
        s!,
        "--reply-port-src",
        rsp!,
        "--reply-port-dst",
        sp!,
        "--timeout",
        "100",
      ],
    });
    expect(r.code).toBe(0);
  }
}

/** The reconciler's steps; what each leaves must be the same on the fake and the kernel. */
async function steps(exec: Exec): Promise<unknown[]> {
  const client = createConntrackClient({ exec });
  const seen = async () =>
    (await client.listFlows("IPv4", "UDP"))
      .map((f) => `${f.origDst}:${f.origDport}>${f.replySrc}:${f.replySport}`)
      .sort();
  const f = { family: "IPv4" as const, protocol: "UDP" as const, replySrc: "203.0.113.5", replySport: 53 };
  return [
    await seen(),
    await client.deleteFlows([{ ...f, origDst: "198.51.100.10", origDport: 53 }]),
    await seen(),
    await client.deleteFlows([
      { ...f, origDport: 30053 },
      { ...f, origDport: 30053 },
    ]),
    await client.deleteFlows([{ ...f, origDport: 30053 }]),
    await seen(),
    // Endpoint-wide: every flow answered by 203.0.113.9:53, whatever it was sent to.
    await client.deleteFlows([{ family: "IPv4", protocol: "UDP", replySrc: "203.0.113.9", replySport: 53 }]),
    await seen(),
  ];
}

describe("FakeConntrack against the real conntrack in a netns", () => {
  test("the same listing and deletes leave the same tables", async () => {
    const ns = await createTestNetns();
    try {
      await insert(ns.exec);
      const real = await steps(ns.exec);
      const fake = new FakeConntrack();
      await insert(new FakeExec(), fake);
      expect(await steps(fake.install())).toEqual(real);
      expect(real[5]).toEqual(["198.51.100.10:53>203.0.113.9:53"]);
      expect(real[6]).toBe(1);
      expect(real[7]).toEqual([]);
    } finally {
      await ns.remove();
    }
  }, 60_000);
});
