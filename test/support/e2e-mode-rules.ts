// What the shared Service traffic cases (e2e-service-cases.ts) need to know about a proxy mode's
// rules in the node namespace, for iptables mode (iptables-save of nat and filter) and nftables
// mode (the `ip kube-proxy` table): when the first sync is in, how many endpoints a Service port
// picks from, which per-service chains exist and which should, whether any rule still names an
// address or NodePort, and the mode's defaults the cases depend on.

import {
  type ChainNamer,
  expectedServiceChains,
  IPTABLES_CHAINS,
  NFTABLES_CHAINS,
  type PortSpec,
  type ServiceSpec,
  serviceChainsIn,
  servicePortName,
} from "./e2e-cluster.ts";
import { hasServiceRule, type RulesView, rulesView, type ViewSource, waitForView } from "./e2e-kubeproxy.ts";
import { endpointTargets, type NftTableView, nftDiagnostics, nftTable } from "./e2e-nft.ts";
import type { Daemon, Topology } from "./netns.ts";

export interface ModeRules<V> {
  readonly mode: "iptables" | "nftables";
  source(topo: Topology): ViewSource<V>;
  /** Every port of every Service with endpoints has its cluster IP dispatched, and the fixed part is in. */
  firstSyncDone(v: V, services: readonly ServiceSpec[]): boolean;
  /** How many endpoints the cluster-policy chain of a Service port spreads over. */
  endpointCount(v: V, s: ServiceSpec, p: PortSpec): number;
  /** The per-service chains (service, local, external, firewall, endpoint) present. */
  serviceChains(v: V): Set<string>;
  readonly namer: ChainNamer;
  /** Whether any rule or element still names the address. */
  mentionsAddress(v: V, ip: string): boolean;
  /** Whether any rule or element still names the NodePort. */
  mentionsNodePort(v: V, port: number): boolean;
  /**
   * With nodePortAddresses unset, NodePorts answer on every local address (iptables) or only on
   * the node's primary IP (nftables, as upstream).
   */
  readonly nodePortsOnEveryAddress: boolean;
  /**
   * Longest wait for a removed Service's chains to go: iptables removes them in the sync that
   * drops the Service; nftables flushes them then and deletes them on a sync a second or more
   * later (the periodic one, 30 s by default).
   */
  readonly staleChainsGoneWithinMs: number;
  /** More of the node's state for a failure report. */
  extraDiagnostics?: (topo: Topology) => Promise<string>;
}

/** Polls a mode's view until `ready` (bounded; fails at once when the daemon exits). */
export function waitForModeRules<V>(
  rules: ModeRules<V>,
  topo: Topology,
  daemon: Daemon | undefined,
  ready: (v: V) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<V> {
  return waitForView(rules.source(topo), daemon, ready, what, timeoutMs);
}

// --- iptables ---------------------------------------------------------------------------------

const clusterIPComment = (s: ServiceSpec, p: PortSpec) => `${servicePortName(s, p)} cluster IP`;

const withEndpoints = (services: readonly ServiceSpec[]) =>
  services.filter((s) => (s.endpoints?.length ?? 0) > 0);

/** Lines of `chain` in a save that jump to an endpoint chain. */
function sepJumps(nat: string, chain: string): number {
  return nat.split("\n").filter((l) => l.startsWith(`-A ${chain} `) && l.includes("-j KUBE-SEP-")).length;
}

export const IPTABLES_RULES: ModeRules<RulesView> = {
  mode: "iptables",
  source: (topo) => ({
    read: () => rulesView(topo),
    render: (v) => `--- nat ---\n${v.nat}\n--- filter ---\n${v.filter}`,
  }),
  // nat has the cluster IP rule of every Service port with endpoints, filter its KUBE-SERVICES.
  firstSyncDone: (v, services) =>
    withEndpoints(services).every((s) =>
      s.ports.every((p) => hasServiceRule(v.nat, clusterIPComment(s, p))),
    ) && v.filter.includes(":KUBE-SERVICES "),
  endpointCount: (v, s, p) => sepJumps(v.nat, IPTABLES_CHAINS.service("SVC", s, p)),
  serviceChains: (v) => serviceChainsIn(v.nat),
  namer: IPTABLES_CHAINS,
  mentionsAddress: (v, ip) => v.nat.includes(ip) || v.filter.includes(ip),
  mentionsNodePort: (v, port) => v.nat.includes(`--dport ${port}`) || v.filter.includes(`--dport ${port}`),
  nodePortsOnEveryAddress: true,
  staleChainsGoneWithinMs: 15_000,
};

// --- nftables ---------------------------------------------------------------------------------

const protoOf = (p: PortSpec) => (p.protocol ?? "TCP").toLowerCase();

function dispatched(v: NftTableView, s: ServiceSpec, p: PortSpec): boolean {
  const target = `goto ${NFTABLES_CHAINS.service("SVC", s, p)}`;
  const local = `goto ${NFTABLES_CHAINS.service("SVL", s, p)}`;
  return (v.maps.get("service-ips") ?? []).some(
    (e) =>
      e.key[0] === s.clusterIP &&
      e.key[1] === protoOf(p) &&
      e.key[2] === p.port &&
      (e.verdict === target || e.verdict === local),
  );
}

export const NFTABLES_RULES: ModeRules<NftTableView> = {
  mode: "nftables",
  source: (topo) => ({
    read: () => nftTable(topo, "ip"),
    render: (v) =>
      v.exists ? `--- nft list table ip kube-proxy ---\n${v.text}` : "(no table ip kube-proxy)",
  }),
  // service-ips dispatches every cluster IP port with endpoints; the endpoint checks are hooked.
  firstSyncDone: (v, services) =>
    v.exists &&
    v.chains.has("service-endpoints-check") &&
    withEndpoints(services).every((s) => s.ports.every((p) => dispatched(v, s, p))),
  endpointCount: (v, s, p) => endpointTargets(v.chains.get(NFTABLES_CHAINS.service("SVC", s, p))),
  // Only per-service chains have a "/" in their name.
  serviceChains: (v) => new Set([...v.chains.keys()].filter((c) => c.includes("/"))),
  namer: NFTABLES_CHAINS,
  mentionsAddress: (v, ip) => v.text.includes(ip),
  mentionsNodePort: (v, port) => v.text.includes(`. ${port} `),
  nodePortsOnEveryAddress: false,
  staleChainsGoneWithinMs: 45_000,
  extraDiagnostics: nftDiagnostics,
};

/** The chains `services` need in this mode on node `nodeName`. */
export function expectedChains<V>(
  rules: ModeRules<V>,
  services: readonly ServiceSpec[],
  nodeName: string,
): Set<string> {
  return expectedServiceChains(services, nodeName, rules.namer);
}
