// What upstream kube-proxy's ipvs mode (v1.31 through v1.37: the same chains, sets, rule shapes
// and jumps in both) leaves on a node, as data for takeover tests: IPVS virtual servers (an
// `ipvsadm -R` input), every ipset upstream creates (an `ipset restore` input), its KUBE-* chains
// and rules (an `iptables-restore --noflush` input), the jumps it prepends to the built-in chains,
// and the VIPs bound on kube-ipvs0. Upstream has no whole-node dump for ipvs mode; the state is
// put together from the expectations of its proxier tests (pkg/proxy/ipvs/proxier_test.go @
// 531be81208e2274ef42e72525a26610a9622bcdf, transcribed in test/modes/ipvs/upstream-*.test.ts),
// each test's Service given addresses of its own from netns.ts's documentation ranges:
//
//   TestLoadBalancerSourceRanges  ("lb"):     10.20.30.41 -> 198.51.100.41, LB 1.2.3.4 -> 192.0.2.204,
//                                             source range 10.0.0.0/8 -> 192.0.2.0/26 (the client's
//                                             net, which holds the node's IP too), endpoint
//                                             10.180.0.1:80 -> 203.0.113.11:8080
//   TestNodePortIPv4, UDP case   ("np-udp"):  10.20.30.41 -> 198.51.100.42 (UDP 80), node IP
//                                             100.101.102.103 -> 192.0.2.10, node port 3001,
//                                             endpoint 10.180.0.1:80 -> 203.0.113.12:5353
//   TestSessionAffinity          ("sticky"):  10.20.30.41 -> 198.51.100.43, external IP 50.60.70.81
//                                             -> 192.0.2.181, node IP 100.101.102.103 -> 192.0.2.10,
//                                             node port 3001 (TCP), ClientIP for 10800 s, no endpoints
//
// The rules are written as upstream writes them (with a cluster CIDR of 203.0.113.0/24, as the
// real-kernel tests run the proxy, and the default masquerade bit 14).

import type { Topology } from "./netns.ts";

export const UPSTREAM_LB = { clusterIP: "198.51.100.41", lbIP: "192.0.2.204", sourceRange: "192.0.2.0/26" };
export const UPSTREAM_NP_UDP = { clusterIP: "198.51.100.42", nodePort: 3001 };
export const UPSTREAM_STICKY = { clusterIP: "198.51.100.43", externalIP: "192.0.2.181", nodePort: 3001 };
const NODE_IP = "192.0.2.10";

/** `ipvsadm -R` input: every virtual server and real server of the three Services. */
export const UPSTREAM_IPVSADM = [
  `-A -t ${UPSTREAM_LB.clusterIP}:80 -s rr`,
  `-a -t ${UPSTREAM_LB.clusterIP}:80 -r 203.0.113.11:8080 -m -w 1`,
  `-A -t ${UPSTREAM_LB.lbIP}:80 -s rr`,
  `-a -t ${UPSTREAM_LB.lbIP}:80 -r 203.0.113.11:8080 -m -w 1`,
  `-A -u ${UPSTREAM_NP_UDP.clusterIP}:80 -s rr`,
  `-a -u ${UPSTREAM_NP_UDP.clusterIP}:80 -r 203.0.113.12:5353 -m -w 1`,
  `-A -u ${NODE_IP}:${UPSTREAM_NP_UDP.nodePort} -s rr`,
  `-a -u ${NODE_IP}:${UPSTREAM_NP_UDP.nodePort} -r 203.0.113.12:5353 -m -w 1`,
  `-A -t ${UPSTREAM_STICKY.clusterIP}:80 -s rr -p 10800`,
  `-A -t ${UPSTREAM_STICKY.externalIP}:80 -s rr -p 10800`,
  `-A -t ${NODE_IP}:${UPSTREAM_STICKY.nodePort} -s rr -p 10800`,
  "",
].join("\n");

/** The VIPs upstream binds on kube-ipvs0 (node IPs are not bound). */
export const UPSTREAM_BOUND = [
  UPSTREAM_LB.clusterIP,
  UPSTREAM_LB.lbIP,
  UPSTREAM_NP_UDP.clusterIP,
  UPSTREAM_STICKY.clusterIP,
  UPSTREAM_STICKY.externalIP,
];

