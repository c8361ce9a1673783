// The grammars the hostile-object properties judge restore inputs by
// (test/support/restore-grammar.ts): they accept every line of the upstream goldens and of what
// each mode writes for a varied valid cluster, and they reject each kind of planted injection.
// A grammar that accepted too little would fail valid syncs; one that accepted too much would
// let the properties pass over an injection.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ModeName } from "../../src/modes/registry.ts";
import {
  type ClusterObjects,
  SYNC_NODE,
  SYNC_NODE_IP,
  SYNC_NODE_IPV6,
  syncOnce,
} from "../support/hostile-sync.ts";
import { endpointSlice, ep, service } from "../support/proxy-cluster.ts";
import {
  commandViolations,
  ipBatchViolations,
  ipsetViolations,
  iptablesArgvViolations,
  iptablesRestoreViolations,
  ipvsadmViolations,
  nftViolations,
  restoreWords,
} from "../support/restore-grammar.ts";

const GOLDEN = join(import.meta.dir, "..", "modes");
const golden = (mode: string, file: string) =>
  readFileSync(join(GOLDEN, mode, "golden", file), "utf8")
    .split("\n")
    // The nft goldens carry '#' provenance lines and blank separators (not nft -f input of ours).
    .filter((l) => mode !== "nftables" || (l !== "" && !l.startsWith("#")))
    .join("\n");

/** Every kind of Service a node programs, both families, endpoints here and elsewhere. */
function validCluster(): ClusterObjects {
  const ports = (name: string, nodePort: number) => [{ name, port: 80, protocol: "TCP", nodePort }];
  return {
    serviceCIDRs: [
      {
        apiVersion: "networking.k8s.io/v1",
        kind: "ServiceCIDR",
        metadata: { name: "kubernetes" },
        spec: { cidrs: ["198.51.100.0/24", "2001:db8:2::/64"] },
      },
    ],
    services: [
      service("ns1", "cluster", { clusterIP: "198.51.100.1", sessionAffinity: "ClientIP" }),
      service("ns1", "nodeport", {
        type: "NodePort",
        clusterIP: "198.51.100.2",
        ports: [
          { name: "p80", port: 80, protocol: "TCP", nodePort: 30002 },
          { name: "dns-udp", port: 53, protocol: "UDP", nodePort: 30053 },
          { name: "sctp", port: 9, protocol: "SCTP", nodePort: 30009 },
        ],
        externalTrafficPolicy: "Local",
      }),
      service(
        "ns2",
        "lb",
        {
          type: "LoadBalancer",
          clusterIP: "198.51.100.3",
          ports: ports("p80", 30003),
          externalIPs: ["203.0.113.50"],
          loadBalancerSourceRanges: ["203.0.113.0/25"],
          externalTrafficPolicy: "Local",
          healthCheckNodePort: 30303,
        },
        { loadBalancer: { ingress: [{ ip: "203.0.113.60" }] } },
      ),
      service("ns2", "empty", { type: "NodePort", clusterIP: "198.51.100.4", ports: ports("p80", 30004) }),
      service("ns3", "local", { clusterIP: "198.51.100.5", internalTrafficPolicy: "Local" }),
      service("ns3", "v6", {
        type: "NodePort",
        clusterIP: "2001:db8:2::6",
        clusterIPs: ["2001:db8:2::6"],
        ipFamilies: ["IPv6"],
        ports: ports("p80", 30006),
      }),
    ],
    slices: [
      endpointSlice("ns1", "cluster", [ep("192.0.2.11"), ep("192.0.2.12", { node: SYNC_NODE })]),
      endpointSlice("ns1", "nodeport", [ep("192.0.2.13", { node: SYNC_NODE })], {
        ports: [
          { name: "p80", port: 8080, protocol: "TCP" },
          { name: "dns-udp", port: 5353, protocol: "UDP" },
          { name: "sctp", port: 9999, protocol: "SCTP" },
        ],
      }),
      endpointSlice("ns2", "lb", [
        ep("192.0.2.14", { node: SYNC_NODE }),
        ep("192.0.2.15", { terminating: true }),
      ]),
      endpointSlice("ns3", "local", [ep("192.0.2.16", { zone: "zone-a", hints: ["zone-a"] })]),
      endpointSlice("ns3", "v6", [ep("2001:db8:1::17"), ep("2001:db8:1::18", { node: SYNC_NODE })], {
        addressType: "IPv6",
      }),
    ],
    node: {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: SYNC_NODE, labels: { "topology.kubernetes.io/zone": "zone-a" } },
      spec: { podCIDR: "192.0.2.0/25", podCIDRs: ["192.0.2.0/25", "2001:db8:1::/64"] },
      status: {
        addresses: [
          { type: "InternalIP", address: SYNC_NODE_IP },
          { type: "InternalIP", address: SYNC_NODE_IPV6 },
        ],
      },
    },
  };
}

