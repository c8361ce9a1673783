// Upstream's nftables mode leaves `table ip kube-proxy` and `table ip6 kube-proxy`. On a real
// kernel, in a namespace of its own: --cleanup deletes them (and only them), a second run is a
// no-op, --dry-run plans the delete only where a table exists, and an iptables-mode start removes
// them unless the NFTablesProxyMode gate is switched off.

import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { BINARY, ensureBinary } from "../support/binary.ts";
import { scaled } from "../support/kernel-vm.ts";

const ns = `kpts-${process.pid.toString(36)}-${randomBytes(3).toString("hex")}-nft`;
const inNs = (argv: string[]) =>
  spawnSync("ip", ["netns", "exec", ns, ...argv], { encoding: "utf8", timeout: scaled(30_000) });
const tables = () => inNs(["nft", "list", "tables"]).stdout.trim().split("\n").filter(Boolean).sort();
const UPSTREAM = ["table ip kube-proxy", "table ip6 kube-proxy"];

function createUpstreamTables(): void {
  for (const family of ["ip", "ip6"]) {
    expect(inNs(["nft", "add", "table", family, "kube-proxy"]).status).toBe(0);
    // Something inside, as upstream's mode would have: the whole table must go.
    expect(inNs(["nft", "add", "chain", family, "kube-proxy", "services"]).status).toBe(0);
  }
}

afterAll(() => {
  spawnSync("ip", ["netns", "del", ns], { timeout: scaled(10_000) });
});

describe("cleanup of upstream's nftables mode on a real kernel", () => {
  test("--cleanup deletes both kube-proxy tables, keeps others, and a second run is a no-op", () => {
    ensureBinary();
    expect(spawnSync("ip", ["netns", "add", ns], { timeout: scaled(10_000) }).status).toBe(0);
    createUpstreamTables();
    expect(inNs(["nft", "add", "table", "inet", "other"]).status).toBe(0);

    const planned = inNs([BINARY, "--cleanup", "--dry-run"]);
    expect(planned.status).toBe(0);
    expect(planned.stdout).toContain("nft delete table ip kube-proxy");
    expect(planned.stdout).toContain("nft delete table ip6 kube-proxy");
    // A dry run changes nothing.
    expect(tables()).toEqual([...UPSTREAM, "table inet other"].sort());

    const first = inNs([BINARY, "--cleanup"]);
    expect({ code: first.status, stderr: first.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(tables()).toEqual(["table inet other"]);

    const second = inNs([BINARY, "--cleanup"]);
    expect(second.status).toBe(0);
    expect(tables()).toEqual(["table inet other"]);
    // Nothing left to delete: the plan has no nft command at all.
    expect(inNs([BINARY, "--cleanup", "--dry-run"]).stdout).not.toContain("nft delete");
  });

  test("an iptables-mode start removes them; NFTablesProxyMode=false is refused (locked since 1.33) and changes nothing", () => {
    createUpstreamTables();
    const start = [
      BINARY,
      "--init-only",
      "--state",
      "examples/cluster.yaml",
      "--hostname-override",
      "node-a",
      "--conntrack-max-per-core=0",
    ];
    const gatedOff = inNs([...start, "--feature-gates=NFTablesProxyMode=false"]);
    expect(gatedOff.status).toBe(1);
    expect(gatedOff.stderr).toContain(
      "cannot set feature gate NFTablesProxyMode to false, feature is locked to true",
    );
    expect(tables()).toEqual([...UPSTREAM, "table inet other"].sort());

    const planned = inNs([BINARY, "--dry-run", "--state", "examples/cluster.yaml", "--output=json"]);
    const commands = (JSON.parse(planned.stdout) as { commands: { argv: string[] }[] }).commands;
    expect(commands.map((c) => c.argv.join(" "))).toEqual(
      expect.arrayContaining(["nft delete table ip kube-proxy", "nft delete table ip6 kube-proxy"]),
    );

    const run = inNs(start);
    expect(run.status).toBe(0);
    expect(run.stderr).toContain("Deleted the nftables table of upstream's nftables mode");
    expect(tables()).toEqual(["table inet other"]);
  });
});
