// FakeIpset against the real ipset inside a fresh network namespace: the same invocations
// (restore scripts with and without -exist, including failing ones, and direct commands) go to
// both, and after every step they must agree on exit code, message and blamed line, and on
// `ipset save` (set order kept, element order and the kernel's random initval aside).

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import type { Exec, ExecResult } from "../../../src/exec/types.ts";
import { createIpsetClient } from "../../../src/host/ipset/client.ts";
import { IpsetError } from "../../../src/host/ipset/errors.ts";
import { FakeIpset } from "../../../src/host/ipset/testing/fake.ts";
import { createTestNetns, type TestNetns } from "../iptables/netns.ts";

type Step = { name: string; args: string[]; stdin?: string };

const restore = (name: string, script: string, exist = false): Step => ({
  name,
  args: exist ? ["restore", "-exist"] : ["restore"],
  stdin: script,
});
const cmd = (name: string, ...args: string[]): Step => ({ name, args });

const STEPS: Step[] = [
  restore(
    "upstream's sets, both families",
    `create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536
create KUBE-LOAD-BALANCER-SOURCE-CIDR hash:ip,port,net family inet hashsize 1024 maxelem 65536
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
create KUBE-HEALTH-CHECK-NODE-PORT bitmap:port range 0-65535
create KUBE-6-CLUSTER-IP hash:ip,port family inet6 hashsize 1024 maxelem 65536
create KUBE-6-LOAD-BALANCER-SOURCE-CID hash:ip,port,net family inet6 hashsize 1024 maxelem 65536
create NETS hash:net family inet hashsize 1024 maxelem 65536
create HOSTS hash:ip family inet hashsize 1024 maxelem 65536
add KUBE-CLUSTER-IP 10.96.0.1,tcp:443
add KUBE-CLUSTER-IP 10.96.0.10,UDP:53
add KUBE-CLUSTER-IP 10.96.0.10,53
add KUBE-CLUSTER-IP 10.96.0.11,sctp:9
add KUBE-CLUSTER-IP 10.96.0.12,udp:1000-1003
add KUBE-LOOP-BACK 10.244.1.5,tcp:8080,10.244.1.5
add KUBE-LOAD-BALANCER-SOURCE-CIDR 203.0.113.7,tcp:80,192.168.1.7/24
add KUBE-LOAD-BALANCER-SOURCE-CIDR 203.0.113.7,tcp:80,192.168.2.9/32
add KUBE-LOAD-BALANCER-SOURCE-CIDR 203.0.113.7,tcp:80,192.168.3.9
add KUBE-NODE-PORT-TCP 30080
add KUBE-NODE-PORT-TCP tcp:30081
add KUBE-NODE-PORT-TCP 30100-30102
add KUBE-6-CLUSTER-IP 2001:0db8::0001,tcp:80
add KUBE-6-CLUSTER-IP fd00:10:96::a,udp:53
add KUBE-6-LOAD-BALANCER-SOURCE-CID 2001:db8::1,tcp:80,2001:db8:1::5/48
add NETS 10.0.0.0/8
add NETS 172.16.0.1
add NETS 192.168.1.7/24
add HOSTS 10.0.1.0/30
add HOSTS 10.0.0.1
`,
  ),
  restore(
    "re-adding without -exist fails at that line; the batch keeps what came before",
    "add KUBE-CLUSTER-IP 10.96.0.20,tcp:80\nadd KUBE-CLUSTER-IP 10.96.0.1,tcp:443\nadd KUBE-CLUSTER-IP 10.96.0.21,tcp:80\n",
  ),
  restore(
    "-exist: re-create, re-add, del of a missing entry",
    `create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 4096 maxelem 65536
add KUBE-CLUSTER-IP 10.96.0.1,tcp:443
del KUBE-CLUSTER-IP 10.99.99.99,tcp:1
del KUBE-CLUSTER-IP 10.96.0.20,tcp:80
add KUBE-NODE-PORT-TCP 30080
destroy NO-SUCH-SET
`,
    true,
  ),
  restore(
    "a syntax error drops the pending batch",
    "add HOSTS 10.0.0.50\nadd HOSTS 10.0.0.51\nadd HOSTS 10.0.0.300\n",
    true,
  ),
  restore(
    "an element of the wrong family",
    "add KUBE-CLUSTER-IP 10.96.0.30,tcp:80\nadd KUBE-CLUSTER-IP 2001:db8::1,tcp:80\n",
    true,
  ),
  restore("wrong number of elements", "add KUBE-LOOP-BACK 10.244.1.6,tcp:8080\n", true),
  restore("two separators for hash:ip,port", "add KUBE-CLUSTER-IP 10.96.0.3,tcp:8080,10.0.0.1\n", true),
  restore("an unknown protocol", "add KUBE-CLUSTER-IP 10.96.0.3,foo:80\n", true),
  restore(
    "a plain IP where hash:ip,port,ip wants one",
    "add KUBE-LOOP-BACK 10.244.1.6,tcp:80,10.0.0.0/24\n",
    true,
  ),
  restore(
    "a port out of range (ipset names no line)",
    "add KUBE-NODE-PORT-TCP 30200\nadd KUBE-NODE-PORT-TCP 70000\n",
    true,
  ),
  restore(
    "a /0 network is a kernel error in the batch",
    "add NETS 11.0.0.0/8\nadd NETS 0.0.0.0/0\nadd NETS 12.0.0.0/8\n",
    true,
  ),
  restore(
    "adding to a missing set drops the pending batch",
    "add HOSTS 10.0.0.60\nadd NOPE 10.0.0.1\n",
    true,
  ),
  restore(
    "an unknown command: exit 2, no line",
    "add HOSTS 10.0.0.61\nbogus HOSTS\nadd HOSTS 10.0.0.62\n",
    true,
  ),
  restore("an unknown argument", "add HOSTS 10.0.0.63 extra\n", true),
  restore("a missing element", "add HOSTS\n", true),
  restore(
    "other commands send the pending batch first",
    "add HOSTS 10.0.0.64\ncreate KUBE-CLUSTER-IP hash:ip\n",
    true,
  ),
  restore(
    "re-create with another maxelem",
    "create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 1000\n",
    true,
  ),
  restore(
    "re-create with another family passes (the kernel does not compare it)",
    "create KUBE-CLUSTER-IP hash:ip,port family inet6 hashsize 1024 maxelem 65536\n",
    true,
  ),
  restore("flush of a missing set fails even with -exist", "add HOSTS 10.0.0.65\nflush NOPE\n", true),
  restore("bitmap without a range", "create BP bitmap:port\n", true),
  restore(
    "an element outside the bitmap's range",
    "create SMALL bitmap:port range 100-200\nadd SMALL 150\nadd SMALL 99\n",
    true,
  ),
  restore(
    "a name longer than 31 characters",
    "create KUBE-6-LOAD-BALANCER-SOURCE-CIDR hash:ip,port,net family inet6\n",
    true,
  ),
  restore("an unknown type and family", "create T1 hash:foo\n", true),
  restore("an unknown family", "create T2 hash:ip family inet7\n", true),
  restore(
    "comments, blank lines, -exist on a line",
    "# sync\n\n  add HOSTS 10.0.0.70\nadd HOSTS 10.0.0.70 -exist\n",
  ),
  restore("del of a missing entry without -exist", "del HOSTS 10.0.0.99\n"),
  restore(
    "the comment extension",
    'create WITHC hash:net family inet hashsize 1024 maxelem 65536 comment\nadd WITHC 10.0.0.0/8 comment "hello world"\nadd WITHC 10.1.0.0/16\n',
  ),
  restore(
    "a full hash",
    "create FULL hash:ip family inet hashsize 64 maxelem 2\nadd FULL 1.1.1.1\nadd FULL 1.1.1.2\nadd FULL 1.1.1.3\n",
  ),
  cmd("destroy frees the slot, create reuses it", "destroy KUBE-LOOP-BACK"),
  cmd("create into the freed slot", "create NEWSET hash:ip family inet hashsize 1024 maxelem 65536"),
  cmd("destroy a missing set", "destroy KUBE-LOOP-BACK"),
  cmd("destroy a missing set with -exist", "-exist", "destroy", "KUBE-LOOP-BACK"),
  cmd("direct add", "add", "HOSTS", "10.0.0.80"),
  cmd("direct add again", "add", "HOSTS", "10.0.0.80"),
  cmd("direct add with -exist", "add", "HOSTS", "10.0.0.80", "-exist"),
  cmd("direct del of a missing entry", "del", "HOSTS", "10.0.0.81"),
  cmd("rename", "rename", "NEWSET", "RENAMED"),
  cmd("swap", "swap", "HOSTS", "RENAMED"),
  cmd("flush one set", "flush", "RENAMED"),
  cmd("list names", "list", "-n"),
  cmd("save one set", "save", "KUBE-NODE-PORT-TCP"),
  cmd("save a missing set", "save", "NOPE"),
  cmd("unknown command", "frobnicate"),
  cmd("restore with an extra argument", "restore", "foo"),
];

