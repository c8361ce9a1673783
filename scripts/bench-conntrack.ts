// Benchmarks the conntrack reconciler: 10,000 UDP Services × 10 endpoints (the
// worst case: every Service a reconciled one) against a real conntrack table of 100,000 UDP flows
// in a network namespace made for it and always deleted. Most flows go to serving endpoints, a
// few hundred are stale (answered by endpoints no Service has any more). Prints medians of the
// phases: the desired state (the only part on a sync's own path: the pass runs after the sync
// returns), `conntrack -L`, parsing, the stale filters, then a whole pass with its deletes and a
// second pass with nothing stale (the steady state).
//
// Usage (as root): scripts/bench-conntrack [--services N] [--endpoints N] [--flows N] [--runs N]
// Addresses: Services 198.18.0.0/17, endpoints from 198.18.64.0, clients 198.19.0.0/16.

import { execFileSync, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRealExec } from "../src/exec/runner.ts";
import type { Exec } from "../src/exec/types.ts";
import { createConntrackClient, parseFlows } from "../src/host/conntrack/client.ts";
import { nullLogger } from "../src/log/logger.ts";
import { desiredUDPState, reconcileConntrack, staleFlowFilters } from "../src/proxy/conntrack-cleanup.ts";
import { createMetrics } from "../src/proxy/metrics/metrics.ts";
import type { EndpointInfo, ServicePortInfo } from "../src/proxy/types.ts";
import { realClock } from "../src/util/clock.ts";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} needs a positive integer`);
  return v;
}

const SERVICES = arg("services", 10_000);
const ENDPOINTS = arg("endpoints", 10);
const FLOWS = arg("flows", 100_000);
const RUNS = arg("runs", 3);
const STALE = 300;
/** The stale flows' endpoints: pods that were deleted (each costs the tool one table walk). */
const GONE_ENDPOINTS = 10;

const v4 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
const SVC_BASE = (198 << 24) + (18 << 16);
const EP_BASE = SVC_BASE + 64 * 256;
const CLIENT_BASE = (198 << 24) + (19 << 16);

function cluster() {
  const services = new Map<string, ServicePortInfo>();
  const endpoints = new Map<string, EndpointInfo[]>();
  for (let i = 0; i < SERVICES; i++) {
    const id = `ns/svc-${i}:dns`;
    services.set(id, {
      name: { namespace: "ns", name: `svc-${i}`, port: "dns", protocol: "UDP" },
      id,
      clusterIPs: { IPv4: v4(SVC_BASE + i) },
      port: 53,
      protocol: "UDP",
      nodePort: 0,
      externalIPs: [],
      loadBalancerVIPs: [],
      loadBalancerSourceRanges: [],
      sessionAffinity: { type: "None", timeoutSeconds: 0 },
      externalPolicyLocal: false,
      internalPolicyLocal: false,
      healthCheckNodePort: 0,
      topologyMode: "",
      trafficDistribution: "",
      serviceType: "ClusterIP",
    });
    endpoints.set(
      id,
      Array.from({ length: ENDPOINTS }, (_, j) => {
        const ip = v4(EP_BASE + i * ENDPOINTS + j);
        return {
          endpoint: `${ip}:5353`,
          ip,
          port: 5353,
          family: "IPv4" as const,
          nodeName: "node-b",
          zone: "",
          isLocal: false,
          ready: true,
          serving: true,
          terminating: false,
          zoneHints: new Set<string>(),
          nodeHints: new Set<string>(),
        };
      }),
    );
  }
  return { services, endpoints };
}

/** conntrack --load-file lines: FLOWS UDP flows, STALE of them to no serving endpoint. */
function flowLines(): string {
  const lines: string[] = [];
  for (let f = 0; f < FLOWS; f++) {
    const stale = f < STALE;
    // The stale flows belong to GONE_ENDPOINTS Services, each of which lost one pod.
    const svc = stale ? f % GONE_ENDPOINTS : f % SERVICES;
    const client = v4(CLIENT_BASE + (f % 60_000));
    const sport = 1024 + Math.floor(f / 60_000);
    const ep = stale
      ? v4(EP_BASE + SERVICES * ENDPOINTS + (f % GONE_ENDPOINTS))
      : v4(EP_BASE + svc * ENDPOINTS + (f % ENDPOINTS));
    lines.push(
      `-I -p udp -s ${client} -d ${v4(SVC_BASE + svc)} --sport ${sport} --dport 53 --reply-src ${ep} --reply-dst ${client} --reply-port-src 5353 --reply-port-dst ${sport} --timeout 600`,
    );
  }
  return `${lines.join("\n")}\n`;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

function nsExec(ns: string): Exec {
  const real = createRealExec();
  return { run: (req) => real.run({ ...req, cmd: "ip", args: ["netns", "exec", ns, req.cmd, ...req.args] }) };
}

async function main(): Promise<void> {
  const ns = `kpts-bench-ct-${process.pid}`;
  execFileSync("ip", ["netns", "add", ns]);
  try {
    const { services, endpoints } = cluster();
    const file = join("/tmp", `${ns}.flows`);
    const exec = nsExec(ns);
    const client = createConntrackClient({ exec });
    const phases: Record<string, number[]> = {
      desired: [],
      list: [],
      parse: [],
      filters: [],
      reconcile: [],
      steady: [],
    };
    let deleted = 0;
    for (let r = 0; r < RUNS; r++) {
      execFileSync("ip", ["netns", "exec", ns, "conntrack", "-F"], { stdio: "ignore" });
      writeFileSync(file, flowLines());
      const load = spawnSync("ip", ["netns", "exec", ns, "conntrack", "--load-file", file], {
        stdio: "ignore",
      });
      if (load.status !== 0) throw new Error(`conntrack --load-file exited ${load.status}`);

      let t = performance.now();
      const desired = desiredUDPState(services, endpoints, "IPv4");
      phases.desired!.push(performance.now() - t);
      t = performance.now();
      const listed = await exec.run({ cmd: "conntrack", args: ["-L", "-f", "ipv4", "-p", "udp"] });
      phases.list!.push(performance.now() - t);
      t = performance.now();
      const flows = parseFlows(listed.stdout);
      phases.parse!.push(performance.now() - t);
      t = performance.now();
      const { filters } = staleFlowFilters(flows, desired, "IPv4");
      phases.filters!.push(performance.now() - t);
      if (flows.length !== FLOWS) throw new Error(`listed ${flows.length} flows, loaded ${FLOWS}`);

      const deps = { metrics: createMetrics(), log: nullLogger, clock: realClock };
      t = performance.now();
      const pass = await reconcileConntrack(
        client,
        { family: "IPv4", desired: desiredUDPState(services, endpoints, "IPv4") },
        deps,
      );
      deleted = pass.deleted;
      phases.reconcile!.push(performance.now() - t);
      // What the tool's walk missed while deleting goes in the next pass (the reconciler runs it at once).
      let missed = 0;
      for (let i = 0; i < 3; i++) {
        const next = await reconcileConntrack(
          client,
          { family: "IPv4", desired: desiredUDPState(services, endpoints, "IPv4") },
          deps,
        );
        missed += next.deleted;
        if (next.stale === 0) break;
      }
      if (missed > 0)
        console.log(`  (the first pass's walk missed ${missed} flows; the next pass deleted them)`);
      t = performance.now();
      const again = await reconcileConntrack(
        client,
        { family: "IPv4", desired: desiredUDPState(services, endpoints, "IPv4") },
        deps,
      );
      phases.steady!.push(performance.now() - t);
      if (again.stale !== 0) throw new Error(`stale flows remain: ${again.stale}`);
      if (filters.length !== GONE_ENDPOINTS)
        throw new Error(`${filters.length} filters for ${GONE_ENDPOINTS} gone endpoints`);
    }
    const ms = (k: string) => `${median(phases[k]!).toFixed(1)} ms`;
    console.log(
      `${SERVICES} UDP Services x ${ENDPOINTS} endpoints, ${FLOWS} UDP flows (${STALE} stale, to ${GONE_ENDPOINTS} deleted pods), median of ${RUNS}:`,
    );
    console.log(
      `  on the sync's path: the desired state ${ms("desired")} (the rest runs after the sync returns)`,
    );
    console.log(
      `  in the background: conntrack -L ${ms("list")}, parse ${ms("parse")}, stale filters ${ms("filters")}`,
    );
    console.log(
      `  a whole pass deleting ${deleted} flows: ${ms("reconcile")}; a pass with nothing stale: ${ms("steady")}`,
    );
  } finally {
    spawnSync("ip", ["netns", "del", ns]);
  }
}

await main();
