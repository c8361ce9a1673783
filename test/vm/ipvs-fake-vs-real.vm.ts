// Runs in the guest (see test/vm/kernel-vm.test.ts): FakeIpvs against the real ipvsadm on a
// kernel with IPVS. One sequence of ipvsadm invocations goes to both — the real one in a fresh
// network namespace (IPVS state is per namespace) — and after every step they must agree on exit
// code, stdout and stderr, and on the table (`-S -n`, `-L -n --exact`, `-L --timeout`). Then the
// project's IpvsClient runs the same calls against both and must see them the same way.
//
// Every difference is collected (with the fake re-synced from the real table, so one difference
// does not cascade) and reported at the end, so one slow guest boot shows all of them.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createRealExec } from "../../src/exec/runner.ts";
import { FakeExec } from "../../src/exec/testing/fake.ts";
import type { ExecResult } from "../../src/exec/types.ts";
import { createIpvsClient } from "../../src/host/ipvs/client.ts";
import { IpvsError } from "../../src/host/ipvs/errors.ts";
import { FakeIpvs, KERNEL_SCHEDULERS } from "../../src/host/ipvs/testing/fake.ts";
import type { IpvsChange, IpvsClient } from "../../src/host/ipvs/types.ts";
import { createTestNetns, type TestNetns } from "../host/iptables/netns.ts";
import { requireKernelVm } from "../support/kernel-vm.ts";
import { describeHostileRestore } from "./ipvs-hostile-restore-cases.ts";

type Step = { name: string; args: string[]; stdin?: string };

const words = (line: string) => line.split(" ").filter((w) => w !== "");
const run = (name: string, line: string): Step => ({ name, args: words(line) });
const restore = (name: string, lines: string[], finalNewline = true): Step => ({
  name,
  args: ["--restore"],
  stdin: lines.join("\n") + (finalNewline && lines.length > 0 ? "\n" : ""),
});

const SVC = "-t 192.0.2.1:80";
const V6SVC = "-t [2001:db8::1]:443";

// Every scheduler the fake knows, one service each (ports 1001...), in one batch: a scheduler
// this kernel lacks prints its refusal in line, and the unknown one last decides the exit.
const schedulerBatch = (schedulers: readonly string[]) =>
  restore(
    "every scheduler",
    schedulers.map((s, i) => `-A -t 192.0.2.12:${1001 + i} -s ${s}`),
  );

