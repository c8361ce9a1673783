import { describe, expect, test } from "bun:test";
import { FakeExec, fail } from "../../../src/exec/testing/fake.ts";
import { conntrackArgs, createConntrackClient } from "../../../src/host/conntrack/client.ts";
import { ConntrackError } from "../../../src/host/conntrack/errors.ts";
import { FakeConntrack, flow } from "../../../src/host/conntrack/testing/fake.ts";
import { createTestNetns } from "../iptables/netns.ts";

describe("command forms (upstream pkg/proxy/conntrack)", () => {
  test("IPv4 and IPv6", () => {
    expect(conntrackArgs.forIP("10.96.0.10", "UDP")).toEqual(["-D", "--orig-dst", "10.96.0.10", "-p", "udp"]);
    expect(conntrackArgs.forIP("fd00::a", "SCTP")).toEqual([
      "-D",
      "--orig-dst",
      "fd00::a",
      "-p",
      "sctp",
      "-f",
      "ipv6",
    ]);
    expect(conntrackArgs.forPort(30053, false, "UDP")).toEqual(["-D", "-p", "udp", "--dport", "30053"]);
    expect(conntrackArgs.forPort(30053, true, "UDP")).toEqual([
      "-D",
      "-p",
      "udp",
      "--dport",
      "30053",
      "-f",
      "ipv6",
    ]);
    expect(conntrackArgs.forNAT("10.96.0.10", "10.244.1.5", "UDP")).toEqual([
      ...["-D", "--orig-dst", "10.96.0.10", "--dst-nat", "10.244.1.5", "-p", "udp"],
    ]);
    expect(conntrackArgs.forPortNAT("10.244.1.5", 30053, "UDP")).toEqual([
      ...["-D", "-p", "udp", "--dport", "30053", "--dst-nat", "10.244.1.5"],
    ]);
    expect(conntrackArgs.forPortNAT("fd00::5", 30053, "UDP").slice(-2)).toEqual(["-f", "ipv6"]);
  });
});

function world() {
  const fake = new FakeConntrack();
  fake.add(
    // A client talking to the DNS Service IP, DNATed to endpoint 10.244.1.5.
    flow(
      "udp",
      { src: "10.0.0.7", dst: "10.96.0.10", sport: 40000, dport: 53 },
      { ip: "10.244.1.5", port: 53 },
    ),
    // The same client to another endpoint of the same Service.
    flow(
      "udp",
      { src: "10.0.0.7", dst: "10.96.0.10", sport: 40001, dport: 53 },
      { ip: "10.244.2.9", port: 53 },
    ),
    // TCP to the same Service IP: not ours to delete when UDP is asked.
    flow(
      "tcp",
      { src: "10.0.0.7", dst: "10.96.0.10", sport: 40002, dport: 53 },
      { ip: "10.244.1.5", port: 53 },
    ),
    // A NodePort flow, DNATed to 10.244.1.5.
    flow(
      "udp",
      { src: "192.0.2.1", dst: "192.0.2.10", sport: 5000, dport: 30053 },
      { ip: "10.244.1.5", port: 53 },
    ),
    // IPv6 to the same NodePort.
    flow(
      "udp",
      { src: "fd00::1", dst: "fd00::10", sport: 5000, dport: 30053 },
      { ip: "fd00:10:244::5", port: 53 },
    ),
  );
  const client = createConntrackClient({ exec: fake.install() });
  return { fake, client };
}

