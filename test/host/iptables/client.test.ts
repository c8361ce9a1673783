import { describe, expect, test } from "bun:test";
import { FakeExec, ok } from "../../../src/exec/testing/fake.ts";
import type { ExecRequest } from "../../../src/exec/types.ts";
import { createIptablesClient } from "../../../src/host/iptables/client.ts";
import { IptablesError, IptablesRestoreError } from "../../../src/host/iptables/errors.ts";
import { FakeIptables } from "../../../src/host/iptables/testing/fake.ts";
import type { IptablesBackend } from "../../../src/host/iptables/types.ts";
import { memoryLogger } from "../../../src/log/logger.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";

function setup(backend: IptablesBackend = "nft", family: IPFamily = "IPv4", version = "1.8.9") {
  const fake = new FakeIptables({ backend, version });
  const exec = fake.install(new FakeExec(), family);
  const client = createIptablesClient({ exec, family, backend });
  return { fake, exec, client };
}

const MASQ = ["-m", "comment", "--comment", "kubernetes service traffic requiring SNAT", "-j", "MASQUERADE"];

describe("binaries", () => {
  const cases: [IptablesBackend, IPFamily, string][] = [
    ["legacy", "IPv4", "iptables-legacy"],
    ["nft", "IPv4", "iptables-nft"],
    ["legacy", "IPv6", "ip6tables-legacy"],
    ["nft", "IPv6", "ip6tables-nft"],
  ];
  for (const [backend, family, base] of cases) {
    test(`${backend} ${family} runs ${base}, ${base}-save and ${base}-restore`, async () => {
      const { exec, client } = setup(backend, family);
      await client.ensureChain("nat", "KUBE-A");
      await client.save("nat");
      await client.restoreAll("*nat\nCOMMIT\n", { noFlush: true, counters: false });
      expect(new Set(exec.calls.map((c) => c.cmd))).toEqual(
        new Set([base, `${base}-save`, `${base}-restore`]),
      );
      expect(client.family).toBe(family);
      expect(client.backend).toBe(backend);
    });
  }
});

