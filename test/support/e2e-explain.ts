// The agreement check of `explain` with real traffic, shared by the real-kernel suite
// (test/e2e/explain-traffic.test.ts: iptables and nftables mode) and the kernel VM's ipvs one
// (test/vm/ipvs-explain.vm.ts): for each Service case of the shared topology
// (test/support/e2e-service-cases.ts), the built binary's `explain` runs in the node namespace
// against the live rules, and its verdict and endpoints must be what probes from the same
// source observe.

import { expect } from "bun:test";
import type { Explanation } from "../../src/modes/explain.ts";
import type { Harness } from "./e2e-harness.ts";
import { kubeProxyBinary } from "./e2e-kubeproxy.ts";
import { EMPTY, EXTIP, HAIRPIN, INTERNAL_LOCAL, LB, LOCAL, PODS, STICKY, WEB } from "./e2e-service-cases.ts";
import { describeSummary, probe } from "./e2e-traffic.ts";
import { scaled } from "./kernel-vm.ts";
import { ADDR } from "./netns.ts";

/** Where each probing namespace's connections come from. */
const SOURCE: Readonly<Record<string, string>> = {
  node: ADDR.node,
  client: ADDR.client,
  client2: ADDR.client2,
  ...Object.fromEntries(PODS.map((p) => [p.name, p.ip])),
};
const podAt = (ip: string) => PODS.find((p) => p.ip === ip)?.name ?? ip;

export interface Case {
  readonly name: string;
  readonly from: string;
  readonly target: string;
  readonly proto?: "tcp" | "udp";
  /** Probes to send: enough that each of up to three backends answers at least once. */
  readonly count?: number;
  /** Session affinity: one backend answers, out of those explain lists for a first connection. */
  readonly sticky?: boolean;
}

export const CASES: readonly Case[] = [
  { name: "ClusterIP TCP from a pod", from: "p4", target: `${WEB.clusterIP}:80`, count: 60 },
  { name: "ClusterIP UDP from a pod", from: "p4", target: `${WEB.clusterIP}:53`, proto: "udp", count: 60 },
  { name: "ClusterIP from the node", from: "node", target: `${WEB.clusterIP}:80`, count: 60 },
  { name: "NodePort from a client", from: "client", target: `${ADDR.node}:30080`, count: 30 },
  { name: "externalIP from the second client", from: "client2", target: `${EXTIP.externalIPs![0]}:80` },
  {
    name: "LoadBalancer IP inside the source ranges",
    from: "client",
    target: `${LB.loadBalancerIPs![0]}:80`,
  },
  {
    name: "LoadBalancer IP outside the source ranges",
    from: "client2",
    target: `${LB.loadBalancerIPs![0]}:80`,
    // One attempt: a drop costs a whole timeout (long in the kernel VM).
    count: 1,
  },
  { name: "externalTrafficPolicy Local NodePort", from: "client", target: `${ADDR.node}:30082`, count: 20 },
  { name: "ClusterIP of the eTP Local Service", from: "p1", target: `${LOCAL.clusterIP}:80`, count: 40 },
  {
    name: "internalTrafficPolicy Local from a pod",
    from: "p1",
    target: `${INTERNAL_LOCAL.clusterIP}:80`,
    count: 20,
  },
  {
    name: "internalTrafficPolicy Local from the node",
    from: "node",
    target: `${INTERNAL_LOCAL.clusterIP}:80`,
    count: 20,
  },
  { name: "a Service without endpoints (TCP)", from: "p4", target: `${EMPTY.clusterIP}:80` },
  // One attempt: the kernel rate-limits the ICMP errors a UDP reject sends.
  {
    name: "a Service without endpoints (UDP)",
    from: "p4",
    target: `${EMPTY.clusterIP}:53`,
    proto: "udp",
    count: 1,
  },
  { name: "hairpin", from: "p6", target: `${HAIRPIN.clusterIP}:80` },
  { name: "session affinity", from: "p4", target: `${STICKY.clusterIP}:80`, count: 10, sticky: true },
  // (One attempt, as for a drop.)
  { name: "an address no Service has", from: "p4", target: "198.51.100.99:80", count: 1 },
];

async function explainLive(h: Harness, mode: string, c: Case): Promise<Explanation> {
  const argv = [
    kubeProxyBinary(),
    "explain",
    `${c.target}/${c.proto ?? "tcp"}`,
    "--from",
    SOURCE[c.from]!,
    `--proxy-mode=${mode}`,
    "--output=json",
  ];
  const r = await h.topo!.run("node", argv, { timeoutMs: scaled(30_000) });
  expect(r.code, `${argv.join(" ")}\n${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as Explanation;
}

/** Runs explain and the probes for one case; fails when they disagree. */
export async function agrees(h: Harness, mode: string, c: Case): Promise<void> {
  const e = await explainLive(h, mode, c);
  const s = await probe(h.topo!, c.from, {
    target: c.target,
    proto: c.proto ?? "tcp",
    count: c.count ?? 5,
    timeoutMs: scaled(1500),
  });
  const seen = `explain: ${e.verdict}: ${e.reason}\nprobes: ${describeSummary(s)}`;
  switch (e.verdict) {
    case "dnat": {
      expect(s.ok, seen).toBe(true);
      const listed = e.endpoints.map((x) => podAt(x.endpoint.split(":")[0]!)).sort();
      const answered = Object.keys(s.backends).sort();
      if (c.sticky) {
        expect(answered, seen).toHaveLength(1);
        expect(listed, seen).toContain(answered[0]!);
      } else expect(answered, seen).toEqual(listed);
      const ports = new Set(e.endpoints.map((x) => Number(x.endpoint.split(":").at(-1))));
      for (const r of s.results) expect(ports.has(r.reply!.port), seen).toBe(true);
      // The node's own connections leave from one of its addresses either way.
      if (c.from !== "node") {
        const masq = e.endpoints.every((x) => x.masquerade);
        const peer = masq ? ADDR.podGateway : SOURCE[c.from]!;
        for (const r of s.results) expect(r.reply!.peer, seen).toBe(peer);
      }
      break;
    }
    case "reject":
      expect(s.errors, seen).toEqual({ refused: s.attempts });
      break;
    case "drop":
      expect(s.errors, seen).toEqual({ timeout: s.attempts });
      break;
    case "not-handled":
      expect(s.okCount, seen).toBe(0);
      break;
    default:
      throw new Error(`unexpected verdict: ${seen}`);
  }
}
