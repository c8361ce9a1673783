// Drift end to end (built binary, fake API server, real kernel in a netns): another program
// deletes what the proxy wrote (iptables: a rule of a Service's chain; nftables: a service-ips
// element and a rule of a Service's chain). GET /debug/drift names each difference, the full
// sync it asks for puts them back (the kernel is polled until it does), and
// kubeproxy_ts_drift_differences_total counts them. Then the same without asking: the periodic
// check (KPTS_DRIFT_CHECK_INTERVAL_MS) finds it, logs one line naming it, and it is repaired.
// And in nftables mode a whole Service chain deleted (with its element), which without drift
// checks came back only at the hourly full sync (test/e2e/nftables-outside-changes.test.ts).
//
// Run as root: `node_modules/.bin/bun test test/e2e/drift.test.ts`.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import {
  type ApiHarness,
  httpService,
  NODE_METRICS_URL,
  scrapeNode,
  setUpApiRun,
  tearDownApiRun,
  waitForAnswer,
} from "../support/e2e-api-harness.ts";
import type { NodeSpec, ServiceSpec } from "../support/e2e-cluster.ts";
import { E2E_TEST_TIMEOUT_MS, e2eTest } from "../support/e2e-harness.ts";
import { describeHttp, httpGet, metricValue } from "../support/e2e-http.ts";
import { NODE_NAME } from "../support/e2e-kubeproxy.ts";
import { scaled } from "../support/kernel-vm.ts";
import { ADDR, type PodSpec } from "../support/netns.ts";

const NODE: NodeSpec = { name: NODE_NAME, internalIP: ADDR.node, podCIDR: ADDR.nodePodCIDR };
const PODS: PodSpec[] = [{ name: "web1", ip: "203.0.113.31" }];
const FIRST = httpService("first", "198.51.100.51", "203.0.113.31");
const SECOND = httpService("second", "198.51.100.52", "203.0.113.31");
const METRIC = "kubeproxy_ts_drift_differences_total";

interface Difference {
  readonly kind: string;
  readonly what: string;
  readonly expected: string;
  readonly found: string;
}

interface Report {
  readonly mode: string;
  readonly skipped?: string;
  readonly differences: Difference[];
}

async function getDrift(h: ApiHarness): Promise<Report> {
  const r = await httpGet(h.topo!, "node", `${NODE_METRICS_URL}/debug/drift`, { timeoutMs: 20_000 });
  if (!r.ok || r.status !== 200) throw new Error(`GET /debug/drift: ${describeHttp(r)}`);
  return JSON.parse(r.body ?? "") as Report;
}

/** /debug/drift once nothing is pending (the start's syncs done): its answer. */
async function settledDrift(h: ApiHarness, limitMs: number): Promise<Report> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const report = await getDrift(h);
    if (report.skipped === undefined || Date.now() > deadline) return report;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function counted(h: ApiHarness, kind: string): Promise<number> {
  return metricValue(await scrapeNode(h), METRIC, { kind }) ?? 0;
}

