// FakeIptables against the real binaries: the same restores and client calls go to the fake
// and to iptables-{legacy,nft} inside a fresh network namespace, and after every step the two
// must agree on the outcome (exit code, blamed line) and on iptables-save (counters and
// comments aside). This is what keeps the fake's semantics honest.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { createIptablesClient } from "../../../src/host/iptables/client.ts";
import { IptablesError, IptablesRestoreError } from "../../../src/host/iptables/errors.ts";
import { splitRuleLine } from "../../../src/host/iptables/rule-args.ts";
import { parseIptablesSave } from "../../../src/host/iptables/save-parser.ts";
import { FakeIptables } from "../../../src/host/iptables/testing/fake.ts";
import type { IptablesBackend, IptablesClient } from "../../../src/host/iptables/types.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { createTestNetns, type TestNetns } from "./netns.ts";

type Step = { name: string; run: (c: IptablesClient) => Promise<unknown> };

const restore = (name: string, data: string, noFlush: boolean): Step => ({
  name,
  run: (c) => c.restoreAll(data, { noFlush, counters: false }),
});

// Built-in chains are left to the tables' defaults; only user chains are declared.
const FULL = `*filter
:KUBE-FORWARD - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-SERVICES - [0:0]
-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m comment --comment "kube-system/kube-dns:dns has no endpoints" -m udp --dport 53 -j REJECT --reject-with icmp-port-unreachable
COMMIT
*nat
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-SEP-AAAAAAAAAAAAAAAA - [0:0]
:KUBE-SEP-BBBBBBBBBBBBBBBB - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-NPX46M4PTMTKRN6Y - [0:0]
:KUBE-SVC-OLDOLDOLDOLDOLDO - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SEP-AAAAAAAAAAAAAAAA -s 10.244.1.5/32 -m comment --comment "default/kubernetes:https" -j KUBE-MARK-MASQ
-A KUBE-SEP-AAAAAAAAAAAAAAAA -p tcp -m comment --comment "default/kubernetes:https" -m tcp -j DNAT --to-destination 10.244.1.5:6443
-A KUBE-SEP-BBBBBBBBBBBBBBBB -s 10.244.2.7/32 -m comment --comment "default/kubernetes:https" -j KUBE-MARK-MASQ
-A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m comment --comment "default/kubernetes:https" -m tcp -j DNAT --to-destination 10.244.2.7:6443
-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-SVC-NPX46M4PTMTKRN6Y ! -s 10.244.0.0/16 -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-MARK-MASQ
-A KUBE-SVC-NPX46M4PTMTKRN6Y -m comment --comment "default/kubernetes:https -> 10.244.1.5:6443" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-AAAAAAAAAAAAAAAA
-A KUBE-SVC-NPX46M4PTMTKRN6Y -m comment --comment "default/kubernetes:https -> 10.244.2.7:6443" -j KUBE-SEP-BBBBBBBBBBBBBBBB
-A KUBE-SVC-OLDOLDOLDOLDOLDO -j KUBE-SEP-BBBBBBBBBBBBBBBB
COMMIT
`;

