// Upstream v1.37's TestSyncProxyRulesRepeated, judged through replay: the built binary replays
// the test's nine syncs as nine --state snapshots (upstream-repeated.ts) on one proxier, and
// each step's IPv4 iptables-restore input, sorted as upstream's assertIPTablesRulesEqual sorts
// (upstream-dump.ts), must equal upstream's expected dump for that sync
// (golden/upstream-1.37-repeated-step{1..9}.iptables, verbatim from kubernetes/kubernetes
// pkg/proxy/iptables/proxier_test.go @ 531be81208e2274ef42e72525a26610a9622bcdf). Upstream's
// fake proxier is reproduced with flags (--hostname-override=test-node, --cluster-cidr
// 10.0.0.0/8 as its local-traffic CIDR), the snapshots' Node and the first snapshot's HostState.
//
// The mappings, each for a reason that is not a difference in what the kernel ends up with:
// - marks: upstream's test proxier is handed "0x4000"; ours is written "0x00004000", as
//   upstream's real proxier formats it;
// - a partial sync that leaves the filter table as the kernel holds it writes an empty filter
//   section (src/modes/iptables/rule-set.ts: with --noflush that changes nothing); upstream
//   writes the whole table anyway. Such a step is compared with the filter table the replay
//   last wrote in that section's place;
// - step 8 is upstream calling syncProxyRules with nothing changed; the replay, like the daemon,
//   runs no sync then. Upstream's dump there rewrites only what the kernel already holds;
// - step 9: upstream's full sync follows a partial sync it made fail by injecting a rule into
//   its fake iptables, which no snapshot can express; the replay gets its full sync from a
//   change of the Node's labels in the same step (see upstream-repeated.ts).
// Upstream's rule-count metric checks are not judged here (a replay prints commands, not
// metrics); they, step 8's dump and the forced failure are, in process, in
// upstream-repeated-sync.test.ts.

import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { runBinaryAsync, tempDir } from "../../support/binary.ts";
import { scaled } from "../../support/kernel-vm.ts";
import { shortMarks, sortLikeUpstream } from "./upstream-dump.ts";
import { repeatedSnapshots, UPSTREAM_TEST_NODE } from "./upstream-repeated.ts";

const STEPS = 9;

/** An expected dump without its header (the source note). */
function golden(step: number): string {
  const text = readFileSync(
    join(import.meta.dir, "golden", `upstream-1.37-repeated-step${step}.iptables`),
    "utf8",
  );
  return text
    .split("\n")
    .filter((l) => !l.startsWith("#"))
    .join("\n");
}

/** The lines of one table ("*name" through its COMMIT), or undefined when the input has none. */
function tableOf(restore: string, name: string): string | undefined {
  const lines = restore.split("\n");
  const start = lines.indexOf(`*${name}`);
  if (start < 0) return undefined;
  const end = lines.indexOf("COMMIT", start);
  return `${lines.slice(start, end + 1).join("\n")}\n`;
}

/** Whether an input writes to the filter table (a partial sync may give it an empty section). */
function writesFilter(restore: string): boolean {
  const filter = tableOf(restore, "filter");
  return filter !== undefined && filter !== "*filter\nCOMMIT\n";
}

/** The input with its filter section (empty or absent) replaced by `filter`. */
function withFilter(restore: string, filter: string): string {
  const current = tableOf(restore, "filter");
  return current === undefined ? filter + restore : restore.replace(current, filter);
}

/** A dump without the Service and endpoint chains: what upstream rewrites when nothing changed. */
function withoutServiceChains(dump: string): string {
  return dump
    .split("\n")
    .filter((l) => !/^(?::|-A |-X )KUBE-(?:SVC|SEP|EXT|FW|SVL)-/.test(l))
    .join("\n");
}

interface Command {
  readonly argv: readonly string[];
  readonly stdin?: string;
}

const isIPv4Restore = (c: Command) => /^iptables(?:-legacy|-nft)?-restore$/.test(c.argv[0] ?? "");

