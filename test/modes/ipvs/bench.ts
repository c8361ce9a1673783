// Benchmark of the ipvs proxier against the stateful fakes: N Services x M endpoints (every
// fourth Service a NodePort on two node addresses, one endpoint of each on this node). For a cold
// full sync, a warm full sync and syncs after a single endpoint change it reports the commands
// run, the size of every batch, and time split into the proxier's own compute and the time spent
// in the host tools (here: the real clients formatting and parsing, and the fakes).
//
//   bun test/modes/ipvs/bench.ts [services...] [--endpoints=10] [--rounds=5] [--json]
//   (default sizes: 1000 10000)

import type { ExecRequest } from "../../../src/exec/types.ts";
import type { IpvsSyncStats } from "../../../src/modes/ipvs/proxier.ts";
import { endpointSlice, ep, type Setup, service, setup } from "./harness.ts";

export interface SyncSample {
  readonly stats: IpvsSyncStats;
  /** "program verb" -> calls during this sync. */
  readonly commands: Record<string, number>;
  readonly execCalls: number;
}

export interface BenchResult {
  readonly services: number;
  readonly endpointsPerService: number;
  readonly virtualServers: number;
  readonly realServers: number;
  readonly coldFull: SyncSample;
  readonly warmFull: SyncSample;
  readonly oneChange: SyncSample[];
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

function clusterIP(i: number): string {
  return `198.${18 + Math.floor(i / 65024)}.${Math.floor(i / 254) % 256}.${(i % 254) + 1}`;
}

function endpointsOf(i: number, n: number, salt = 0) {
  const base = `10.${(i >> 8) & 255}.${i & 255}`;
  return Array.from({ length: n }, (_, k) =>
    ep(`${base}.${k + 1 + salt}`, { node: k === 0 ? "node-a" : `node-${(k % 9) + 1}` }),
  );
}

export function populate(s: Setup, services: number, perService: number): void {
  for (let i = 0; i < services; i++) {
    const name = `svc${i}`;
    const nodePort =
      i % 4 === 0
        ? {
            type: "NodePort",
            ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30000 + ((i / 4) % 2768) }],
          }
        : {};
    s.cluster.apply(
      service(`ns${i % 50}`, name, { clusterIP: clusterIP(i), ...nodePort }),
      endpointSlice(`ns${i % 50}`, name, endpointsOf(i, perService)),
    );
  }
}

function commandCounts(calls: readonly ExecRequest[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of calls) {
    const verb = c.args.find((a) => !["-w", "5", "-o", "-force", "-n"].includes(a)) ?? "";
    const key = `${c.cmd} ${verb}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

async function sample(s: Setup): Promise<SyncSample> {
  const input = s.cluster.input();
  const before = s.host.exec.calls.length;
  await s.proxier.sync(input);
  const calls = s.host.exec.calls.slice(before);
  return { stats: s.proxier.lastSyncStats()!, commands: commandCounts(calls), execCalls: calls.length };
}

export async function runBench(services: number, perService = 10, rounds = 5): Promise<BenchResult> {
  const s = setup();
  populate(s, services, perService);
  const coldFull = await sample(s);
  s.proxier.requestFullSync();
  const warmFull = await sample(s);
  const oneChange: SyncSample[] = [];
  for (let r = 0; r < rounds; r++) {
    const i = (r * 7919) % services;
    // Replace one (remote) endpoint of one Service.
    const eps = endpointsOf(i, perService);
    eps[perService - 1] = ep(`10.${(i >> 8) & 255}.${i & 255}.${200 + r}`, { node: "node-9" });
    s.cluster.apply(endpointSlice(`ns${i % 50}`, `svc${i}`, eps));
    oneChange.push(await sample(s));
  }
  s.proxier.stop();
  const table = s.host.ipvs.services();
  return {
    services,
    endpointsPerService: perService,
    virtualServers: table.length,
    realServers: table.reduce((n, v) => n + v.reals.length, 0),
    coldFull,
    warmFull,
    oneChange,
  };
}

const ms = (n: number) => `${n.toFixed(1)} ms`;

function describeSample(label: string, x: SyncSample): string[] {
  const st = x.stats;
  const cmds = Object.entries(x.commands)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
  return [
    `  ${label}: compute ${ms(st.computeMs)}, host tools ${ms(st.hostMs)}, total ${ms(st.totalMs)}`,
    `    exec calls ${x.execCalls}: ${cmds}`,
    `    batches: ipvsadm --restore ${st.ipvsRestoreLines} lines, ipset restore ${st.ipsetRestoreLines} lines, ` +
      `ip -batch ${st.ipBatchLines} lines, iptables-restore ${st.iptablesRestoreBytes} bytes`,
  ];
}

export function formatBench(r: BenchResult): string {
  const change = r.oneChange;
  const mid = [...change].sort((a, b) => a.stats.computeMs - b.stats.computeMs)[
    Math.floor(change.length / 2)
  ]!;
  return [
    `${r.services} Services x ${r.endpointsPerService} endpoints: ${r.virtualServers} virtual servers, ${r.realServers} real servers`,
    ...describeSample("cold full sync", r.coldFull),
    ...describeSample("warm full sync", r.warmFull),
    ...describeSample(`one endpoint change (median of ${change.length})`, mid),
    `    one-change compute: median ${ms(median(change.map((c) => c.stats.computeMs)))}, ` +
      `max ${ms(Math.max(...change.map((c) => c.stats.computeMs)))} (target < 20 ms)`,
  ].join("\n");
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const flag = (name: string, def: number) => {
    const hit = args.find((a) => a.startsWith(`--${name}=`));
    return hit ? Number(hit.slice(name.length + 3)) : def;
  };
  const sizes = args.filter((a) => /^\d+$/.test(a)).map(Number);
  const results: BenchResult[] = [];
  for (const n of sizes.length > 0 ? sizes : [1000, 10_000]) {
    const r = await runBench(n, flag("endpoints", 10), flag("rounds", 5));
    results.push(r);
    if (!args.includes("--json")) console.log(formatBench(r));
  }
  if (args.includes("--json")) console.log(JSON.stringify(results, null, 2));
}
