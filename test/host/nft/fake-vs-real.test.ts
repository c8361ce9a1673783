// FakeNft against the real nft inside a fresh network namespace: the same `nft -f -` inputs
// (transactions rendered by NftTransaction, including failing ones) go to both, and after every
// step they must agree on success, on the lines blamed and their messages, and on the table read
// back (real: `nft --json list table`): chains with base hook/type/priority and rule counts, sets
// and maps with their types, element keys and map values. Against the host's nft, the image's and
// trixie's 1.1.3 (test/support/image-nft.ts), each with the fake speaking as that release.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import type { Exec } from "../../../src/exec/types.ts";
import { parseNftChainNames } from "../../../src/host/nft/client.ts";
import { parseNftErrors } from "../../../src/host/nft/errors.ts";
import { FAKE_NFT_RELEASES, FakeNft, type FakeNftVersion } from "../../../src/host/nft/testing/fake.ts";
import { NftTransaction } from "../../../src/host/nft/transaction.ts";
import type { NftChain, NftElement, NftMap, NftRule, NftSet } from "../../../src/host/nft/types.ts";
import { imageNftProgram, suiteNftProgram } from "../../support/image-nft.ts";
import { scaled } from "../../support/kernel-vm.ts";
import { createTestNetns, type TestNetns } from "../iptables/netns.ts";

interface Normal {
  chains: Record<string, { base?: string; rules: number }>;
  sets: Record<string, { type: string; elements: string[] }>;
  maps: Record<string, { type: string; elements: string[] }>;
}

// ---- the objects of a small kube-proxy table ----

const SVC = "service-ULMVA6XW-ns1/svc1/tcp/p80";
const EP1 = "endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80";
const EP2 = "endpoint-XKQ7ZV2M-ns1/svc1/tcp/p80__10.180.0.2/80";
const chain = (name: string, base?: NftChain["base"]): NftChain => ({
  kind: "chain",
  name,
  ...(base ? { base } : {}),
});
const rule = (c: string, r: string, comment?: string): NftRule => ({
  kind: "rule",
  chain: c,
  rule: r,
  ...(comment ? { comment } : {}),
});
const CLUSTER_IPS: NftSet = {
  kind: "set",
  name: "cluster-ips",
  type: "ipv4_addr",
  flags: ["dynamic", "timeout"],
  timeoutSeconds: 10800,
  comment: "Active ClusterIPs",
};
const SERVICE_IPS: NftMap = {
  kind: "map",
  name: "service-ips",
  type: "ipv4_addr . inet_proto . inet_service : verdict",
  comment: "ClusterIP, ExternalIP and LoadBalancer IP traffic",
};
const elem = (container: string, key: string[], value?: string[], comment?: string): NftElement => ({
  kind: "element",
  container,
  key,
  ...(value ? { value } : {}),
  ...(comment ? { comment } : {}),
});
const SVC_ELEM = elem("service-ips", ["10.96.0.10", "tcp", "80"], [`goto ${SVC}`], "ns1/svc1:p80");

function setup(): NftTransaction {
  const tx = new NftTransaction("ip", "kube-proxy");
  tx.add({ kind: "table", comment: "rules for kube-proxy" });
  tx.add(chain("filter-input", { type: "filter", hook: "input", priority: -110 }));
  tx.add(chain("nat-prerouting", { type: "nat", hook: "prerouting", priority: -100 }));
  for (const name of ["services", SVC, EP1, EP2]) tx.add(chain(name));
  tx.add(CLUSTER_IPS).add(SERVICE_IPS);
  for (const name of ["filter-input", "nat-prerouting", "services", SVC, EP1, EP2]) tx.flush(chain(name));
  tx.add(rule("filter-input", "ip daddr @cluster-ips reject", "reject traffic to unknown ports"));
  tx.add(rule("nat-prerouting", "jump services"));
  tx.add(rule("services", "ip daddr . meta l4proto . th dport vmap @service-ips"));
  tx.add(rule(SVC, `numgen random mod 2 vmap { 0 : goto ${EP1} , 1 : goto ${EP2} }`));
  tx.add(rule(EP1, "meta l4proto tcp dnat to 10.180.0.1:80"));
  tx.add(rule(EP2, "meta l4proto tcp dnat to 10.180.0.2:80"));
  tx.add(elem("cluster-ips", ["10.96.0.10"]));
  tx.add(SVC_ELEM);
  return tx;
}