const STEPS: Step[] = [
  // ---- virtual servers ----
  run("add TCP rr", `-A ${SVC} -s rr`),
  run("duplicate add", `-A ${SVC} -s rr`),
  run("add UDP, default scheduler", "-A -u 192.0.2.1:53"),
  run("add SCTP", "-A --sctp-service 192.0.2.2:3868 -s wrr"),
  run("add IPv6 sh with flags", `-A ${V6SVC} -s sh -b sh-fallback,sh-port`),
  run("add IPv6 UDP mh", "-A -u [2001:db8::1]:53 -s mh -b mh-port"),
  run("IPv6 without brackets and port", "-A -t 2001:db8::5 -p 60"),
  run("port 0 needs persistence", "-A -t 192.0.2.3:0 -s rr -p 600"),
  run("port 0 without persistence", "-A -t 192.0.2.3:0 -s rr"),
  run("persistence without a value", "-A -t 192.0.2.4:80 -s lc -p"),
  run("persistence with a mask", "-A -t 192.0.2.5:80 -s rr -p 100 -M 255.255.255.0"),
  run("a mask as a bare number", "-A -t 192.0.2.6:80 -s rr -p 60 -M 24"),
  run("the default mask", "-A -t 192.0.2.7:80 -p 60 -M 255.255.255.255"),
  run("a mask that is no address", "-A -t 192.0.2.8:80 -p 60 -M bogus"),
  run("IPv6 prefix mask", "-A -t [2001:db8::2]:80 -p 60 -M 64"),
  run("IPv6 full-length mask", "-A -t [2001:db8::3]:80 -p 60 -M 128"),
  run("IPv6 dotted mask", "-A -t [2001:db8::4]:80 -p 60 -M 255.255.255.0"),
  run("a mask without persistence", "-A -t 192.0.2.9:80 -M 255.255.0.0"),
  run("one-packet scheduling on UDP", "-A -u 192.0.2.8:53 -s rr -o"),
  run("one-packet scheduling on TCP", "-A -t 192.0.2.10:81 -o"),
  run("unknown scheduler", "-A -t 192.0.2.10:80 -s nosuch"),
  run("generic scheduler flags", "-A -t 192.0.2.11:80 -s rr -b flag-1,flag-2"),
  run("scheduler flag of another scheduler", "-A -t 192.0.2.11:81 -s rr -b sh-port"),
  run("persistence too long", "-A -t 192.0.2.11:82 -p 99999999"),
  run("not an address", "-A -t 999.0.2.1:80"),
  schedulerBatch([...KERNEL_SCHEDULERS, "nosuch"]),
  // ---- edits ----
  run("edit scheduler and persistence", `-E ${SVC} -s wlc -p 30`),
  run("edit a missing service", "-E -t 198.51.100.1:80 -s rr"),
  run("edit back to defaults", "-E -u 192.0.2.1:53"),
  run("edit drops the mask it was not given", "-E -t 192.0.2.9:80 -p"),
  run("edit to an unknown scheduler", `-E ${SVC} -s nosuch`),
  // ---- real servers ----
  run("add NAT real", `-a ${SVC} -r 203.0.113.9:8080 -m -w 5`),
  run("weight above 65535", `-a ${SVC} -r 203.0.113.1:8080 -m -w 70000`),
  run("the largest weight", `-a ${SVC} -r 203.0.113.1:80 -m -w 2147483647`),
  run("weight past int", `-a ${SVC} -r 203.0.113.1:81 -m -w 2147483648`),
  run("negative weight", `-a ${SVC} -r 203.0.113.1:82 -m -w -1`),
  run("direct routing takes the service port", `-a ${SVC} -r 203.0.113.3 -g -w 2`),
  run("direct routing ignores a given port", `-a ${SVC} -r 203.0.113.4:9999 -g`),
  run("tunnelling ignores a given port", `-a ${SVC} -r 203.0.113.5:9999 -i`),
  run("default weight", `-a ${SVC} -r 203.0.113.2:8080 -m`),
  run("duplicate real", `-a ${SVC} -r 203.0.113.2:8080 -m`),
  run("thresholds", `-a ${SVC} -r 203.0.113.10:7 -m -x 10 -y 5`),
  run("IPv6 tunnel under an IPv4 service", `-a ${SVC} -r [2001:db8::5]:80 -i`),
  run("IPv6 NAT under an IPv4 service", `-a ${SVC} -r [2001:db8::6]:80 -m`),
  run("a multicast real", `-a ${SVC} -r 233.252.0.1:80 -m`),
  run("real of a missing service", "-a -t 198.51.100.1:80 -r 203.0.113.1:80 -m"),
  run("IPv6 real", `-a ${V6SVC} -r [2001:db8::10]:8443 -m -w 3`),
  run("second IPv6 real", `-a ${V6SVC} -r [2001:db8::a]:8443 -m`),
  run("IPv6 multicast real", `-a ${V6SVC} -r [ff0e::db8:1]:8443 -m`),
  run("UDP real", "-a -u 192.0.2.1:53 -r 203.0.113.20:53 -m"),
  run("SCTP real", "-a --sctp-service 192.0.2.2:3868 -r 203.0.113.21:3868 -m -w 2"),
  run("edit to weight 0", `-e ${SVC} -r 203.0.113.9:8080 -m -w 0`),
  run("edit with -g looks for the service port", `-e ${SVC} -r 203.0.113.9:8080 -g -w 1`),
  run("edit a missing real", `-e ${SVC} -r 203.0.113.99:8080 -m -w 0`),
  run("edit resets thresholds", `-e ${SVC} -r 203.0.113.10:7 -m -x 20`),
  run("delete a real", `-d ${SVC} -r 203.0.113.2:8080`),
  run("delete it again", `-d ${SVC} -r 203.0.113.2:8080`),
  run("delete without a port uses the service port", `-d ${SVC} -r 203.0.113.3`),
  run("delete a real of a missing service", "-d -t 198.51.100.1:80 -r 203.0.113.3"),
  // ---- listings ----
  run("-Ln", "-Ln"),
  run("-L -n --exact", "-L -n --exact"),
  run("-l -n", "-l -n"),
  run("-S -n", "-S -n"),
  run("-Sn", "-Sn"),
  run("--stats", "-Ln --stats"),
  run("--rate", "-Ln --rate"),
  run("--stats --exact", "-Ln --stats --exact"),
  run("--stats and --rate", "-L -n --stats --rate"),
  run("--thresholds", "-Ln --thresholds"),
  run("--persistent-conn", "-Ln --persistent-conn"),
  run("--sort", "-Ln --sort"),
  run("one service", `-Ln ${SVC}`),
  // One service: --nosort then shows the kernel's own order of real servers (newest first).
  run("one service unsorted", `-Ln --nosort ${SVC}`),
  run("one service --stats", `-Ln --stats ${SVC}`),
  run("one IPv6 service", "-L -n -t [2001:db8::2]:80"),
  run("a missing service", "-Ln --exact -t 198.51.100.77:80"),
  run("another protocol's service", "-Ln -u 192.0.2.1:80"),
  run("connections", "-Lnc"),
  run("daemon", "-L --daemon"),
  run("listing styles conflict with --timeout", "-L --timeout --stats"),
  run("a service and connections conflict", `-L ${SVC} -c`),
  run("save takes no service", `-S -n ${SVC}`),
  // ---- timeouts ----
  run("timeouts", "-L --timeout"),
  run("set timeouts", "--set 100 20 30"),
  run("timeouts after set", "-Ln --timeout"),
  run("0 keeps a timeout", "--set 0 50 0"),
  run("timeouts after a partial set", "-L --timeout"),
  run("set needs three values", "--set 1 2"),
  run("set takes three values", "--set 100 20 30 40"),
  run("timeout past 31 days", "--set 2678401 1 1"),
  run("timeout that is no number", "--set x 1 1"),
  run("negative timeout", "--set -1 1 1"),
  // ---- zero ----
  run("zero all", "-Z"),
  run("zero one", `-Z ${SVC}`),
  run("zero a missing service", "-Z -t 198.51.100.1:80"),
  // ---- deletes ----
  run("delete a missing service", "-D -t 198.51.100.1:80"),
  run("delete a service", "-D -t 192.0.2.4:80"),
  run("delete a service with reals", "-D -u 192.0.2.1:53"),
  // ---- command lines ipvsadm refuses ----
  run("no command", "-X"),
  run("add without a service", "-A"),
  run("a stray word", `-A ${SVC} -s rr extra`),
  run("an option the command does not take", `-A ${SVC} -r 203.0.113.1`),
  run("a second command", `-A ${SVC} -A`),
  run("a second command, long", `-A ${SVC} --add-service`),
  run("a second command, bundled", `-A ${SVC} -Ln`),
  run("a command after a list", "-Ln -A"),
  run("an option twice", `-A ${SVC} -s rr -s wlc`),
  run("two services", `-A ${SVC} -t 192.0.2.2:80`),
  run("unknown long option first", "--frob"),
  run("unknown long option later", `-A ${SVC} --frob`),
  run("options before the command", "-n -L"),
  run("clear takes nothing", "-C extra"),
  run("version", "-v"),
  // ---- --restore ----
  restore("a batch", [
    "-A -t 192.0.2.20:80 -s rr",
    "-a -t 192.0.2.20:80 -r 203.0.113.5:80 -m",
    "-a -t 192.0.2.20:80 -r 203.0.113.6:80 -m -w 3",
    "-A -u [2001:db8::20]:53 -s rr",
    "-a -u [2001:db8::20]:53 -r [2001:db8::21]:53 -m",
  ]),
  restore("kernel refusals in the middle go on; the last line decides", [
    "-A -t 192.0.2.21:80 -s rr",
    "-A -t 192.0.2.20:80 -s rr",
    "-a -t 192.0.2.21:80 -r 203.0.113.5:80 -m",
    "-a -t 192.0.2.21:80 -r 203.0.113.5:80 -m",
    "-D -t 198.51.100.9:80",
    "-A -t 192.0.2.22:80 -s rr",
  ]),
  restore("a kernel refusal on the last line", [
    "-A -t 192.0.2.23:80 -s rr",
    "-e -t 192.0.2.23:80 -r 203.0.113.5:80 -m -w 0",
  ]),
  restore("an unknown option in the middle goes on", [
    "-A -t 192.0.2.24:80 -s rr",
    "-A -t 192.0.2.25:80 -s rr --frob",
    "-A -t 192.0.2.26:80 -s rr",
  ]),
  restore("an unknown option on the last line", ["-A -t 192.0.2.27:80 -s rr", "-A -t 192.0.2.28:80 --frob"]),
  restore("no command stops the batch", ["-A -t 192.0.2.29:80 -s rr", "-X foo", "-A -t 192.0.2.30:80 -s rr"]),
  restore("a bare word stops the batch", ["-A -t 192.0.2.31:80 -s rr", "bogus", "-A -t 192.0.2.32:80"]),
  restore("a comment is not a comment", ["# comment", "-A -t 192.0.2.33:80 -s rr"]),
  restore("a nested restore stops the batch", ["-A -t 192.0.2.34:80 -s rr", "-R", "-A -t 192.0.2.35:80"]),
  restore("a bad weight stops the batch", [
    "-A -t 192.0.2.36:80 -s rr",
    "-a -t 192.0.2.36:80 -r 203.0.113.5:80 -m -w 99999",
    "-a -t 192.0.2.36:80 -r 203.0.113.6:80 -m -w x",
    "-A -t 192.0.2.37:80 -s rr",
  ]),
  restore("a second command stops the batch", [
    "-A -t 192.0.2.38:80 -s rr",
    "-A -t 192.0.2.38:80 -s rr -A",
    "-A -t 192.0.2.39:80 -s rr",
  ]),
  restore("a failed listing stops the batch with exit 1", [
    "-A -t 192.0.2.40:80 -s rr",
    "-L -n -t 198.51.100.99:80",
    "-A -t 192.0.2.41:80 -s rr",
  ]),
  restore("listings and --set inside a batch", [
    "ipvsadm -A -t 192.0.2.42:80 -s rr",
    "",
    "   ",
    "-L -n -t 192.0.2.42:80",
    "--set 900 120 300",
    "-S -n",
  ]),
  restore("version stops the batch with exit 0", ["-A -t 192.0.2.43:80 -s rr", "-v", "-A -t 192.0.2.44:80"]),
  restore(
    "tabs, CR LF and no final newline",
    ["-A -t 192.0.2.45:80\t-s\trr\r", "-A -t 192.0.2.46:80 -s rr"],
    false,
  ),
  restore("persistence 0 is refused", ["-A -t 192.0.2.47:80 -s rr -p 0", "-A -t 192.0.2.48:80 -s rr"]),
  restore("an empty batch", []),
  restore("blank lines only", ["", ""]),
  restore("clear in the middle", ["-A -t 192.0.2.49:80 -s rr", "-C", "-A -t 192.0.2.50:80 -s rr"]),
  { name: "restore takes no options", args: ["-R", "-n"], stdin: "-A -t 192.0.2.51:80\n" },
  { name: "restore takes no words", args: ["-R", "extra"], stdin: "-A -t 192.0.2.51:80\n" },
  run("the table after the batches", "-L -n --exact"),
  run("timeouts after the batches", "-L --timeout"),
  run("clear", "-C"),
  run("an empty table", "-Ln"),
  run("an empty save", "-S -n"),
];