// A partial sync: one service's chains rewritten, an endpoint replaced, stale chains removed.
const PARTIAL = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-SVC-NPX46M4PTMTKRN6Y - [0:0]
:KUBE-SEP-CCCCCCCCCCCCCCCC - [0:0]
:KUBE-SVC-OLDOLDOLDOLDOLDO - [0:0]
:KUBE-SEP-AAAAAAAAAAAAAAAA - [0:0]
-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-SEP-CCCCCCCCCCCCCCCC -s 10.244.3.9/32 -m comment --comment "default/kubernetes:https" -j KUBE-MARK-MASQ
-A KUBE-SEP-CCCCCCCCCCCCCCCC -p tcp -m comment --comment "default/kubernetes:https" -m tcp -j DNAT --to-destination 10.244.3.9:6443
-A KUBE-SVC-NPX46M4PTMTKRN6Y ! -s 10.244.0.0/16 -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-MARK-MASQ
-A KUBE-SVC-NPX46M4PTMTKRN6Y -m comment --comment "default/kubernetes:https -> 10.244.2.7:6443" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-BBBBBBBBBBBBBBBB
-A KUBE-SVC-NPX46M4PTMTKRN6Y -m comment --comment "default/kubernetes:https -> 10.244.3.9:6443" -j KUBE-SEP-CCCCCCCCCCCCCCCC
-X KUBE-SVC-OLDOLDOLDOLDOLDO
-X KUBE-SEP-AAAAAAAAAAAAAAAA
COMMIT
`;

// A good filter section, then a nat rule jumping to a chain that does not exist (line 7).
const BAD_TARGET = `*filter
:KUBE-SERVICES - [0:0]
-A KUBE-SERVICES -d 10.96.0.10/32 -p tcp -m comment --comment "kube-system/kube-dns:dns-tcp has no endpoints" -m tcp --dport 53 -j REJECT --reject-with icmp-port-unreachable
COMMIT
*nat
:KUBE-SVC-NPX46M4PTMTKRN6Y - [0:0]
-A KUBE-SVC-NPX46M4PTMTKRN6Y -j KUBE-SEP-DOESNOTEXIST0000
-A KUBE-SVC-NPX46M4PTMTKRN6Y -j KUBE-SEP-CCCCCCCCCCCCCCCC
COMMIT
`;

// What a partial sync over a big filter table writes (filter-edits.ts): nat first, then rules
// appended to an existing filter chain that is not redeclared (so not flushed).
const APPENDS = `*nat
:KUBE-SERVICES - [0:0]
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
COMMIT
*filter
-A KUBE-SERVICES -d 10.96.0.11/32 -p tcp -m comment --comment "ns/new:http has no endpoints" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable
COMMIT
`;

const EDITS = `*filter
:FORWARD DROP [0:0]
-I KUBE-FORWARD 2 -m comment --comment "inserted second" -j RETURN
-D KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-I KUBE-FORWARD -m comment --comment first -j RETURN
-D KUBE-FORWARD 3
COMMIT
`;

const FILTER_ONLY = `*filter
:KUBE-NODEPORTS - [0:0]
:KUBE-SERVICES - [0:0]
-A INPUT -j KUBE-NODEPORTS
COMMIT
`;

const MASQ_RULE = ["-m", "comment", "--comment", "kubernetes postrouting rules", "-j", "KUBE-POSTROUTING"];
const FW_RULE = ["-m", "comment", "--comment", "kubernetes load balancer firewall", "-j", "KUBE-NODEPORTS"];

const IPV4_STEPS: Step[] = [
  restore("full restore of filter and nat", FULL, false),
  restore("noflush partial sync with chain deletion", PARTIAL, true),
  restore("nat first, then appends to an undeclared existing filter chain", APPENDS, true),
  restore("jump to a missing chain in the second table", BAD_TARGET, true),
  restore("-X of a referenced chain", "*nat\n-X KUBE-SEP-CCCCCCCCCCCCCCCC\nCOMMIT\n", true),
  restore("-X of a missing chain", "*nat\n-X KUBE-SEP-NOTTHERE\nCOMMIT\n", true),
  restore("policy, -I at a position, -D by spec and number", EDITS, true),
  restore("flushing restore of one table", FILTER_ONLY, false),
  restore(
    "-A to an undeclared chain",
    "*filter\n:KUBE-SERVICES - [0:0]\n-A KUBE-NOPE -j RETURN\nCOMMIT\n",
    true,
  ),
  restore("chain name too long", "*nat\n:KUBE-SVC-ABCDEFGHIJKLMNOPQRSTU - [0:0]\nCOMMIT\n", true),
  restore("missing COMMIT", "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -j RETURN\n", true),
  restore("stray text", "*nat\n:KUBE-SERVICES - [0:0]\nbogus\nCOMMIT\n", true),
  { name: "ensureChain new", run: (c) => c.ensureChain("nat", "KUBE-KUBELET-CANARY") },
  { name: "ensureChain existing", run: (c) => c.ensureChain("nat", "KUBE-KUBELET-CANARY") },
  { name: "chainExists yes", run: (c) => c.chainExists("nat", "KUBE-KUBELET-CANARY") },
  { name: "chainExists no", run: (c) => c.chainExists("nat", "KUBE-NOPE") },
  { name: "ensureRule already there", run: (c) => c.ensureRule("append", "nat", "POSTROUTING", MASQ_RULE) },
  { name: "ensureRule prepend new", run: (c) => c.ensureRule("prepend", "filter", "INPUT", FW_RULE) },
  { name: "ensureRule prepend again", run: (c) => c.ensureRule("prepend", "filter", "INPUT", FW_RULE) },
  {
    name: "ensureRule to a missing chain",
    run: (c) => c.ensureRule("append", "filter", "KUBE-NOPE", FW_RULE),
  },
  {
    name: "ensureRule with a missing target",
    run: (c) => c.ensureRule("append", "filter", "INPUT", ["-j", "KUBE-NOPE"]),
  },
  {
    name: "deleteRule with a missing target",
    run: (c) => c.deleteRule("filter", "INPUT", ["-j", "KUBE-NOPE"]),
  },
  { name: "deleteRule present", run: (c) => c.deleteRule("filter", "INPUT", FW_RULE) },
  { name: "deleteRule absent", run: (c) => c.deleteRule("filter", "INPUT", FW_RULE) },
  { name: "flushChain", run: (c) => c.flushChain("nat", "KUBE-POSTROUTING") },
  { name: "flushChain missing", run: (c) => c.flushChain("nat", "KUBE-NOPE") },
  { name: "deleteChain", run: (c) => c.deleteChain("nat", "KUBE-KUBELET-CANARY") },
  { name: "deleteChain missing", run: (c) => c.deleteChain("nat", "KUBE-KUBELET-CANARY") },
  { name: "deleteChain referenced", run: (c) => c.deleteChain("nat", "KUBE-MARK-MASQ") },
];

const IPV6_STEPS: Step[] = [
  restore(
    "full restore",
    `*nat