const tx = () => new NftTransaction("ip", "kube-proxy");

type Step = { name: string; input: string; check?: boolean };
const step = (name: string, t: NftTransaction | string, check = false): Step => ({
  name,
  input: typeof t === "string" ? t : t.render(),
  check,
});

const STEPS: Step[] = [
  step("a whole table: base chains, regular chains, a set, a verdict map, rules, elements", setup()),
  step("the same sync again is idempotent (adds are no-ops, flushed chains are refilled)", setup()),
  step("--check of a valid transaction changes nothing", tx().add(chain("checked-only")), true),
  step(
    "--check of a failing transaction reports the line",
    tx().add(chain("x")).add(rule("nope", "accept")),
    true,
  ),
  step(
    "syntax errors: every bad line is blamed, nothing applies",
    `add chain ip kube-proxy extra\nadd chian ip kube-proxy extra2\nadd rule ip kube-proxy extra accept\nadd set ip kube-proxy s9\n`,
  ),
  step("a rule into a missing chain", tx().add(chain("extra")).add(rule("missing-chain", "accept"))),
  step(
    "two kernel refusals in one transaction are both blamed",
    tx()
      .add(rule("missing-a", "accept"))
      .add(chain("extra"))
      .add(rule("missing-b", "drop"))
      .add(rule("extra", "accept")),
  ),
  step("a jump to a missing chain", tx().add(rule("services", "jump no-such-chain"))),
  step("a goto to a base chain", tx().add(rule("services", "goto filter-input"))),
  step("a rule naming a missing set", tx().add(rule("services", "ip daddr @no-such-set drop"))),
  step("an element into a missing map", tx().add(elem("no-such-map", ["10.0.0.1", "tcp", "80"], ["drop"]))),
  step("deleting a chain a rule jumps to (flushed first)", tx().flush(chain(EP1)).delete(chain(EP1))),
  step("deleting a chain a verdict-map element names", tx().flush(chain(SVC)).delete(chain(SVC))),
  step("deleting a missing element", tx().delete(elem("cluster-ips", ["10.9.9.9"]))),
  step("deleting a missing chain", tx().delete(chain("no-such-chain"))),
  step("re-adding an element with the same value is a no-op", tx().add(SVC_ELEM)),
  step(
    "re-adding a map element with another value",
    tx().add(elem("service-ips", ["10.96.0.10", "tcp", "80"], [`goto ${EP1}`])),
  ),
  step(
    "a map element's goto to a missing chain",
    tx().add(elem("service-ips", ["10.96.0.11", "tcp", "80"], ["goto no-such-chain"])),
  ),
  step("re-adding a set with another type", tx().add({ ...CLUSTER_IPS, type: "ipv6_addr" })),
  step(
    "re-adding a base chain with another priority",
    tx().add(chain("filter-input", { type: "filter", hook: "input", priority: 0 })),
  ),
  step(
    "re-adding a regular chain as a base chain",
    tx().add(chain("services", { type: "filter", hook: "input", priority: 0 })),
  ),
  step("deleting a set a rule uses", tx().delete(CLUSTER_IPS)),
  step(
    "comments over 128 bytes are refused while parsing (raw text: the transaction cuts them)",
    `add chain ip kube-proxy c128 { comment "${"a".repeat(128)}" ; }\n` +
      `add chain ip kube-proxy c129 { comment "${"a".repeat(129)}" ; }\n` +
      `add rule ip kube-proxy services accept comment "${"é".repeat(65)}"\n` +
      `add element ip kube-proxy cluster-ips { 10.96.0.99 comment "${"日".repeat(43)}" }\n`,
  ),
  step(
    "elements: adds, re-adds, deletes within one transaction",
    tx()
      .add(elem("cluster-ips", ["10.96.0.11"]))
      .add(elem("cluster-ips", ["10.96.0.11"]))
      .add(elem("cluster-ips", ["10.96.0.12"]))
      .delete(elem("cluster-ips", ["10.96.0.12"]))
      .add(elem("service-ips", ["10.96.0.11", "udp", "53"], ["drop"])),
  ),
  step(
    "deleting an element twice in one transaction",
    tx()
      .delete(elem("cluster-ips", ["10.96.0.11"]))
      .delete(elem("cluster-ips", ["10.96.0.11"])),
  ),
  step(
    "a chain with rules nothing references can be deleted",
    tx().add(chain("lonely")).add(rule("lonely", "accept")).delete(chain("lonely")),
  ),
  step(
    "removing a service: its element, then its chains",
    tx()
      .delete(elem("service-ips", ["10.96.0.10", "tcp", "80"]))
      .flush(chain(SVC))
      .delete(chain(SVC))
      .flush(chain(EP1))
      .delete(chain(EP1))
      .flush(chain(EP2))
      .delete(chain(EP2)),
  ),
  step("flush set and flush map", tx().flush(CLUSTER_IPS).flush(SERVICE_IPS)),
  step("flush table empties every chain, keeps sets and maps", "flush table ip kube-proxy\n"),
  step("an unused map can be deleted", tx().delete(SERVICE_IPS)),
  step("delete table", "delete table ip kube-proxy\n"),
  step("a chain into a missing table", tx().add(chain("services"))),
  step("deleting a missing table", "delete table ip kube-proxy\n"),
];