/** Polls `restored` (reading the kernel) until it holds; throws with `what` at the deadline. */
async function until(restored: () => Promise<boolean>, what: string, limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await restored())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${limitMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function run(h: ApiHarness, argv: string[], stdin?: string): Promise<string> {
  return h.topo!.must("node", argv, { timeoutMs: 10_000, ...(stdin !== undefined ? { stdin } : {}) });
}

// ---- iptables -------------------------------------------------------------------------------

/** The KUBE-SVC chain KUBE-SERVICES sends `s`'s ClusterIP to. */
async function svcChainOf(h: ApiHarness, s: ServiceSpec): Promise<string> {
  const saved = await run(h, ["iptables-save", "-t", "nat"]);
  const rule = saved
    .split("\n")
    .find((l) => l.startsWith("-A KUBE-SERVICES ") && l.includes(`-d ${s.clusterIP}/32`));
  const chain = rule && / -j (KUBE-SVC-\S+)/.exec(rule)?.[1];
  if (!chain) throw new Error(`no KUBE-SERVICES rule for ${s.clusterIP}:\n${saved}`);
  return chain;
}

/** The last rule of `chain` (its jump to the endpoint), as iptables-save prints it. */
async function lastRule(h: ApiHarness, chain: string): Promise<string | undefined> {
  const saved = await run(h, ["iptables-save", "-t", "nat"]);
  return saved
    .split("\n")
    .filter((l) => l.startsWith(`-A ${chain} `))
    .pop();
}

/**
 * Deletes the last rule of `s`'s KUBE-SVC chain by its number, as an operator would: a chain
 * that only a sync of that Service rewrites (KUBE-SERVICES is rewritten by every sync).
 */
async function deleteSvcRule(h: ApiHarness, s: ServiceSpec): Promise<{ chain: string; rule: string }> {
  const chain = await svcChainOf(h, s);
  const rule = await lastRule(h, chain);
  const listed = await run(h, ["iptables", "-t", "nat", "-L", chain, "-n", "--line-numbers"]);
  const n = listed
    .split("\n")
    .map((l) => /^(\d+)\s/.exec(l)?.[1])
    .filter((x) => x !== undefined)
    .pop();
  if (!n || !rule) throw new Error(`no rule in ${chain}:\n${listed}`);
  await run(h, ["iptables", "-t", "nat", "-D", chain, n]);
  return { chain, rule };
}

// ---- nftables -------------------------------------------------------------------------------

/** The service chain service-ips sends `s` to. */
async function serviceChainOf(h: ApiHarness, s: ServiceSpec): Promise<string> {
  const map = await run(h, ["nft", "list", "map", "ip", "kube-proxy", "service-ips"]);
  const m = new RegExp(`${s.clusterIP.replaceAll(".", "\\.")} \\. tcp \\. 80 : goto (\\S+)`).exec(map);
  if (!m) throw new Error(`no service-ips element for ${s.clusterIP}:\n${map}`);
  return m[1]!.replace(/,$/, "");
}

async function hasServiceIPsElement(h: ApiHarness, s: ServiceSpec): Promise<boolean> {
  const map = await run(h, ["nft", "list", "map", "ip", "kube-proxy", "service-ips"]);
  return map.includes(`${s.clusterIP} . tcp . 80 `);
}

/** The rules of a chain (with their handles). */
async function chainRules(h: ApiHarness, chain: string): Promise<{ text: string; handle: string }[]> {
  const listed = await run(h, ["nft", "-a", "list", "chain", "ip", "kube-proxy", chain]);
  const out: { text: string; handle: string }[] = [];
  for (const line of listed.split("\n")) {
    const m = /^\s+(.*\S) # handle (\d+)$/.exec(line);
    if (m && !/^\s*(table|chain) /.test(line)) out.push({ text: m[1]!, handle: m[2]! });
  }
  return out;
}

/** Deletes `s`'s service-ips element and the last rule of its service chain in one nft run. */
async function deleteElementAndRule(
  h: ApiHarness,
  s: ServiceSpec,
): Promise<{ chain: string; rules: number }> {
  const chain = await serviceChainOf(h, s);
  const rules = await chainRules(h, chain);
  if (rules.length === 0) throw new Error(`${chain} holds no rule`);
  await run(
    h,
    ["nft", "-f", "-"],
    [
      `delete element ip kube-proxy service-ips { ${s.clusterIP} . tcp . 80 }`,
      `delete rule ip kube-proxy ${chain} handle ${rules[rules.length - 1]!.handle}`,
      "",
    ].join("\n"),
  );
  return { chain, rules: rules.length };
}

// ---- the cases --------------------------------------------------------------------------------

describe("nftables mode: drift, a deleted chain of an unchanged Service", () => {
  const LIMIT_MS = scaled(30_000);
  const h: ApiHarness = {};
  beforeAll(async () => {
    await setUpApiRun(h, {
      node: NODE,
      pods: PODS,
      client: true,
      services: [FIRST, SECOND],
      mode: "nftables",
      env: { KPTS_DRIFT_CHECK_INTERVAL_MS: "0" },
    });
    await waitForAnswer(h, SECOND, LIMIT_MS);
  }, E2E_TEST_TIMEOUT_MS);
  afterAll(() => tearDownApiRun(h), E2E_TEST_TIMEOUT_MS);

  e2eTest(
    h,
    "is named with its element, and the full sync drift asks for (not the hourly one) creates it again",
    async () => {
      expect(await settledDrift(h, LIMIT_MS)).toEqual({ mode: "nftables", differences: [] });
      const chain = await serviceChainOf(h, SECOND);
      const rules = (await chainRules(h, chain)).length;
      await run(
        h,
        ["nft", "-f", "-"],
        [
          `delete element ip kube-proxy service-ips { ${SECOND.clusterIP} . tcp . 80 }`,
          `flush chain ip kube-proxy ${chain}`,
          `delete chain ip kube-proxy ${chain}`,
          "",
        ].join("\n"),
      );
      const report = await getDrift(h);
      expect([...report.differences].sort((a, b) => a.kind.localeCompare(b.kind))).toEqual([
        expect.objectContaining({
          kind: "chain",
          what: `ip kube-proxy chain ${chain}`,
          expected: `${rules} rule${rules === 1 ? "" : "s"}`,
          found: "absent",
        }),
        expect.objectContaining({
          kind: "set-element",
          what: `ip kube-proxy service-ips { ${SECOND.clusterIP} . tcp . 80 }`,
          found: "absent",
        }),
      ]);
      await waitForAnswer(h, SECOND, LIMIT_MS);
      expect((await chainRules(h, chain)).length).toBe(rules);
      expect(await counted(h, "chain")).toBe(1);
      expect(await settledDrift(h, LIMIT_MS)).toEqual({ mode: "nftables", differences: [] });
    },
    LIMIT_MS * 4 + 30_000,
  );
});

for (const mode of ["iptables", "nftables"] as const)
  describe(`${mode} mode: drift`, () => {
    const LIMIT_MS = scaled(30_000);

    describe("GET /debug/drift", () => {
      const h: ApiHarness = {};
      beforeAll(async () => {
        await setUpApiRun(h, {
          node: NODE,
          pods: PODS,
          client: true,
          services: [FIRST, SECOND],
          mode,
          env: { KPTS_DRIFT_CHECK_INTERVAL_MS: "0" },
        });
        await waitForAnswer(h, FIRST, LIMIT_MS);
        await waitForAnswer(h, SECOND, LIMIT_MS);
      }, E2E_TEST_TIMEOUT_MS);
      afterAll(() => tearDownApiRun(h), E2E_TEST_TIMEOUT_MS);

      e2eTest(
        h,
        "names each deletion, the full sync it asks for puts them back, the metric counts them",
        async () => {
          const before = await settledDrift(h, LIMIT_MS);
          expect(before).toEqual({ mode, differences: [] });
          if (mode === "iptables") {
            const { chain, rule } = await deleteSvcRule(h, SECOND);
            const report = await getDrift(h);
            expect(report.mode).toBe("iptables");
            expect(report.differences).toEqual([
              expect.objectContaining({ kind: "rule", what: `nat ${chain}`, found: "absent" }),
            ]);
            expect(report.differences[0]!.expected).toContain("KUBE-SEP-");
            await until(async () => (await lastRule(h, chain)) === rule, "the rule back", LIMIT_MS);
            expect(await counted(h, "rule")).toBe(1);
          } else {
            const { chain, rules } = await deleteElementAndRule(h, SECOND);
            const report = await getDrift(h);
            expect(report.mode).toBe("nftables");
            const sorted = [...report.differences].sort((a, b) => a.kind.localeCompare(b.kind));
            expect(sorted).toEqual([
              expect.objectContaining({
                kind: "rule",
                what: `ip kube-proxy chain ${chain}`,
                expected: `${rules} rule${rules === 1 ? "" : "s"}`,
                found: `${rules - 1} rule${rules - 1 === 1 ? "" : "s"}`,
              }),
              expect.objectContaining({
                kind: "set-element",
                what: `ip kube-proxy service-ips { ${SECOND.clusterIP} . tcp . 80 }`,
                expected: `goto ${chain}`,
                found: "absent",
              }),
            ]);
            await until(
              async () =>
                (await hasServiceIPsElement(h, SECOND)) && (await chainRules(h, chain)).length === rules,
              "the element and the rule back",
              LIMIT_MS,
            );
            expect(await counted(h, "rule")).toBe(1);
            expect(await counted(h, "set-element")).toBe(1);
          }
          await waitForAnswer(h, SECOND, LIMIT_MS);
          expect(await settledDrift(h, LIMIT_MS)).toEqual({ mode, differences: [] });
          expect(h.kubeProxy!.stderr()).toMatch(/Kernel state drifted from what kube-proxy-ts wrote/);
        },
        LIMIT_MS * 5 + 30_000,
      );
    });

    describe("the periodic check", () => {
      const h: ApiHarness = {};
      beforeAll(async () => {
        await setUpApiRun(h, {
          node: NODE,
          pods: PODS,
          client: true,
          services: [FIRST, SECOND],
          mode,
          env: { KPTS_DRIFT_CHECK_INTERVAL_MS: String(scaled(1500)) },
        });
        await waitForAnswer(h, FIRST, LIMIT_MS);
        await waitForAnswer(h, SECOND, LIMIT_MS);
      }, E2E_TEST_TIMEOUT_MS);
      afterAll(() => tearDownApiRun(h), E2E_TEST_TIMEOUT_MS);

      e2eTest(
        h,
        "finds a deletion nobody asked about, logs a line naming it, counts it, and repairs it",
        async () => {
          // Past the start's full syncs (one may follow the Node's first sight), which would
          // rewrite the deletion before any check could see it.
          expect(await settledDrift(h, LIMIT_MS)).toEqual({ mode, differences: [] });
          if (mode === "iptables") {
            const { chain, rule } = await deleteSvcRule(h, SECOND);
            await until(async () => (await lastRule(h, chain)) === rule, "the rule back", LIMIT_MS);
            const line = await h.kubeProxy!.waitForOutput(/Kernel state drifted[^\n]*/, LIMIT_MS);
            expect(line[0]).toContain(`nat ${chain}`);
            expect(line[0]).toContain('kinds="rule=1"');
            expect(await counted(h, "rule")).toBe(1);
          } else {
            const { chain, rules } = await deleteElementAndRule(h, SECOND);
            await until(
              async () =>
                (await hasServiceIPsElement(h, SECOND)) && (await chainRules(h, chain)).length === rules,
              "the element and the rule back",
              LIMIT_MS,
            );
            const line = await h.kubeProxy!.waitForOutput(/Kernel state drifted[^\n]*/, LIMIT_MS);
            expect(line[0]).toContain(`service-ips { ${SECOND.clusterIP} . tcp . 80 }`);
            expect(line[0]).toContain(`chain ${chain}`);
            expect(await counted(h, "set-element")).toBe(1);
            expect(await counted(h, "rule")).toBe(1);
          }
          await waitForAnswer(h, SECOND, LIMIT_MS);
        },
        LIMIT_MS * 4 + 30_000,
      );
    });
  });