:KUBE-SEP-V6V6V6V6V6V6V6V6 - [0:0]
:KUBE-SERVICES - [0:0]
-A OUTPUT -j KUBE-SERVICES
-A KUBE-SEP-V6V6V6V6V6V6V6V6 -s fd00:10:244::5/128 -j MARK --set-xmark 0x4000/0x4000
-A KUBE-SEP-V6V6V6V6V6V6V6V6 -p tcp -m tcp -j DNAT --to-destination [fd00:10:244::5]:8080
-A KUBE-SERVICES -d fd00:10:96::1/128 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j KUBE-SEP-V6V6V6V6V6V6V6V6
COMMIT
`,
    false,
  ),
  restore("bad target", "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -j KUBE-SEP-MISSING\nCOMMIT\n", true),
  {
    name: "ensureRule with a bare address",
    run: (c) => c.ensureRule("append", "nat", "KUBE-SERVICES", ["-d", "fd00:10:96::2", "-j", "RETURN"]),
  },
  {
    name: "ensureRule with the same address and prefix",
    run: (c) => c.ensureRule("append", "nat", "KUBE-SERVICES", ["-d", "fd00:10:96::2/128", "-j", "RETURN"]),
  },
];

interface Outcome {
  value?: unknown;
  error?: string;
  exitCode?: number;
  line?: number | undefined;
  stderr?: string;
}

async function outcome(step: Step, client: IptablesClient): Promise<Outcome> {
  try {
    return { value: (await step.run(client)) ?? null };
  } catch (err) {
    if (err instanceof IptablesRestoreError)
      return { error: err.name, exitCode: err.exitCode, line: err.line };
    if (err instanceof IptablesError) return { error: err.name, exitCode: err.exitCode, stderr: err.stderr };
    throw err;
  }
}

// Tables as comparable data: chains with policies in save order, rule lines, no counters.
function normalized(save: string): Record<string, { chains: string[]; rules: string[] }> {
  const out: Record<string, { chains: string[]; rules: string[] }> = {};
  for (const t of parseIptablesSave(save).values()) {
    const chains = [...t.chains.values()];
    out[t.name] = {
      chains: chains.map((c) => `${c.name} ${c.policy}`),
      rules: chains.flatMap((c) => c.rules),
    };
  }
  return out;
}

function compare(backend: IptablesBackend, family: IPFamily, steps: Step[]) {
  describe(`FakeIptables matches ${family === "IPv6" ? "ip6" : "ip"}tables-${backend} in a netns`, () => {
    let ns: TestNetns;
    let real: IptablesClient;
    let fakeClient: IptablesClient;
    const fake = new FakeIptables({ backend });

    beforeAll(async () => {
      ns = await createTestNetns();
      real = createIptablesClient({ exec: ns.exec, family, backend });
      fakeClient = createIptablesClient({ exec: fake.install(new FakeExec(), family), family, backend });
    });
    afterAll(async () => {
      await ns?.remove();
    });

    test("every step has the same outcome and leaves the same tables", async () => {
      // The messages were recorded from 1.8.9; other releases may word them differently.
      const sameWording = (await real.version()) === fake.version;
      const log: string[] = [];
      for (const step of steps) {
        const want = await outcome(step, real);
        const got = await outcome(step, fakeClient);
        log.push(`${step.name}: ${JSON.stringify({ ...want, stderr: undefined })}`);
        if (!sameWording) {
          delete want.stderr;
          delete got.stderr;
        }
        expect({ step: step.name, ...got }).toEqual({ step: step.name, ...want });
        const [realSave, fakeSave] = await Promise.all([real.saveAll(), fakeClient.saveAll()]);
        expect({ step: step.name, tables: normalized(fakeSave) }).toEqual({
          step: step.name,
          tables: normalized(realSave),
        });
      }
      console.log(`${family === "IPv6" ? "ip6" : "ip"}tables-${backend}:\n  ${log.join("\n  ")}`);
    }, 60_000);
  });
}

compare("legacy", "IPv4", IPV4_STEPS);
compare("nft", "IPv4", IPV4_STEPS);
compare("legacy", "IPv6", IPV6_STEPS);
compare("nft", "IPv6", IPV6_STEPS);

// Counters: restored with --counters, then a noflush and a flushing restore without it.
// Legacy zeroes built-in chain counters on every restore without --counters; nft keeps them
// unless the table is flushed. Rule counters survive a noflush restore in both.
describe("FakeIptables counters match the real binaries", () => {
  const withCounters = `*filter