const dir = tempDir("kpts-upstream-repeated-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let replayed: Promise<Command[][]> | undefined;

/** The replay's commands, step by step (the binary runs once for all the tests here). */
function replay(): Promise<Command[][]> {
  replayed ??= (async () => {
    const files = repeatedSnapshots().map((docs, i) => {
      const f = join(dir, `step${i + 1}.yaml`);
      writeFileSync(f, docs.map((d) => stringify(d)).join("---\n"));
      return f;
    });
    const args = [
      "--dry-run",
      "--output=json",
      "--proxy-mode=iptables",
      `--hostname-override=${UPSTREAM_TEST_NODE}`,
      "--cluster-cidr=10.0.0.0/8,fd00:10::/64",
      ...files.flatMap((f) => ["--state", f]),
    ];
    const r = await runBinaryAsync(args, { timeoutMs: 60_000 });
    if (r.code !== 0) throw new Error(`replay exited ${r.code}: ${r.stderr}`);
    const out = JSON.parse(r.stdout) as { steps: { commands: Command[] }[] };
    return out.steps.map((s) => s.commands);
  })();
  return replayed;
}

/** The IPv4 restore input of a step (exactly one restore per synced step). */
function restoreOf(steps: Command[][], step: number): string {
  const restores = (steps[step - 1] ?? []).filter(isIPv4Restore);
  expect({ step, restores: restores.length }).toEqual({ step, restores: 1 });
  return restores[0]?.stdin ?? "";
}

/** The filter table the kernel holds before a step: the last one the replay wrote. */
function heldFilter(steps: Command[][], step: number): string {
  for (let i = step - 1; i >= 1; i--) {
    if (i === 8) continue; // no sync at step 8
    const restore = restoreOf(steps, i);
    if (writesFilter(restore)) return tableOf(restore, "filter") ?? "";
  }
  throw new Error(`no filter table written before step ${step}`);
}

describe("iptables: upstream v1.37's TestSyncProxyRulesRepeated, through replay", () => {
  test("the expected dumps are already in upstream's sorted order", () => {
    for (let step = 1; step <= STEPS; step++) {
      const expected = golden(step);
      expect({ step, sorted: sortLikeUpstream(expected) }).toEqual({ step, sorted: expected });
    }
  });

  test(
    "the replay has one step per upstream sync, and step 8 (nothing changed) runs no sync",
    async () => {
      const steps = await replay();
      expect(steps).toHaveLength(STEPS);
      expect(steps[7]).toEqual([]);
      // Upstream's sync there writes nothing the kernel does not hold after step 7.
      expect(golden(8)).toBe(withoutServiceChains(golden(7)));
    },
    scaled(90_000),
  );

  for (const step of [1, 2, 3, 4, 5, 6, 7, 9]) {
    test(
      `step ${step}: the restore input equals upstream's expected dump ${step}`,
      async () => {
        const steps = await replay();
        let ours = restoreOf(steps, step);
        const fullSync = step === 1 || step === 9;
        if (!writesFilter(ours)) {
          // Left out only by a partial sync, and only when upstream's filter table is unchanged.
          expect(fullSync).toBe(false);
          expect(tableOf(golden(step), "filter")).toBe(tableOf(golden(step - 1), "filter"));
          ours = withFilter(ours, heldFilter(steps, step));
        }
        expect(sortLikeUpstream(shortMarks(ours))).toBe(golden(step));
      },
      scaled(90_000),
    );
  }

  test(
    "a partial step leaves the filter table out exactly where upstream's does not change",
    async () => {
      const steps = await replay();
      const leftOut = [2, 3, 4, 5, 6, 7].filter((s) => !writesFilter(restoreOf(steps, s)));
      const unchanged = [2, 3, 4, 5, 6, 7].filter(
        (s) => tableOf(golden(s), "filter") === tableOf(golden(s - 1), "filter"),
      );
      expect(leftOut).toEqual(unchanged);
      expect(leftOut).toEqual([2, 3, 6, 7]);
    },
    scaled(90_000),
  );
});
