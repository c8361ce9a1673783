import { describe, expect, test } from "bun:test";
import { FakeExec, fail, ok } from "../../../src/exec/testing/fake.ts";
import { createNftClient, parseNftTables } from "../../../src/host/nft/client.ts";
import { FakeNft } from "../../../src/host/nft/testing/fake.ts";
import { memoryLogger } from "../../../src/log/logger.ts";
import { cleanupNftables, nftablesProxyModeEnabled } from "../../../src/modes/nftables/cleanup.ts";

/** A stand-in nft holding a set of "family name" tables. */
function fakeNft(initial: string[]) {
  const fake = new FakeNft(initial);
  const exec = fake.install();
  return { tables: () => fake.tableNames(), exec, nft: createNftClient({ exec }) };
}

describe("nftables cleanup", () => {
  test("parses nft list tables", () => {
    expect(parseNftTables("table ip kube-proxy\ntable inet filter\n\n")).toEqual([
      { family: "ip", name: "kube-proxy" },
      { family: "inet", name: "filter" },
    ]);
  });

  test("deletes the ip and ip6 kube-proxy tables only", async () => {
    const f = fakeNft(["ip kube-proxy", "ip6 kube-proxy", "inet kube-proxy", "ip filter"]);
    expect(await cleanupNftables(f.nft, memoryLogger())).toBe(true);
    expect(f.tables().sort()).toEqual(["inet kube-proxy", "ip filter"]);
  });

  test("absent tables: nothing is deleted (no delete command is even issued)", async () => {
    const f = fakeNft(["ip filter"]);
    expect(await cleanupNftables(f.nft, memoryLogger())).toBe(true);
    expect(f.exec.callsTo("nft").map((c) => c.args[0])).toEqual(["list"]);
  });

  test("a table gone between list and delete is not an error", async () => {
    const f = fakeNft(["ip kube-proxy"]);
    const racing = createNftClient({
      exec: new FakeExec({
        nft: (req) =>
          req.args[0] === "list"
            ? ok("table ip kube-proxy\n")
            : f.exec.run({ ...req, args: ["delete", "table", "ip", "gone"] }),
      }),
    });
    expect(await cleanupNftables(racing, memoryLogger())).toBe(true);
  });

  test("no nft binary: logged, and the cleanup goes on as a success", async () => {
    const log = memoryLogger({ verbosity: 2 });
    expect(await cleanupNftables(createNftClient({ exec: new FakeExec() }), log)).toBe(true);
    expect(log.lines.some((l) => l.includes("nft is not installed"))).toBe(true);
  });

  test("a kernel without nf_tables has nothing to clean", async () => {
    const exec = new FakeExec({
      nft: () => fail(1, "Error: Could not process rule: Operation not supported\n"),
    });
    expect(await cleanupNftables(createNftClient({ exec }), memoryLogger())).toBe(true);
  });

  test("a delete that fails otherwise is an error (logged, reported)", async () => {
    const exec = new FakeExec({
      nft: (req) =>
        req.args[0] === "list"
          ? ok("table ip kube-proxy\n")
          : fail(1, "Error: Could not process rule: Permission denied\n"),
    });
    const log = memoryLogger();
    expect(await cleanupNftables(createNftClient({ exec }), log)).toBe(false);
    expect(log.lines.some((l) => l.startsWith("E") && l.includes("Permission denied"))).toBe(true);
  });

  test("the NFTablesProxyMode gate is on (GA, locked since 1.33: AllBeta no longer touches it)", () => {
    expect(nftablesProxyModeEnabled({})).toBe(true);
    expect(nftablesProxyModeEnabled({ NFTablesProxyMode: true })).toBe(true);
    expect(nftablesProxyModeEnabled({ NFTablesProxyMode: false })).toBe(false);
    expect(nftablesProxyModeEnabled({ AllBeta: false })).toBe(true);
  });
});
