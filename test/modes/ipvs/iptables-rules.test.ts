import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setCatalog } from "../../../src/modes/ipvs/ipsets.ts";
import { type IpvsRuleSettings, renderIpvsRules } from "../../../src/modes/ipvs/iptables-rules.ts";
import { detectLocalByBridgeInterface, noOpLocalDetector } from "../../../src/proxy/local-detect.ts";
import { type Cluster, endpointSlice, ep, service, setup } from "./harness.ts";

const FIXTURES = join(import.meta.dir, "../../fixtures/ipvs");

/** ClusterIP with a local endpoint, NodePorts (TCP Local, UDP), an external IP, two LBs with ranges. */
function smallCluster(c: Cluster): void {
  const lb = (name: string, ip: string, ranges: string[], local: boolean, nodePort: number) =>
    service(
      "ns1",
      name,
      {
        type: "LoadBalancer",
        clusterIP: `198.51.100.${nodePort % 100}`,
        loadBalancerSourceRanges: ranges,
        externalTrafficPolicy: local ? "Local" : "Cluster",
        ...(local ? { healthCheckNodePort: 32000 } : {}),
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort }],
      },
      { loadBalancer: { ingress: [{ ip }] } },
    );
  c.apply(
    service("ns1", "web", { clusterIP: "198.51.100.41" }),
    endpointSlice("ns1", "web", [ep("192.0.2.12", { node: "node-a" })]),
    service("ns1", "np", {
      type: "NodePort",
      clusterIP: "198.51.100.50",
      externalTrafficPolicy: "Local",
      ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 30080 }],
    }),
    service("ns1", "dns", {
      type: "NodePort",
      clusterIP: "198.51.100.53",
      ports: [{ name: "dns", port: 53, protocol: "UDP", nodePort: 30053 }],
    }),
    service("ns1", "ext", { clusterIP: "198.51.100.60", externalIPs: ["203.0.113.60"] }),
    // The node (203.0.113.10) is outside 198.51.100.0/24 but inside 203.0.113.0/25.
    lb("lb", "203.0.113.70", ["198.51.100.0/24"], true, 30070),
    lb("lb2", "203.0.113.71", ["203.0.113.0/25"], false, 30071),
  );
}

describe("iptables rules", () => {
  test("a small cluster's restore input matches the golden file", async () => {
    const s = setup();
    smallCluster(s.cluster);
    await s.sync();
    const restore = s.host.exec.callsTo("iptables-nft-restore").at(-1)!;
    expect(restore.args).toEqual(["-w", "5", "--noflush", "--counters"]);
    expect(restore.stdin).toBe(readFileSync(join(FIXTURES, "small-cluster.rules"), "utf8"));
  });

  test("no Services: only the rules that do not depend on a set's members", () => {
    const text = renderIpvsRules(settings({}));
    const nat = text.slice(0, text.indexOf("*filter"));
    expect(nat.split("\n").filter((l) => l.startsWith("-A"))).toEqual([
      "-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN",
      "-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT",
      "-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ",
      "-A KUBE-POSTROUTING -m mark ! --mark 0x00004000/0x00004000 -j RETURN",
      "-A KUBE-POSTROUTING -j MARK --xor-mark 0x00004000",
      '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE',
      "-A KUBE-MARK-MASQ -j MARK --or-mark 0x00004000",
    ]);
  });

  test("cluster IP masquerading: masqueradeAll, a local-traffic detector, or VIP-sourced traffic", () => {
    const rule = (extra: Partial<IpvsRuleSettings>) =>
      renderIpvsRules(settings({ nonEmpty: new Set(["clusterIP"]), ...extra }))
        .split("\n")
        .find((l) => l.includes("KUBE-CLUSTER-IP") && l.endsWith("-j KUBE-MARK-MASQ"));
    const head =
      '-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP';
    expect(rule({ masqueradeAll: true })).toBe(`${head} dst,dst -j KUBE-MARK-MASQ`);
    expect(rule({ localDetector: detectLocalByBridgeInterface("cbr0") })).toBe(
      `${head} dst,dst ! -i cbr0 -j KUBE-MARK-MASQ`,
    );
    expect(rule({ masqueradeAll: false })).toBe(`${head} src,dst -j KUBE-MARK-MASQ`);
  });

  test("IPv6: KUBE-6- sets and ::1 as the localhost source", () => {
    const text = renderIpvsRules(
      settings({ family: "IPv6", sets: setCatalog("IPv6"), nonEmpty: new Set(["loadBalancerSourceCIDR"]) }),
    );
    expect(text).toContain("-A KUBE-SERVICES -s ::1/128 -j RETURN");
    expect(text).toContain("--match-set KUBE-6-LOAD-BALANCER-SOURCE-CID dst,dst,src -j RETURN");
    expect(text).toContain("-m conntrack --ctstate NEW -m set --match-set KUBE-6-IPVS-IPS dst -j REJECT");
    expect(text).not.toContain("--match-set KUBE-CLUSTER-IP");
  });

  test("a mark bit other than 14 changes every mark", () => {
    const text = renderIpvsRules(settings({ mark: "0x00000010" }));
    expect(text).toContain("-A KUBE-MARK-MASQ -j MARK --or-mark 0x00000010");
    expect(text).toContain("-m mark --mark 0x00000010/0x00000010 -j ACCEPT");
  });
});

function settings(extra: Partial<IpvsRuleSettings>): IpvsRuleSettings {
  return {
    family: "IPv4",
    sets: setCatalog("IPv4"),
    nonEmpty: new Set(),
    mark: "0x00004000",
    masqueradeAll: false,
    localDetector: noOpLocalDetector,
    randomFully: false,
    noNodeAccessRules: [],
    ...extra,
  };
}
