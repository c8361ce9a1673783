// Upstream v1.37's TestSyncProxyRulesRepeated as upstream runs it, in process: the proxier of
// upstream's fake node (upstream-proxier.ts) is handed the test's changes one by one, and each
// sync's restore input must equal upstream's expected dump (the golden files the replay test,
// upstream-repeated.test.ts, is judged against). This covers what a replay cannot express: the
// sync with nothing changed (step 8), the partial sync upstream makes fail with a dangling jump
// it puts into the tables, the full sync that recovers (step 9), and upstream's rule-count
// metrics after every sync. The mappings are the replay test's: marks written short, and a
// partial sync's empty filter section compared as the filter table the kernel holds.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { shortMarks, sortLikeUpstream } from "./upstream-dump.ts";
import { upstreamProxier } from "./upstream-proxier.ts";
import { REPEATED } from "./upstream-repeated.ts";

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

function filterSection(restore: string): string | undefined {
  const lines = restore.split("\n");
  const start = lines.indexOf("*filter");
  if (start < 0) return undefined;
  return `${lines.slice(start, lines.indexOf("COMMIT", start) + 1).join("\n")}\n`;
}

/** Rules ("-A") upstream's countRules finds in the nat table of a dump. */
function natRules(dump: string): number {
  const lines = dump.split("\n");
  const start = lines.indexOf("*nat");
  return lines.slice(start, lines.indexOf("COMMIT", start)).filter((l) => l.startsWith("-A ")).length;
}

async function gauge(metric: { get(): Promise<{ values: { value: number; labels: object }[] }> }) {
  const v = (await metric.get()).values.find((x) => (x.labels as Record<string, unknown>).table === "nat");
  return v?.value ?? 0;
}

describe("iptables: upstream v1.37's TestSyncProxyRulesRepeated, in process", () => {
  test("every sync equals upstream's expected dump, and the rule-count metrics agree", async () => {
    const s = upstreamProxier();
    const { svc1, svc2, svc3, svc4, eps1, eps2, eps3, eps3update, eps3update2, eps4 } = REPEATED;
    let heldFilter = "";
    let rulesTotal = 0;
    const judge = async (step: number, payload: string, totalChange: number) => {
      let ours = payload;
      const filter = filterSection(ours);
      if (filter === undefined || filter === "*filter\nCOMMIT\n") {
        // A partial sync leaving the filter table as the kernel holds it.
        ours = filter === undefined ? heldFilter + ours : ours.replace(filter, heldFilter);
      } else heldFilter = filter;
      expect({ step, dump: sortLikeUpstream(shortMarks(ours)) }).toEqual({ step, dump: golden(step) });
      expect({ step, last: await gauge(s.metrics.iptablesRulesLastSync) }).toEqual({
        step,
        last: natRules(golden(step)),
      });
      rulesTotal += totalChange;
      expect({ step, total: await gauge(s.metrics.iptablesRulesTotal) }).toEqual({ step, total: rulesTotal });
    };

    s.cluster.apply(svc1, svc2, eps1, eps2);
    await judge(1, await s.sync(), natRules(golden(1)));

    s.cluster.apply(svc3, eps3);
    await judge(2, await s.sync(), 5);

    s.cluster.remove(svc2);
    await judge(3, await s.sync(), -5);

    s.cluster.apply(svc4);
    await judge(4, await s.sync(), 0);

    s.cluster.apply(eps4);
    await judge(5, await s.sync(), 5);

    s.cluster.apply(eps3update);
    await judge(6, await s.sync(), 0);

    s.cluster.apply(eps3update2);
    await judge(7, await s.sync(), 3);

    // Nothing changed: upstream's dump 8 only rewrites what the kernel holds.
    await judge(8, await s.sync(), 0);

    // A jump from svc3's chain to svc4's endpoint chain, which the partial sync deleting svc4
    // does not rewrite: its restore fails, and the retry is a full sync.
    expect(s.ipt.chains("nat")).toContain("KUBE-SEP-AYCN5HPXMIRJNJXU");
    await s.ipt.ensureRule("append", "nat", "KUBE-SVC-X27LE4BHSL4DOUIK", ["-j", "KUBE-SEP-AYCN5HPXMIRJNJXU"]);
    s.cluster.remove(svc4);
    // The kernel refuses to delete a chain something still jumps to.
    await expect(s.sync()).rejects.toThrow("chain KUBE-SEP-AYCN5HPXMIRJNJXU");
    expect(s.ipt.chains("nat")).toContain("KUBE-SEP-AYCN5HPXMIRJNJXU");
    const failures = (await s.metrics.iptablesPartialRestoreFailures.get()).values;
    expect(failures.reduce((n, v) => n + v.value, 0)).toBe(1);

    await judge(9, await s.sync(), natRules(golden(9)) - rulesTotal);
    expect(rulesTotal).toBe(18);
  });
});