// The table after a step. Every program started costs about half a second on the emulated
// CPU, so this is one `-S -n` (listings and timeouts have steps of their own), taken only when
// the step could have changed something: a single command that failed changed nothing on the
// real side, and a fake that changed something anyway shows at the next check.
const SAVE = ["-S", "-n"];
const mayChange = (step: Step, exit: number) => exit === 0 || step.stdin !== undefined;

const outcomeOf = (r: ExecResult) => ({ code: r.code, stdout: r.stdout, stderr: r.stderr });

requireKernelVm("ipvs-fake-vs-real.vm.ts");

describe("FakeIpvs matches the real ipvsadm in a netns", () => {
  let ns: TestNetns;
  let fake: FakeIpvs;
  let fakeExec: FakeExec;
  const schedulers: string[] = [];

  beforeAll(async () => {
    const host = createRealExec();
    const mod = await host.run({ cmd: "modprobe", args: ["ip_vs"], timeoutMs: 60_000 });
    if (mod.code !== 0) throw new Error(`modprobe ip_vs: ${mod.stderr}`);
    // Which scheduler modules this kernel has decides what the fake may load (twos is 6.2+).
    for (const s of KERNEL_SCHEDULERS) {
      const info = await host.run({ cmd: "modinfo", args: ["-n", `ip_vs_${s}`], timeoutMs: 60_000 });
      if (info.code === 0) schedulers.push(s);
    }
    ns = await createTestNetns();
    // A fresh namespace has no address at all, and then the kernel refuses every IPv4 real
    // server (inet_addr_type() finds no local table); a node always has lo up.
    const lo = await ns.exec.run({ cmd: "ip", args: ["link", "set", "lo", "up"] });
    if (lo.code !== 0) throw new Error(`ip link set lo up: ${lo.stderr}`);
    fake = new FakeIpvs({ schedulers });
    fakeExec = fake.install(new FakeExec());
  });
  afterAll(async () => {
    await ns?.remove();
  });

  test("every step has the same outcome and leaves the same table", async () => {
    const steps = STEPS;
    const differences: string[] = [];
    const log: string[] = [];
    for (const step of steps) {
      const req = {
        cmd: "ipvsadm",
        args: step.args,
        ...(step.stdin !== undefined ? { stdin: step.stdin } : {}),
      };
      const want = outcomeOf(await ns.exec.run(req));
      const got = outcomeOf(await fakeExec.run(req));
      log.push(`${step.name}: exit ${want.code} ${want.stderr.trim().replaceAll("\n", " | ")}`);
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        differences.push(
          `${step.name} (${step.args.join(" ")}):\n  real ${JSON.stringify(want)}\n  fake ${JSON.stringify(got)}`,
        );
      }
      if (!mayChange(step, want.code)) continue;
      const real = (await ns.exec.run({ cmd: "ipvsadm", args: SAVE })).stdout;
      const mine = (await fakeExec.run({ cmd: "ipvsadm", args: SAVE })).stdout;
      if (mine !== real) {
        differences.push(
          `${step.name}: the table differs\n  real ${JSON.stringify(real)}\n  fake ${JSON.stringify(mine)}`,
        );
        // Re-sync, so one difference is reported once.
        fake.reset();
        fake.load(real);
      }
    }
    console.log(
      `ipvsadm fake vs real (${steps.length} steps, kernel schedulers: ${schedulers.join(",")}):\n  ${log.join("\n  ")}`,
    );
    expect(differences).toEqual([]);
  });

  test("the client sees both the same way", async () => {
    const real = createIpvsClient({ exec: ns.exec });
    const mine = createIpvsClient({ exec: fakeExec });
    const outcome = async (p: Promise<unknown>) => {
      try {
        return { value: (await p) ?? null };
      } catch (err) {
        if (!(err instanceof IpvsError)) throw err;
        return {
          kind: err.kind,
          exitCode: err.exitCode,
          stderr: err.stderr,
          failures: err.failures,
          line: err.line,
        };
      }
    };
    const tcp = { address: "192.0.2.100", port: 80, protocol: "TCP" as const };
    const udp6 = { address: "2001:db8::100", port: 53, protocol: "UDP" as const };
    const sctp = { address: "192.0.2.101", port: 3868, protocol: "SCTP" as const };
    const vs = (
      k: typeof tcp | typeof udp6 | typeof sctp,
      scheduler = "rr",
      timeout = 0,
      flags: string[] = [],
    ) => ({
      ...k,
      scheduler,
      flags,
      timeout,
    });
    const real1 = (address: string, port: number, weight = 1) => ({ address, port, weight });
    const steps: [string, (c: IpvsClient) => Promise<unknown>][] = [
      ["flush", (c) => c.flush()],
      ["read an empty table", (c) => c.read()],
      [
        "apply a sync",
        (c) =>
          c.apply([
            { op: "add-service", server: vs(tcp, "rr", 10800) },
            { op: "add-real", key: tcp, real: real1("203.0.113.30", 8080) },
            { op: "add-real", key: tcp, real: real1("203.0.113.31", 8080, 2) },
            { op: "add-service", server: vs(udp6, "mh", 0, ["mh-fallback", "mh-port"]) },
            { op: "add-real", key: udp6, real: real1("2001:db8::30", 53) },
            { op: "add-service", server: vs(sctp, "sh", 0, ["sh-port"]) },
            { op: "add-real", key: sctp, real: real1("203.0.113.32", 3868) },
          ] satisfies IpvsChange[]),
      ],
      ["read", (c) => c.read()],
      [
        "apply with refused lines in the middle",
        (c) =>
          c.apply([
            { op: "add-service", server: vs(tcp) },
            { op: "edit-real", key: tcp, real: real1("203.0.113.30", 8080, 0) },
            { op: "delete-real", key: tcp, real: { address: "203.0.113.99", port: 8080 } },
            { op: "edit-service", server: vs(udp6, "rr") },
          ]),
      ],
      [
        "apply with the last line refused",
        (c) =>
          c.apply([
            { op: "add-real", key: tcp, real: real1("203.0.113.33", 8080) },
            { op: "delete-service", key: { ...tcp, port: 81 } },
          ]),
      ],
      ["read after refusals", (c) => c.read()],
      ["set timeouts", (c) => c.setTimeouts({ tcp: 900, tcpFin: 120, udp: 300 })],
      ["set some timeouts", (c) => c.setTimeouts({ tcp: 0, tcpFin: 60, udp: 0 })],
      ["delete", (c) => c.apply([{ op: "delete-service", key: sctp }])],
      ["read after delete", (c) => c.read()],
      ["flush", (c) => c.flush()],
      ["read after flush", (c) => c.read()],
    ];
    const differences: string[] = [];
    for (const [name, step] of steps) {
      const want = await outcome(step(real));
      const got = await outcome(step(mine));
      if (JSON.stringify(got) !== JSON.stringify(want))
        differences.push(`${name}:\n  real ${JSON.stringify(want)}\n  fake ${JSON.stringify(got)}`);
    }
    expect(differences).toEqual([]);
  });
});

// The hostile-object replay with ipvsadm shares this guest (one boot fewer for the suite).
describeHostileRestore();