const HASH = "family inet hashsize 1024 maxelem 65536";
/** Every set upstream creates (its ipsetInfo), with the members of the three Services. */
const SETS: readonly [string, string, readonly string[]][] = [
  ["KUBE-LOOP-BACK", `hash:ip,port,ip ${HASH}`, []],
  [
    "KUBE-CLUSTER-IP",
    `hash:ip,port ${HASH}`,
    [
      `${UPSTREAM_LB.clusterIP},tcp:80`,
      `${UPSTREAM_NP_UDP.clusterIP},udp:80`,
      `${UPSTREAM_STICKY.clusterIP},tcp:80`,
    ],
  ],
  ["KUBE-EXTERNAL-IP", `hash:ip,port ${HASH}`, [`${UPSTREAM_STICKY.externalIP},tcp:80`]],
  ["KUBE-EXTERNAL-IP-LOCAL", `hash:ip,port ${HASH}`, []],
  ["KUBE-LOAD-BALANCER", `hash:ip,port ${HASH}`, [`${UPSTREAM_LB.lbIP},tcp:80`]],
  ["KUBE-LOAD-BALANCER-FW", `hash:ip,port ${HASH}`, [`${UPSTREAM_LB.lbIP},tcp:80`]],
  ["KUBE-LOAD-BALANCER-LOCAL", `hash:ip,port ${HASH}`, []],
  ["KUBE-LOAD-BALANCER-SOURCE-IP", `hash:ip,port,ip ${HASH}`, []],
  [
    "KUBE-LOAD-BALANCER-SOURCE-CIDR",
    `hash:ip,port,net ${HASH}`,
    [`${UPSTREAM_LB.lbIP},tcp:80,${UPSTREAM_LB.sourceRange}`],
  ],
  ["KUBE-NODE-PORT-TCP", "bitmap:port range 0-65535", [String(UPSTREAM_STICKY.nodePort)]],
  ["KUBE-NODE-PORT-LOCAL-TCP", "bitmap:port range 0-65535", []],
  ["KUBE-NODE-PORT-UDP", "bitmap:port range 0-65535", [String(UPSTREAM_NP_UDP.nodePort)]],
  ["KUBE-NODE-PORT-LOCAL-UDP", "bitmap:port range 0-65535", []],
  ["KUBE-NODE-PORT-SCTP-HASH", `hash:ip,port ${HASH}`, []],
  ["KUBE-NODE-PORT-LOCAL-SCTP-HASH", `hash:ip,port ${HASH}`, []],
  ["KUBE-HEALTH-CHECK-NODE-PORT", "bitmap:port range 0-65535", []],
  ["KUBE-IPVS-IPS", `hash:ip ${HASH}`, UPSTREAM_BOUND],
];

/** `ipset restore` input. */
export const UPSTREAM_IPSETS = `${SETS.flatMap(([name, type, members]) => [
  `create ${name} ${type}`,
  ...members.map((m) => `add ${name} ${m}`),
]).join("\n")}\n`;

const c = (text: string) => `-m comment --comment "${text}"`;
const MARK = "0x00004000";