:INPUT DROP [5:600]
:KUBE-A - [0:0]
[7:800] -A KUBE-A -j ACCEPT
-A KUBE-A -j RETURN
COMMIT
`;
  const steps: [string, boolean, boolean][] = [
    [withCounters, false, true],
    ["*filter\n:KUBE-B - [0:0]\nCOMMIT\n", true, false],
    ["*filter\n:KUBE-A - [0:0]\n:KUBE-B - [0:0]\n[9:900] -A KUBE-B -j ACCEPT\nCOMMIT\n", false, false],
  ];
  const savedWithCounters = async (exec: { run: FakeExec["run"] }, cmd: string) => {
    const res = await exec.run({ cmd, args: ["-c", "-t", "filter"] });
    return res.stdout
      .split("\n")
      .filter((l) => l !== "" && !l.startsWith("#"))
      .join("\n");
  };

  for (const backend of ["legacy", "nft"] as const) {
    test(`iptables-${backend}`, async () => {
      const ns = await createTestNetns();
      try {
        const real = createIptablesClient({ exec: ns.exec, family: "IPv4", backend });
        const fake = new FakeIptables({ backend });
        const fakeExec = fake.install(new FakeExec(), "IPv4");
        const fakeClient = createIptablesClient({ exec: fakeExec, family: "IPv4", backend });
        const seen: string[] = [];
        for (const [data, noFlush, counters] of steps) {
          await real.restoreAll(data, { noFlush, counters });
          await fakeClient.restoreAll(data, { noFlush, counters });
          const want = await savedWithCounters(ns.exec, `iptables-${backend}-save`);
          expect(await savedWithCounters(fakeExec, `iptables-${backend}-save`)).toBe(want);
          seen.push(want);
        }
        // The steps are only a test if counters were actually restored somewhere.
        expect(seen[0]).toContain("[7:800] -A KUBE-A -j ACCEPT");
      } finally {
        await ns.remove();
      }
    }, 60_000);
  }
});

// How a rule line splits into arguments (rule-args.ts splitRuleLine, which the fake uses): a
// closing quote ends the argument, a carriage return is no separator, a backslash escapes only
// inside quotes, one dangling at the end is dropped, and a NUL ends the line.
describe("FakeIptables splits rule lines as the real binaries do", () => {
  const lines = [
    '-A KPTS-T -m comment --comment ab"c d" -j RETURN',
    '-A KPTS-T -m comment --comment "a\\"b\\\\c\\x\'" -j RETURN',
    "-A KPTS-T -m comment --comment a\\b -j RETURN",
    '-A KPTS-T -m comment --comment "a\rb" -j RETURN',
    "-A KPTS-T -m comment --comment a\rb -j RETURN",
    '-A KPTS-T -m comment --comment "a\tb\vc" -j RETURN',
    '-A KPTS-T -m comment --comment "" -j RETURN',
    "-A KPTS-T -m comment --comment ! -j RETURN",
    '-A KPTS-T -m comment --comment "-j" -j RETURN',
    '-A KPTS-T -m comment --comment "abc\\',
    '-A KPTS-T -m comment --comment "open quote',
    `-A KPTS-T -m comment --comment "${"x".repeat(300)}" -j RETURN`,
  ];
  // The fake does not know which options take values, so it cannot call "cd" stray: only the
  // real tool is asked, to show that the closing quote ended the argument.
  const strayAfterQuote = '-A KPTS-T -m comment --comment "ab"cd -j RETURN';
  for (const backend of ["legacy", "nft"] as const) {
    test(`iptables-${backend}`, async () => {
      const ns = await createTestNetns();
      try {
        const real = createIptablesClient({ exec: ns.exec, family: "IPv4", backend });
        const fake = new FakeIptables({ backend });
        const fakeClient = createIptablesClient({
          exec: fake.install(new FakeExec(), "IPv4"),
          family: "IPv4",
          backend,
        });
        for (const line of lines) {
          const step = restore(JSON.stringify(line), `*filter\n:KPTS-T - [0:0]\n${line}\nCOMMIT\n`, false);
          const want = await outcome(step, real);
          const got = await outcome(step, fakeClient);
          delete want.stderr;
          delete got.stderr;
          expect({ input: line, ...got }).toEqual({ input: line, ...want });
          const [realSave, fakeSave] = await Promise.all([real.save("filter"), fakeClient.save("filter")]);
          expect({ input: line, rules: normalized(fakeSave) }).toEqual({
            input: line,
            rules: normalized(realSave),
          });
        }
        const stray = await ns.exec.run({
          cmd: `iptables-${backend}-restore`,
          args: ["--test"],
          stdin: `*filter\n:KPTS-T - [0:0]\n${strayAfterQuote}\nCOMMIT\n`,
        });
        expect(stray.code).toBe(2);
        expect(stray.stderr).toContain("Bad argument `cd'");
        expect(splitRuleLine(strayAfterQuote).slice(5, 7)).toEqual(["ab", "cd"]);
      } finally {
        await ns.remove();
      }
    }, 60_000);
  }
});