describe("the grammars accept what the proxiers write", () => {
  test.each(["upstream-1.31-era-overall.iptables", "upstream-1.37-overall.iptables"])(
    "iptables golden %s",
    (file) => {
      expect(iptablesRestoreViolations(golden("iptables", file))).toEqual([]);
    },
  );

  test.each([
    "ours-pre-1.37-small-cluster.nft",
    "small-cluster.nft",
    "upstream-1.31-era-overall.nft",
    "upstream-1.37-overall.nft",
    "upstream-1.37-overall-ipv6.nft",
  ])("nftables golden %s", (file) => {
    expect(nftViolations(golden("nftables", file))).toEqual([]);
  });

  test.each<ModeName>(["iptables", "nftables", "ipvs"])(
    "every command of a %s sync of a varied valid cluster",
    async (mode) => {
      const record = await syncOnce(mode, validCluster());
      const programs = new Set(record.commands.map((c) => c.argv[0]));
      // The sync really wrote something of each kind the mode writes.
      const expected: Record<ModeName, string[]> = {
        iptables: ["iptables-nft-restore", "ip6tables-nft-restore", "iptables-nft", "nfacct"],
        nftables: ["nft"],
        ipvs: ["ipset", "ipvsadm", "ip", "iptables-nft-restore", "ip6tables-nft-restore"],
      };
      for (const p of expected[mode]) expect(programs).toContain(p);
      expect(record.commands.flatMap(commandViolations)).toEqual([]);
    },
  );
});