// ---- reading both sides into the normal form ----

type Json = Record<string, unknown>;

function jsonAtom(v: unknown): string {
  if (typeof v === "string" || typeof v === "number") return String(v);
  const o = v as Json;
  if (o && Array.isArray(o.concat)) return (o.concat as unknown[]).map(jsonAtom).join(" . ");
  if (o?.elem) return jsonAtom((o.elem as Json).val);
  if (o && typeof o === "object") {
    const [verdict, arg] = Object.entries(o)[0]!;
    return arg === null ? verdict : `${verdict} ${(arg as Json).target}`;
  }
  throw new Error(`unreadable element ${JSON.stringify(v)}`);
}

function typeText(t: unknown): string {
  return Array.isArray(t) ? t.join(" . ") : String(t);
}

function normalFromJson(text: string): Normal {
  const out: Normal = { chains: {}, sets: {}, maps: {} };
  for (const entry of (JSON.parse(text) as { nftables: Json[] }).nftables) {
    if (entry.chain) {
      const c = entry.chain as Json;
      out.chains[c.name as string] = {
        ...(c.hook ? { base: `${c.type} ${c.hook} ${c.prio}` } : {}),
        rules: 0,
      };
    } else if (entry.rule) {
      out.chains[(entry.rule as Json).chain as string]!.rules++;
    } else if (entry.set) {
      const s = entry.set as Json;
      out.sets[s.name as string] = {
        type: typeText(s.type),
        elements: ((s.elem as unknown[]) ?? []).map(jsonAtom).sort(),
      };
    } else if (entry.map) {
      const m = entry.map as Json;
      out.maps[m.name as string] = {
        type: `${typeText(m.type)} : ${m.map}`,
        elements: ((m.elem as [unknown, unknown][]) ?? [])
          .map(([k, v]) => `${jsonAtom(k)} : ${jsonAtom(v)}`)
          .sort(),
      };
    }
  }
  return out;
}

function normalFromFake(fake: FakeNft): Normal | undefined {
  const t = fake.tableState("ip", "kube-proxy");
  if (!t) return undefined;
  const out: Normal = { chains: {}, sets: {}, maps: {} };
  for (const [name, c] of t.chains) {
    out.chains[name] = {
      ...(c.base ? { base: `${c.base.type} ${c.base.hook} ${c.base.priority}` } : {}),
      rules: c.rules.length,
    };
  }
  for (const [name, s] of t.sets) out.sets[name] = { type: s.type, elements: [...s.elements.keys()].sort() };
  for (const [name, m] of t.maps) {
    out.maps[name] = { type: m.type, elements: [...m.elements].map(([k, v]) => `${k} : ${v}`).sort() };
  }
  return out;
}

async function readReal(exec: Exec): Promise<Normal | undefined> {
  const res = await exec.run({ cmd: "nft", args: ["--json", "list", "table", "ip", "kube-proxy"] });
  if (res.code !== 0) {
    expect(res.stderr).toContain("No such file or directory");
    return undefined;
  }
  return normalFromJson(res.stdout);
}