describe("conntrack client against FakeConntrack", () => {
  test("clearEntriesForIP removes that protocol's flows to the IP", async () => {
    const { fake, client } = world();
    expect(await client.clearEntriesForIP("10.96.0.10", "UDP")).toBe(2);
    expect(fake.flows.map((f) => `${f.protocol} ${f.orig.dst}:${f.orig.dport}`)).toEqual([
      "tcp 10.96.0.10:53",
      "udp 192.0.2.10:30053",
      "udp fd00::10:30053",
    ]);
  });

  test("nothing to delete (exit 1, '0 flow entries') is success", async () => {
    const { fake, client } = world();
    expect(await client.clearEntriesForIP("10.96.0.99", "UDP")).toBe(0);
    expect(fake.flows).toHaveLength(5);
  });

  test("clearEntriesForNAT removes only flows DNATed to the gone endpoint", async () => {
    const { fake, client } = world();
    expect(await client.clearEntriesForNAT("10.96.0.10", "10.244.1.5", "UDP")).toBe(1);
    expect(
      fake.flows.filter((f) => f.orig.dst === "10.96.0.10").map((f) => `${f.protocol} ${f.reply.src}`),
    ).toEqual(["udp 10.244.2.9", "tcp 10.244.1.5"]);
  });

  test("clearEntriesForPort is per family", async () => {
    const { fake, client } = world();
    expect(await client.clearEntriesForPort(30053, true, "UDP")).toBe(1);
    expect(fake.flows.some((f) => f.orig.dst === "fd00::10")).toBe(false);
    expect(fake.flows.some((f) => f.orig.dst === "192.0.2.10")).toBe(true);
  });

  test("clearEntriesForPortNAT removes the NodePort flow to the endpoint", async () => {
    const { fake, client } = world();
    expect(await client.clearEntriesForPortNAT("10.244.1.5", 30053, "UDP")).toBe(1);
    expect(fake.flows.some((f) => f.orig.dport === 30053 && f.orig.dst === "192.0.2.10")).toBe(false);
    expect(fake.flows).toHaveLength(4);
  });

  test("bad ports are refused before running anything", async () => {
    const exec = new FakeConntrack().install();
    const client = createConntrackClient({ exec });
    await expect(client.clearEntriesForPort(0, false, "UDP")).rejects.toThrow(RangeError);
    await expect(client.clearEntriesForPortNAT("10.0.0.1", 70000, "UDP")).rejects.toThrow(RangeError);
    expect(exec.calls).toHaveLength(0);
  });

  test("real failures are ConntrackErrors", async () => {
    const missing = createConntrackClient({ exec: new FakeExec() });
    await expect(missing.clearEntriesForIP("10.96.0.10", "UDP")).rejects.toBeInstanceOf(ConntrackError);
    const denied = createConntrackClient({
      exec: new FakeExec({
        conntrack: () =>
          fail(1, "conntrack v1.4.7 (conntrack-tools): Operation failed: Operation not permitted\n"),
      }),
    });
    const err = await denied.clearEntriesForIP("10.96.0.10", "UDP").catch((e) => e);
    expect(err).toBeInstanceOf(ConntrackError);
    expect(err.exitCode).toBe(1);
  });
});

describe("conntrack client against the real conntrack in a netns", () => {
  test("deletes a matching entry and treats 'nothing to delete' as success", async () => {
    const ns = await createTestNetns();
    try {
      const made = await ns.exec.run({
        cmd: "conntrack",
        args: [
          "-I",
          "-s",
          "10.0.0.7",
          "-d",
          "10.96.0.10",
          "-p",
          "udp",
          "--sport",
          "40000",
          "--dport",
          "53",
          "--timeout",
          "100",
        ],
      });
      expect(made.code).toBe(0);
      const client = createConntrackClient({ exec: ns.exec });
      expect(await client.clearEntriesForIP("10.96.0.10", "UDP")).toBe(1);
      expect(await client.clearEntriesForIP("10.96.0.10", "UDP")).toBe(0);
      expect(await client.clearEntriesForPort(30053, true, "UDP")).toBe(0);
      expect(await client.clearEntriesForNAT("10.96.0.10", "10.244.1.5", "UDP")).toBe(0);
      expect(await client.clearEntriesForPortNAT("10.244.1.5", 30053, "UDP")).toBe(0);
    } finally {
      await ns.remove();
    }
  }, 60_000);
});