describe("the grammars reject planted injections", () => {
  const table = (...lines: string[]) => `*nat\n:KUBE-SERVICES - [0:0]\n${lines.join("\n")}\nCOMMIT\n`;
  const rule = (comment: string) =>
    `-A KUBE-SERVICES -m comment --comment ${comment} -m tcp -p tcp -d 198.51.100.1 --dport 80 -j KUBE-MARK-MASQ`;

  test("a plain rule is accepted (the baseline of the cases below)", () => {
    expect(iptablesRestoreViolations(table(rule('"ns/web:http cluster IP"')))).toEqual([]);
    expect(iptablesRestoreViolations(table(rule('"a \\" b"')))).toEqual([]);
  });

  test.each([
    ["a quote that closes the comment early", rule('"ns/web" -j ACCEPT " cluster IP"')],
    ["a quote left open", rule('"ns/"web cluster IP"')],
    ["an unquoted comment with words after it", rule("ns/web -j ACCEPT")],
    ["a rule on a built-in chain", "-A INPUT -j ACCEPT"],
    ["a second table header", "*filter"],
    ["a COMMIT in the middle", "COMMIT"],
    ["a '#' line", "# a comment"],
    ["a chain that is not ours", ":FORWARD ACCEPT [0:0]"],
    ["a jump to a chain not declared", "-A KUBE-SERVICES -j KUBE-SVC-AAAAAAAAAAAAAAAA"],
    ["a control character in a comment", rule('"ns/web\u001b cluster IP"')],
    ["a comment past 255 bytes", rule(`"${"é".repeat(128)}"`)],
    ["half an emoji in a comment", rule('"ns/\ud83d cluster IP"')],
    ["two targets", "-A KUBE-SERVICES -j KUBE-MARK-MASQ -j ACCEPT"],
    ["an unknown option", "-A KUBE-SERVICES -t filter -j ACCEPT"],
  ])("iptables-restore: %s", (_name, line) => {
    expect(iptablesRestoreViolations(table(line))).not.toEqual([]);
  });

  test("iptables-restore: a flush or delete of a chain that is not ours", () => {
    expect(iptablesRestoreViolations(table("-X KUBE-SVC-AAAAAAAAAAAAAAAA"))).toEqual([]);
    expect(iptablesRestoreViolations(table("-X INPUT"))).not.toEqual([]);
    expect(iptablesRestoreViolations(table("-F FORWARD"))).not.toEqual([]);
  });

  test("iptables command lines: only chain housekeeping and jumps from built-in chains into ours", () => {
    const jump = [
      "-w",
      "5",
      "-I",
      "INPUT",
      "-t",
      "filter",
      "-m",
      "comment",
      "--comment",
      "kube",
      "-j",
      "KUBE-FIREWALL",
    ];
    expect(iptablesArgvViolations(jump)).toEqual([]);
    expect(iptablesArgvViolations(["-w", "5", "-N", "KUBE-FIREWALL", "-t", "filter"])).toEqual([]);
    expect(iptablesArgvViolations(jump.with(-1, "ACCEPT"))).not.toEqual([]);
    expect(iptablesArgvViolations(jump.with(3, "KUBE-SERVICES"))).not.toEqual([]);
    expect(iptablesArgvViolations(["-F", "INPUT"])).not.toEqual([]);
    expect(iptablesArgvViolations(["-P", "INPUT", "ACCEPT"])).not.toEqual([]);
    expect(iptablesArgvViolations(jump.with(9, "a\nb"))).not.toEqual([]);
  });

  // Names are known only when the input declares them.
  const element = (comment: string) =>
    "add chain ip kube-proxy reject-chain\n" +
    "add map ip kube-proxy no-endpoint-services { type ipv4_addr . inet_proto . inet_service : verdict ; }\n" +
    `add element ip kube-proxy no-endpoint-services { 198.51.100.1 . tcp . 80 comment "${comment}" : goto reject-chain }`;

  test("nft: a plain element and chain are accepted", () => {
    expect(nftViolations(element("ns/web:http"))).toEqual([]);
    expect(nftViolations("add chain ip kube-proxy service-ABCDEFGH-ns/web/tcp/http")).toEqual([]);
  });

  test.each([
    ["flush ruleset", "flush ruleset"],
    ["another table", "add rule ip filter input accept"],
    ["another family", "add table inet kube-proxy"],
    ["deleting the table", "delete table ip kube-proxy"],
    ["a second command after ';'", "add chain ip kube-proxy services ; flush ruleset"],
    ["a '#' comment", "add chain ip kube-proxy services # x"],
    ["a quote that closes the comment early", element('ns/web" accept comment "x')],
    ["a quote left open", element('ns/"web')],
    ["a comment past 128 bytes", element("é".repeat(65))],
    ["a control character in a comment", element("ns/\rweb")],
    ["a chain name nft cannot read", "add chain ip kube-proxy service-ABCDEFGH-ns/w$b/tcp/http"],
    ["a chain name with a space", "add chain ip kube-proxy service-ABCDEFGH-ns/w b/tcp/http"],
    ["a chain name with a quote", 'add chain ip kube-proxy service-ABCDEFGH-ns/w"b/tcp/http'],
    ["a line that is not a command", "*filter"],
    ["a name no line declares", "add rule ip kube-proxy services jump other-chain"],
    ["words after a chain declaration", "add chain ip kube-proxy services accept"],
  ])("nft: %s", (_name, line) => {
    expect(nftViolations(line)).not.toEqual([]);
  });

  test("ipset: only our sets, only our commands", () => {
    expect(
      ipsetViolations("create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536"),
    ).toEqual([]);
    expect(ipsetViolations("add KUBE-CLUSTER-IP 198.51.100.1,tcp:80")).toEqual([]);
    expect(ipsetViolations("add KUBE-LOAD-BALANCER-SOURCE-CIDR 203.0.113.60,tcp:80,203.0.113.0/25")).toEqual(
      [],
    );
    expect(ipsetViolations("create other hash:ip")).not.toEqual([]);
    expect(ipsetViolations("destroy")).not.toEqual([]);
    expect(ipsetViolations("add KUBE-CLUSTER-IP 198.51.100.1,tcp:80 comment x")).not.toEqual([]);
    expect(ipsetViolations("add KUBE-CLUSTER-IP a;b")).not.toEqual([]);
    expect(ipsetViolations("swap KUBE-CLUSTER-IP other")).not.toEqual([]);
  });

  test("ipvsadm: lines ipvsadm takes, and only service and server changes", () => {
    expect(
      ipvsadmViolations("-A -t 198.51.100.1:80 -s rr\n-a -t 198.51.100.1:80 -r 192.0.2.1:8080 -m -w 1\n"),
    ).toEqual([]);
    expect(ipvsadmViolations("-C")).not.toEqual([]);
    expect(ipvsadmViolations("-A -t 198.51.100.1:80 -s rr; -C")).not.toEqual([]);
    expect(ipvsadmViolations("-A -t 198.51.100.300:80 -s rr")).not.toEqual([]);
  });

  test("ip -batch: only addresses on kube-ipvs0", () => {
    expect(ipBatchViolations("address add 198.51.100.1/32 dev kube-ipvs0\n")).toEqual([]);
    expect(ipBatchViolations("address add 198.51.100.1/32 dev eth0")).not.toEqual([]);
    expect(ipBatchViolations("link set eth0 down")).not.toEqual([]);
    expect(ipBatchViolations("address add 198.51.100.1 dev kube-ipvs0")).not.toEqual([]);
  });

  test("a program kube-proxy does not run", () => {
    expect(commandViolations({ argv: ["sh", "-c", "true"] })).not.toEqual([]);
  });
});

describe("the iptables-restore word splitter", () => {
  test("splits as xtables does: quotes group, a backslash escapes inside them, a closing quote ends a word", () => {
    expect(restoreWords('-A X -m comment --comment "a b" -j Y')).toEqual([
      "-A",
      "X",
      "-m",
      "comment",
      "--comment",
      "a b",
      "-j",
      "Y",
    ]);
    expect(restoreWords('--comment "a \\" b"')).toEqual(["--comment", 'a " b']);
    expect(restoreWords('--comment "a"b')).toEqual(["--comment", "a", "b"]);
    expect(restoreWords('--comment "a')).toBeUndefined();
  });
});