/** `iptables-restore --noflush` input: upstream's KUBE-* chains and rules for these sets. */
export const UPSTREAM_IPTABLES = [
  "*nat",
  ":KUBE-SERVICES - [0:0]",
  ":KUBE-POSTROUTING - [0:0]",
  ":KUBE-NODE-PORT - [0:0]",
  ":KUBE-LOAD-BALANCER - [0:0]",
  ":KUBE-MARK-MASQ - [0:0]",
  "-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN",
  `-A KUBE-SERVICES ${c("Kubernetes service lb portal")} -m set --match-set KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER`,
  `-A KUBE-NODE-PORT -p tcp ${c("Kubernetes nodeport TCP port for masquerade purpose")} -m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ`,
  `-A KUBE-NODE-PORT -p udp ${c("Kubernetes nodeport UDP port for masquerade purpose")} -m set --match-set KUBE-NODE-PORT-UDP dst -j KUBE-MARK-MASQ`,
  `-A KUBE-SERVICES ${c("Kubernetes service cluster ip + port for masquerade purpose")} -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 203.0.113.0/24 -j KUBE-MARK-MASQ`,
  `-A KUBE-SERVICES ${c("Kubernetes service external ip + port for masquerade and filter purpose")} -m set --match-set KUBE-EXTERNAL-IP dst,dst -j KUBE-MARK-MASQ`,
  `-A KUBE-SERVICES ${c("Kubernetes service external ip + port for masquerade and filter purpose")} -m set --match-set KUBE-EXTERNAL-IP dst,dst -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT`,
  `-A KUBE-SERVICES ${c("Kubernetes service external ip + port for masquerade and filter purpose")} -m set --match-set KUBE-EXTERNAL-IP dst,dst -m addrtype --dst-type LOCAL -j ACCEPT`,
  "-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT",
  "-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ",
  "-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT",
  "-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT",
  `-A KUBE-POSTROUTING -m mark ! --mark ${MARK}/${MARK} -j RETURN`,
  `-A KUBE-POSTROUTING -j MARK --xor-mark ${MARK}`,
  `-A KUBE-POSTROUTING ${c("kubernetes service traffic requiring SNAT")} -j MASQUERADE --random-fully`,
  `-A KUBE-MARK-MASQ -j MARK --or-mark ${MARK}`,
  "COMMIT",
  "*filter",
  ":KUBE-FORWARD - [0:0]",
  ":KUBE-NODE-PORT - [0:0]",
  ":KUBE-PROXY-FIREWALL - [0:0]",
  ":KUBE-SOURCE-RANGES-FIREWALL - [0:0]",
  ":KUBE-IPVS-FILTER - [0:0]",
  ":KUBE-IPVS-OUT-FILTER - [0:0]",
  `-A KUBE-PROXY-FIREWALL ${c("Kubernetes service load balancer ip + port for load balancer with sourceRange")} -m set --match-set KUBE-LOAD-BALANCER-FW dst,dst -j KUBE-SOURCE-RANGES-FIREWALL`,
  `-A KUBE-SOURCE-RANGES-FIREWALL ${c("Kubernetes service load balancer ip + port + source cidr for packet filter purpose")} -m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src -j RETURN`,
  "-A KUBE-SOURCE-RANGES-FIREWALL -j DROP",
  `-A KUBE-FORWARD ${c("kubernetes forwarding rules")} -m mark --mark ${MARK}/${MARK} -j ACCEPT`,
  `-A KUBE-FORWARD ${c("kubernetes forwarding conntrack rule")} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
  `-A KUBE-NODE-PORT ${c("Kubernetes health check node port")} -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j ACCEPT`,
  "-A KUBE-IPVS-FILTER -m set --match-set KUBE-LOAD-BALANCER dst,dst -j RETURN",
  "-A KUBE-IPVS-FILTER -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN",
  "-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP dst,dst -j RETURN",
  "-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP-LOCAL dst,dst -j RETURN",
  "-A KUBE-IPVS-FILTER -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j RETURN",
  "-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT",
  "COMMIT",
  "",
].join("\n");

/** The jumps upstream's ipvs mode prepends to the built-in chains (table, chain, comment, target). */
export const UPSTREAM_IPVS_JUMPS: readonly (readonly [string, string, string, string])[] = [
  ["nat", "OUTPUT", "kubernetes service portals", "KUBE-SERVICES"],
  ["nat", "PREROUTING", "kubernetes service portals", "KUBE-SERVICES"],
  ["nat", "POSTROUTING", "kubernetes postrouting rules", "KUBE-POSTROUTING"],
  ["filter", "FORWARD", "kubernetes forwarding rules", "KUBE-FORWARD"],
  ["filter", "INPUT", "kubernetes health check rules", "KUBE-NODE-PORT"],
  ["filter", "INPUT", "kube-proxy firewall rules", "KUBE-PROXY-FIREWALL"],
  ["filter", "FORWARD", "kube-proxy firewall rules", "KUBE-PROXY-FIREWALL"],
  ["filter", "INPUT", "kubernetes ipvs access filter", "KUBE-IPVS-FILTER"],
  ["filter", "OUTPUT", "kubernetes ipvs access filter", "KUBE-IPVS-OUT-FILTER"],
];

/**
 * Loads the upstream node state into the topology's node namespace with the real tools (iptables
 * through the nft backend, as a current node's iptables is). The jumps go in with the chains, as
 * "-I <chain> 1" lines (what upstream's prepending EnsureRule leaves), in one restore.
 */
export async function loadUpstreamIpvsNode(topo: Topology): Promise<void> {
  const t = { timeoutMs: 20_000 };
  const dummy = [
    "link add kube-ipvs0 type dummy",
    ...UPSTREAM_BOUND.map((a) => `addr add ${a}/32 dev kube-ipvs0`),
  ];
  await topo.must("node", ["ip", "-batch", "-"], { ...t, stdin: `${dummy.join("\n")}\n` });
  await topo.must("node", ["ipset", "restore"], { ...t, stdin: UPSTREAM_IPSETS });
  await topo.must("node", ["ipvsadm", "-R"], { ...t, stdin: UPSTREAM_IPVSADM });
  const jumps = (table: string) =>
    UPSTREAM_IPVS_JUMPS.filter(([tb]) => tb === table).map(
      ([, chain, comment, target]) => `-I ${chain} 1 -m comment --comment "${comment}" -j ${target}`,
    );
  const withJumps = UPSTREAM_IPTABLES.replace(
    /^\*(nat|filter)\n((?:.*\n)*?)COMMIT$/gm,
    (_, table: string, body: string) =>
      [`*${table}`, `${body}${jumps(table).join("\n")}`, "COMMIT"].join("\n"),
  );
  await topo.must("node", ["iptables-nft-restore", "--noflush"], { ...t, stdin: withJumps });
}

/** Every KUBE- set's members in the node namespace (`ipset save`), each list sorted. */
export async function ipsetMembers(topo: Topology): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  const save = await topo.must("node", ["ipset", "save"], { timeoutMs: 20_000 });
  for (const line of save.split("\n")) {
    const create = /^create (KUBE-\S+) /.exec(line);
    if (create) out[create[1]!] ??= [];
    const add = /^add (KUBE-\S+) (\S+)/.exec(line);
    if (add) out[add[1]!] = [...(out[add[1]!] ?? []), add[2]!];
  }
  for (const k of Object.keys(out)) out[k]!.sort();
  return out;
}

/** The addresses on kube-ipvs0 in the node namespace (without prefix length), sorted. */
export async function boundOnDummy(topo: Topology): Promise<string[]> {
  const r = await topo.run("node", ["ip", "-o", "addr", "show", "dev", "kube-ipvs0"], { timeoutMs: 10_000 });
  return [...r.stdout.matchAll(/ inet6? (\S+?)\/\d+ /g)].map((m) => m[1]!).sort();
}