function splitArgs(step: Step): string[] {
  return step.args.length === 1 ? step.args[0]!.split(" ") : step.args;
}

// Save text as comparable data: set lines in order (initval masked), elements sorted per set.
function normalizedSave(text: string): string[] {
  const out: string[] = [];
  let adds: string[] = [];
  const flush = () => {
    out.push(...adds.sort());
    adds = [];
  };
  for (const line of text.split("\n")) {
    if (line.startsWith("create ")) {
      flush();
      out.push(line.replace(/initval 0x[0-9a-f]+/, "initval 0x?"));
    } else if (line.startsWith("add ")) adds.push(line);
  }
  flush();
  return out;
}

async function run(exec: Exec, step: Step): Promise<ExecResult> {
  return exec.run({
    cmd: "ipset",
    args: splitArgs(step),
    ...(step.stdin !== undefined ? { stdin: step.stdin } : {}),
  });
}

describe("FakeIpset matches the real ipset in a netns", () => {
  let ns: TestNetns;
  const fake = new FakeIpset();
  const fakeExec = fake.install(new FakeExec());

  beforeAll(async () => {
    ns = await createTestNetns();
  });
  afterAll(async () => {
    await ns?.remove();
  });

  test("every step has the same outcome and leaves the same sets", async () => {
    const version = (await ns.exec.run({ cmd: "ipset", args: ["--version"] })).stdout;
    // Messages were recorded from ipset 7.17; another release may word them differently.
    const sameWording = version.startsWith(`ipset v${fake.version},`);
    const log: string[] = [];
    for (const step of STEPS) {
      const want = await run(ns.exec, step);
      const got = await run(fakeExec, step);
      const shape = (r: ExecResult) => ({
        step: step.name,
        code: r.code,
        stdout: step.args[0] === "save" ? normalizedSave(r.stdout) : r.stdout,
        stderr: sameWording ? r.stderr : (/Error in line (\d+)/.exec(r.stderr)?.[1] ?? ""),
      });
      log.push(`${step.name}: exit ${want.code} ${want.stderr.trim().split("\n")[0] ?? ""}`);
      expect(shape(got)).toEqual(shape(want));
      const [realSave, fakeSave] = await Promise.all([
        ns.exec.run({ cmd: "ipset", args: ["save"] }),
        fakeExec.run({ cmd: "ipset", args: ["save"] }),
      ]);
      expect({ step: step.name, sets: normalizedSave(fakeSave.stdout) }).toEqual({
        step: step.name,
        sets: normalizedSave(realSave.stdout),
      });
    }
    console.log(`ipset fake vs real:\n  ${log.join("\n  ")}`);
  }, 120_000);

  test("the client reads both the same way and gets the same typed error", async () => {
    const real = createIpsetClient({ exec: ns.exec });
    const mine = createIpsetClient({ exec: fakeExec });
    // Element order is the kernel's hash order; compare sorted.
    const sortedSets = async (c: typeof real) =>
      [...(await c.listSets()).values()].map((s) => ({ ...s, entries: [...s.entries].sort() }));
    expect(await sortedSets(mine)).toEqual(await sortedSets(real));
    const script = "add HOSTS 10.0.0.90\nadd HOSTS 10.0.0.90,tcp:80\n";
    const errors = await Promise.all(
      [real, mine].map(async (c) => {
        try {
          await c.restore(script);
          return undefined;
        } catch (err) {
          if (!(err instanceof IpsetError)) throw err;
          return { line: err.line, text: err.text, reason: err.reason, exitCode: err.exitCode };
        }
      }),
    );
    expect(errors[0]).toBeDefined();
    expect(errors[1]).toEqual(errors[0]);
  }, 60_000);
});
