// Compute-time benchmark of the iptables proxier: N Services x M endpoints, one cold full sync,
// warm full syncs, then partial syncs after a single endpoint change. The restore itself is
// stubbed (iptables-restore time is the kernel's, not ours), so the numbers are what the brief
// budgets: full < 370 ms and partial < 20 ms at 10,000 x 10.
//
//   bun test/modes/iptables/bench.ts [services=10000] [endpointsPerService=10] [--json]

import { endpointSlice, ep, service, setup } from "./harness.ts";

export interface BenchResult {
  readonly services: number;
  readonly endpointsPerService: number;
  /** The largest restore input (a full sync). */
  readonly payloadBytes: number;
  readonly coldFullMs: number;
  readonly fullMs: number[];
  readonly partialMs: number[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

function populate(s: ReturnType<typeof setup>, services: number, perService: number): void {
  for (let i = 0; i < services; i++) {
    const hi = (i >> 8) & 255;
    const lo = i & 255;
    const nodePort = i % 3 === 0 ? { nodePort: 30000 + (i % 2000) } : {};
    s.cluster.apply(
      service(`ns${i % 50}`, `svc${i}`, {
        type: i % 3 === 0 ? "NodePort" : "ClusterIP",
        clusterIP: `10.${hi}.${lo}.1`,
        ports: [{ name: "p80", port: 80, protocol: "TCP", ...nodePort }],
      }),
    );
    const eps = [];
    for (let j = 0; j < perService; j++) eps.push(ep(`11.${hi}.${lo}.${j + 1}`));
    s.cluster.apply(endpointSlice(`ns${i % 50}`, `svc${i}`, eps));
  }
}

export async function runBench(services = 10_000, perService = 10, rounds = 5): Promise<BenchResult> {
  const s = setup();
  let payloadBytes = 0;
  // Stub the kernel side: only our compute is measured. The input is read through, as the
  // restore reads it: part of it is made only then.
  s.ipt.restoreAll = async (data) => {
    let bytes = 0;
    for (const piece of typeof data === "string" ? [data] : data) bytes += piece.length;
    payloadBytes = Math.max(payloadBytes, bytes);
  };
  s.ipt.save = async () => "*nat\nCOMMIT\n";
  populate(s, services, perService);
  const timed = async () => {
    const input = s.cluster.input();
    const t = performance.now();
    await s.proxier.sync(input);
    return performance.now() - t;
  };
  const coldFullMs = await timed();
  const fullMs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    s.proxier.requestFullSync();
    fullMs.push(await timed());
  }
  const partialMs: number[] = [];
  for (let r = 0; r < rounds * 4; r++) {
    s.cluster.apply(endpointSlice("ns7", "svc7", [ep(`11.0.7.${100 + r}`), ep("11.0.7.2")]));
    partialMs.push(await timed());
  }
  return { services, endpointsPerService: perService, payloadBytes, coldFullMs, fullMs, partialMs };
}

if (import.meta.main) {
  const [services, perService] = process.argv
    .slice(2)
    .filter((a) => !a.startsWith("--"))
    .map(Number);
  const r = await runBench(services || 10_000, perService || 10);
  if (process.argv.includes("--json")) console.log(JSON.stringify(r));
  else {
    console.log(
      `${r.services} services x ${r.endpointsPerService} endpoints, largest restore input ${(r.payloadBytes / 1e6).toFixed(1)} MB`,
    );
    console.log(`cold full sync   ${r.coldFullMs.toFixed(0)} ms`);
    console.log(
      `full sync        median ${median(r.fullMs).toFixed(0)} ms  (${r.fullMs.map((x) => x.toFixed(0)).join(" ")})`,
    );
    console.log(`partial sync     median ${median(r.partialMs).toFixed(1)} ms`);
  }
}