describe("client against FakeIptables", () => {
  for (const backend of ["legacy", "nft"] as const) {
    describe(backend, () => {
      test("ensureChain creates once, then reports it existed", async () => {
        const { fake, client } = setup(backend);
        expect(await client.ensureChain("nat", "KUBE-SERVICES")).toBe(false);
        expect(await client.ensureChain("nat", "KUBE-SERVICES")).toBe(true);
        expect(fake.chains("nat")).toContain("KUBE-SERVICES");
        expect(await client.chainExists("nat", "KUBE-SERVICES")).toBe(true);
        expect(await client.chainExists("nat", "KUBE-NOPE")).toBe(false);
      });

      test("ensureRule appends or prepends once; deleteRule removes and tolerates absence", async () => {
        const { fake, client } = setup(backend);
        await client.ensureChain("nat", "KUBE-POSTROUTING");
        expect(await client.ensureRule("append", "nat", "KUBE-POSTROUTING", MASQ)).toBe(false);
        expect(await client.ensureRule("append", "nat", "KUBE-POSTROUTING", MASQ)).toBe(true);
        expect(await client.ensureRule("prepend", "nat", "KUBE-POSTROUTING", ["-j", "RETURN"])).toBe(false);
        expect(fake.rules("nat", "KUBE-POSTROUTING")).toEqual([
          "-j RETURN",
          '-m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE',
        ]);
        await client.deleteRule("nat", "KUBE-POSTROUTING", MASQ);
        await client.deleteRule("nat", "KUBE-POSTROUTING", MASQ);
        expect(fake.rules("nat", "KUBE-POSTROUTING")).toEqual(["-j RETURN"]);
      });

      test("ensureRule of a rule known to be absent inserts it without checking", async () => {
        const { fake, exec, client } = setup(backend);
        await client.ensureChain("nat", "KUBE-SERVICES");
        const before = exec.calls.length;
        const jump = ["-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"];
        expect(await client.ensureRule("prepend", "nat", "OUTPUT", jump, { absent: true })).toBe(false);
        expect(exec.calls.slice(before).map((c) => c.args.find((a) => a === "-C" || a === "-I"))).toEqual([
          "-I",
        ]);
        expect(fake.rules("nat", "OUTPUT")).toEqual([
          '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        ]);
      });

      test("flushChain empties; deleteChain removes and ignores a missing chain", async () => {
        const { fake, client } = setup(backend);
        await client.ensureChain("filter", "KUBE-FW");
        await client.ensureRule("append", "filter", "KUBE-FW", ["-j", "DROP"]);
        await client.flushChain("filter", "KUBE-FW");
        expect(fake.rules("filter", "KUBE-FW")).toEqual([]);
        await client.deleteChain("filter", "KUBE-FW");
        await client.deleteChain("filter", "KUBE-FW");
        expect(fake.hasChain("filter", "KUBE-FW")).toBe(false);
      });

      test("deleteChain of a referenced chain is an error, not silently ignored", async () => {
        const { fake, client } = setup(backend);
        await client.ensureChain("nat", "KUBE-MARK-MASQ");
        await client.ensureRule("append", "nat", "OUTPUT", ["-j", "KUBE-MARK-MASQ"]);
        const err = await client.deleteChain("nat", "KUBE-MARK-MASQ").catch((e) => e);
        expect(err).toBeInstanceOf(IptablesError);
        expect(err.exitCode).toBe(backend === "nft" ? 4 : 1);
        // No -W is passed (upstream 1.34), so 1.8.9 has no --wait-interval notice to print.
        expect(err.stderr).not.toContain("--wait-interval");
        expect(err.message).toContain(backend === "nft" ? "CHAIN_DEL failed" : "Too many links");
        expect(fake.hasChain("nat", "KUBE-MARK-MASQ")).toBe(true);
      });

      test("flushChain of a missing chain fails with the tool's exit code", async () => {
        const { client } = setup(backend);
        const err = await client.flushChain("nat", "KUBE-NOPE").catch((e) => e);
        expect(err).toBeInstanceOf(IptablesError);
        expect(err.exitCode).toBe(1);
        expect(err.isNotFound()).toBe(true);
      });

      test("restoreAll applies; save and saveAll print iptables-save text", async () => {
        const { fake, client } = setup(backend);
        await client.restoreAll(
          "*nat\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n*filter\n:KUBE-FW - [0:0]\nCOMMIT\n",
          { noFlush: false, counters: false },
        );
        expect(fake.rules("nat", "PREROUTING")).toEqual(["-j KUBE-SERVICES"]);
        const nat = await client.save("nat");
        expect(nat).toMatch(/^# Generated by /);
        expect(nat).toContain("*nat\n:PREROUTING ACCEPT [0:0]\n");
        expect(nat).toContain(
          ":KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n# Completed on ",
        );
        expect(nat).not.toContain("*filter");
        const all = await client.saveAll();
        expect(all).toContain("*filter");
        expect(all).toContain("*nat");
      });

      test("a rejected restore is an IptablesRestoreError with the line and context; nothing applied", async () => {
        const { fake, client } = setup(backend);
        const input = "*nat\n:KUBE-SVC-A - [0:0]\n-A KUBE-SVC-A -j KUBE-SEP-GONE\nCOMMIT\n";
        const err = await client.restoreAll(input, { noFlush: true, counters: false }).catch((e) => e);
        expect(err).toBeInstanceOf(IptablesRestoreError);
        expect(err.exitCode).toBe(2);
        // Legacy blames the rule, nft the COMMIT that ends its table.
        expect(err.line).toBe(backend === "legacy" ? 3 : 4);
        expect(err.context.find((l: { line: number }) => l.line === err.line)?.text).toBe(
          backend === "legacy" ? "-A KUBE-SVC-A -j KUBE-SEP-GONE" : "COMMIT",
        );
        expect(fake.hasChain("nat", "KUBE-SVC-A")).toBe(false);
      });

      test("an input in pieces is restored as its text, the pieces handed to the tool unjoined", async () => {
        const fake = new FakeIptables({ backend });
        const inner = fake.install(new FakeExec(), "IPv4");
        const stdins: unknown[] = [];
        const exec = {
          run: (req: ExecRequest) => {
            stdins.push(req.stdin);
            return inner.run(req);
          },
        };
        const client = createIptablesClient({ exec, family: "IPv4", backend });
        const pieces = ["*nat\n:KUBE-SERV", "ICES - [0:0]\n-A PREROUTING", " -j KUBE-SERVICES\nCOMMIT\n"];
        await client.restoreAll(pieces, { noFlush: false, counters: false });
        expect(fake.rules("nat", "PREROUTING")).toEqual(["-j KUBE-SERVICES"]);
        // The very array: the exec layer writes it piece by piece.
        expect(stdins).toContain(pieces);
        const restore = inner.calls.find((c) => c.cmd.endsWith("-restore") && c.args[0] !== "--version");
        expect(restore?.stdin).toBe(pieces.join(""));
      });

      test("a rejected input in pieces names its line and context as its text would", async () => {
        const { client } = setup(backend);
        const pieces = ["*nat\n:KUBE-SVC-A - [0:0]\n-A KUBE-SVC-A", " -j KUBE-SEP-GONE\n", "COMMIT\n"];
        const err = await client.restoreAll(pieces, { noFlush: true, counters: false }).catch((e) => e);
        const whole = await setup(backend)
          .client.restoreAll(pieces.join(""), { noFlush: true, counters: false })
          .catch((e) => e);
        expect(err).toBeInstanceOf(IptablesRestoreError);
        expect(err.line).toBe(whole.line);
        expect(err.context).toEqual(whole.context);
        expect(err.context.map((l: { text: string }) => l.text)).toContain("-A KUBE-SVC-A -j KUBE-SEP-GONE");
      });

      test("pieces made as they are read restore as their text; a rejection reads them again for its context", async () => {
        // A line at a time, made on each read, counting the reads.
        const madeAsRead = (lines: readonly string[]) => {
          const input = {
            reads: 0,
            *[Symbol.iterator]() {
              input.reads++;
              for (const line of lines) yield `${line}\n`;
            },
          };
          return input;
        };
        const bad = ["*nat", ":KUBE-SVC-A - [0:0]", "-A KUBE-SVC-A -j KUBE-SEP-GONE", "COMMIT"];
        const made = madeAsRead(bad);
        const err = await setup(backend)
          .client.restoreAll(made, { noFlush: true, counters: false })
          .catch((e) => e);
        const whole = await setup(backend)
          .client.restoreAll(`${bad.join("\n")}\n`, { noFlush: true, counters: false })
          .catch((e) => e);
        expect(err).toBeInstanceOf(IptablesRestoreError);
        expect(err.line).toBe(whole.line);
        expect(err.context).toEqual(whole.context);
        expect(made.reads).toBe(2);
        const { fake, client } = setup(backend);
        await client.restoreAll(
          madeAsRead(["*nat", ":KUBE-SVC-A - [0:0]", "-A KUBE-SVC-A -j ACCEPT", "COMMIT"]),
          {
            noFlush: true,
            counters: false,
          },
        );
        expect(fake.rules("nat", "KUBE-SVC-A")).toEqual(["-j ACCEPT"]);
      });

      test("failNextRestore injects one failure at a chosen line", async () => {
        const { fake, client } = setup(backend);
        fake.failNextRestore(2, "synthetic");
        const input = "*filter\n:KUBE-A - [0:0]\nCOMMIT\n";
        const err = await client.restoreAll(input, { noFlush: true, counters: false }).catch((e) => e);
        expect(err).toBeInstanceOf(IptablesRestoreError);
        expect(err.line).toBe(2);
        expect(err.reason).toBe("synthetic");
        expect(fake.hasChain("filter", "KUBE-A")).toBe(false);
        await client.restoreAll(input, { noFlush: true, counters: false });
        expect(fake.hasChain("filter", "KUBE-A")).toBe(true);
      });

      test("--counters restores rule counters", async () => {
        const { fake, client } = setup(backend);
        await client.restoreAll("*filter\n:KUBE-A - [0:0]\n[3:180] -A KUBE-A -j ACCEPT\nCOMMIT\n", {
          noFlush: false,
          counters: true,
        });
        expect(fake.ruleCounters("filter", "KUBE-A", 1)).toEqual({ packets: 3, bytes: 180 });
      });
    });
  }

  test("IPv6 rules get /128 host prefixes, so -C matches either spelling", async () => {
    const { fake, client } = setup("nft", "IPv6");
    await client.ensureChain("nat", "KUBE-SERVICES");
    expect(await client.ensureRule("append", "nat", "KUBE-SERVICES", ["-d", "fd00::1", "-j", "RETURN"])).toBe(
      false,
    );
    expect(
      await client.ensureRule("append", "nat", "KUBE-SERVICES", ["-d", "fd00::1/128", "-j", "RETURN"]),
    ).toBe(true);
    expect(fake.rules("nat", "KUBE-SERVICES")).toEqual(["-d fd00::1/128 -j RETURN"]);
  });
});

describe("lock flags", () => {
  const cases: [string, string[], string[]][] = [
    ["1.8.9", ["-w", "5"], ["-w", "5"]],
    ["1.6.2", ["-w", "5"], ["-w", "5"]],
    ["1.6.1", ["-w", "5"], ["-w"]],
    ["1.4.21", ["-w"], ["-w"]],
  ];
  for (const [version, iptablesFlags, restoreFlags] of cases) {
    test(`iptables ${version}: ${iptablesFlags.join(" ")} / restore ${restoreFlags.join(" ")}`, async () => {
      const { exec, client } = setup("legacy", "IPv4", version);
      await client.ensureChain("nat", "KUBE-A");
      await client.restoreAll("*nat\nCOMMIT\n", { noFlush: true, counters: true });
      expect(exec.callsTo("iptables-legacy").at(-1)?.args).toEqual([
        ...iptablesFlags,
        "-N",
        "KUBE-A",
        "-t",
        "nat",
      ]);
      expect(exec.callsTo("iptables-legacy-restore").at(-1)?.args).toEqual([
        ...restoreFlags,
        "--noflush",
        "--counters",
      ]);
    });
  }

  test("the version is read once", async () => {
    const { exec, client } = setup("nft");
    await client.ensureChain("nat", "A");
    await client.ensureChain("nat", "B");
    expect(await client.version()).toBe("1.8.9");
    expect(exec.calls.filter((c) => c.args[0] === "--version")).toHaveLength(1);
  });

  test("an unreadable version falls back to upstream's 1.4.11 (no -w) and is retried later", async () => {
    const logger = memoryLogger();
    const exec = new FakeExec({
      "iptables-nft": () => ok("something else\n"),
      "iptables-nft-restore": () => ok(""),
    });
    const client = createIptablesClient({ exec, family: "IPv4", backend: "nft", logger });
    await client.ensureChain("nat", "KUBE-A");
    expect(exec.callsTo("iptables-nft").at(-1)?.args).toEqual(["-N", "KUBE-A", "-t", "nat"]);
    expect(logger.lines.join("\n")).toContain("Error checking iptables version");
    await expect(client.version()).rejects.toBeInstanceOf(IptablesError);
    expect(await client.hasRandomFully()).toBe(false);
    expect(exec.callsTo("iptables-nft").filter((c) => c.args[0] === "--version").length).toBeGreaterThan(1);
  });

  test("a held xtables lock fails legacy commands with exit 4, a resource problem", async () => {
    const { fake, client } = setup("legacy");
    fake.holdLock();
    const err = await client.ensureChain("nat", "KUBE-A").catch((e) => e);
    expect(err).toBeInstanceOf(IptablesError);
    expect(err.isResourceProblem).toBe(true);
    const rerr = await client
      .restoreAll("*nat\nCOMMIT\n", { noFlush: true, counters: false })
      .catch((e) => e);
    expect(rerr).toBeInstanceOf(IptablesRestoreError);
    expect(rerr.isResourceProblem).toBe(true);
    expect(rerr.line).toBeUndefined();
    fake.holdLock(false);
    expect(await client.ensureChain("nat", "KUBE-A")).toBe(false);
  });
});

describe("version and hasRandomFully", () => {
  test("parse the backend binary's --version", async () => {
    expect(await setup("legacy", "IPv4", "1.8.9").client.version()).toBe("1.8.9");
    expect(await setup("nft", "IPv4", "1.8.9").client.hasRandomFully()).toBe(true);
    expect(await setup("legacy", "IPv4", "1.6.1").client.hasRandomFully()).toBe(false);
    expect(await setup("legacy", "IPv4", "1.6.2").client.hasRandomFully()).toBe(true);
  });
});