/** What an nft run said, comparably: success, and each error's line and message (hints aside). */
function outcome(code: number, stderr: string) {
  return {
    ok: code === 0,
    errors: parseNftErrors(stderr).map((e) => ({
      line: e.line,
      message: e.message.replace(/; did you mean .*$/, ""),
    })),
  };
}

/** The release `program --version` names, as one the fake speaks; throws for any other. */
function releaseOf(program: string): FakeNftVersion {
  const out = spawnSync(program, ["--version"], { encoding: "utf8" }).stdout ?? "";
  const v = /^nftables v(\S+)/.exec(out)?.[1] ?? out;
  if (!(v in FAKE_NFT_RELEASES))
    throw new Error(`${program} is nft ${v}; FakeNft speaks ${Object.keys(FAKE_NFT_RELEASES).join(" and ")}`);
  return v as FakeNftVersion;
}

const PROGRAMS: { label: string; program: () => string }[] = [
  { label: "the host's nft", program: () => "nft" },
  { label: "the image's nft", program: imageNftProgram },
  { label: "trixie's nft", program: () => suiteNftProgram("trixie") },
];

for (const { label, program } of PROGRAMS)
  describe(`FakeNft matches the real nft (fresh netns): ${label}`, () => {
    let ns: TestNetns;
    let fake = new FakeNft();
    let fakeExec = fake.install();

    beforeAll(
      async () => {
        const nft = program();
        fake = new FakeNft([], releaseOf(nft));
        fakeExec = fake.install();
        const inNs = await createTestNetns();
        // Every "nft" of this block is that program.
        ns = {
          ...inNs,
          exec: { run: (req) => inNs.exec.run(req.cmd === "nft" ? { ...req, cmd: nft } : req) },
        };
      },
      scaled(11 * 60_000),
    );
    afterAll(async () => {
      await ns?.remove();
    });

    test("the namespace starts without nftables tables", async () => {
      const res = await ns.exec.run({ cmd: "nft", args: ["list", "tables"] });
      expect(res.code).toBe(0);
      expect(res.stdout.trim()).toBe("");
    });

    for (const [i, s] of STEPS.entries()) {
      test(`step ${i + 1}: ${s.name}`, async () => {
        const args = s.check ? ["--check", "-f", "-"] : ["-f", "-"];
        const real = await ns.exec.run({ cmd: "nft", args, stdin: s.input });
        const mine = await fakeExec.run({ cmd: "nft", args, stdin: s.input });
        expect(outcome(mine.code, mine.stderr)).toEqual(outcome(real.code, real.stderr));
        expect(normalFromFake(fake)).toEqual(await readReal(ns.exec));
      });
    }

    test("the listings agree", async () => {
      await ns.exec.run({ cmd: "nft", args: ["-f", "-"], stdin: setup().render() });
      await fakeExec.run({ cmd: "nft", args: ["-f", "-"], stdin: setup().render() });
      for (const what of ["chains", "sets", "maps"]) {
        const args = ["--terse", "--json", "list", what, "ip"];
        const real = JSON.parse((await ns.exec.run({ cmd: "nft", args })).stdout) as { nftables: Json[] };
        const mine = JSON.parse((await fakeExec.run({ cmd: "nft", args })).stdout) as { nftables: Json[] };
        const strip = (doc: { nftables: Json[] }) =>
          doc.nftables.map((e) =>
            Object.fromEntries(
              Object.entries(e).map(([k, v]) => [
                k,
                { ...(v as Json), handle: undefined, timeout: undefined },
              ]),
            ),
          );
        expect(strip(mine)).toEqual(strip(real));
      }
      // The text listing the client reads chain names from.
      const chainsText = ["list", "chains", "ip"];
      const realText = (await ns.exec.run({ cmd: "nft", args: chainsText })).stdout;
      const mineText = (await fakeExec.run({ cmd: "nft", args: chainsText })).stdout;
      expect(parseNftChainNames(realText, "ip", "kube-proxy").length).toBeGreaterThan(3);
      expect(parseNftChainNames(mineText, "ip", "kube-proxy")).toEqual(
        parseNftChainNames(realText, "ip", "kube-proxy"),
      );
      const version = await ns.exec.run({ cmd: "nft", args: ["--version"] });
      expect((await fakeExec.run({ cmd: "nft", args: ["--version"] })).stdout).toBe(version.stdout);
    });
  });
